/**
 * The embedded store's SQL for the one filter of SPEC section 14 (tags, status, schedule, creation
 * and due windows): lists by tag or due window, and the reads and changes of bulk actions, named as
 * in ../../postgres/queries/ under the same file name. Each read is driven by one index (job-rules.ts,
 * filterDriver), named with INDEXED BY so that the planner cannot walk the table instead; the
 * filter's other fields are checked on each job that index yields (REST_OF_FILTER), so a read stops
 * at its limit after the matching jobs, and a tag's read never sees a job without that tag.
 */
import { bulkReadStart, filterDriver, filterParameters, type FilterDriver } from '../../job-rules.js';
import { bulkActionStatus, type JobBulkParams, type JobListParams, type JobTagPair } from '../../job-store.js';
import { HELD_IF_STOPPED, jobColumns } from './jobs.js';
import { limitBy, opaque } from './bound-parameters.js';

/**
 * Every condition of a filter, on `j`, with a null parameter for a field not given: whichever the
 * driving index already applies, checking it again on the row is cheap and keeps one text for all.
 * @moreTags is a JSON object of the tags after the one the read goes by, checked against the job's
 * own tags column (which holds exactly the tags its job_tags rows do): no further read. A
 * reschedule (@reschedule = 1) does not match a job already due where it would put it
 * (job-store.ts, JobBulkAction), so that repeating one moves on to the rest.
 */
const REST_OF_FILTER = `j.project_id = @projectId AND (@status IS NULL OR j.status = @status)
  AND (@scheduleId IS NULL OR j.schedule_id = @scheduleId)
  AND (@concurrencyKey IS NULL OR j.concurrency_key = @concurrencyKey)
  AND j.created_at >= @createdFrom AND j.created_at < @createdBefore
  AND (@dueFrom IS NULL OR (j.status = 'QUEUED' AND j.run_at >= @dueFrom))
  AND (@dueBefore IS NULL OR (j.status = 'QUEUED' AND j.run_at < @dueBefore))
  AND (@failedFrom IS NULL OR j.failed_at >= @failedFrom) AND (@failedBefore IS NULL OR j.failed_at < @failedBefore)
  AND NOT (@reschedule AND j.scheduled_for IS @scheduledFor AND j.run_at = MAX(COALESCE(@scheduledFor, j.queued_at), j.queued_at))
  AND NOT EXISTS (SELECT 1 FROM json_each(@moreTags) AS m WHERE (j.tags ->> m.key) IS NOT m.value)`;

/** The tag a read goes by: its rows of job_tags in seq order, each joined to its job (CROSS JOIN: in that order). */
const BY_TAG = `FROM job_tags d CROSS JOIN jobs j ON j.seq = d.job_seq
  WHERE d.project_id = @projectId AND d.key = @tagKey AND d.value = @tagValue`;

/**
 * A bulk action's next jobs after the cursor, oldest first in its driver's order, as (seq, key):
 * key is what the cursor goes on from (job-rules.ts, bulkReadStart). @readStatus is the action's
 * state, which every driver but a tag's reads by.
 */
function bulkRead(driver: FilterDriver): string {
  switch (driver) {
    case 'tag':
      return `SELECT j.seq AS seq, j.seq AS key ${BY_TAG} AND d.job_seq > @afterSeq AND j.status = ${opaque('@readStatus')} AND ${REST_OF_FILTER}
  ORDER BY d.job_seq ${limitBy('@limit')}`;
    case 'key':
      return `SELECT j.seq AS seq, j.seq AS key FROM jobs j INDEXED BY jobs_by_key WHERE j.project_id = @projectId
  AND j.concurrency_key = @concurrencyKey AND j.seq > @afterSeq AND j.status = @readStatus AND ${REST_OF_FILTER} ORDER BY j.seq ${limitBy('@limit')}`;
    case 'failed':
      return `SELECT j.seq AS seq, j.failed_at AS key FROM jobs j INDEXED BY jobs_failed WHERE j.project_id = @projectId AND j.status = 'FAILED'
  AND j.failed_at >= @keyFrom AND (j.failed_at > @afterKey OR j.seq > @afterSeq) AND ${REST_OF_FILTER} ORDER BY j.failed_at, j.seq ${limitBy('@limit')}`;
    case 'schedule':
    case 'created':
      return `SELECT j.seq AS seq, j.created_at AS key FROM jobs j INDEXED BY ${driver === 'schedule' ? 'jobs_schedule' : 'jobs_project_created'}
  WHERE ${driver === 'schedule' ? 'j.schedule_id = @scheduleId' : 'j.project_id = @projectId'} AND j.status = @readStatus
  AND j.created_at >= @keyFrom AND (j.created_at > @afterKey OR j.seq > @afterSeq) AND ${REST_OF_FILTER} ORDER BY j.created_at, j.seq ${limitBy('@limit')}`;
    case 'status':
      return `SELECT j.seq AS seq, j.seq AS key FROM jobs j INDEXED BY jobs_project_status WHERE j.project_id = @projectId AND j.status = @readStatus
  AND j.seq > @afterSeq AND ${REST_OF_FILTER} ORDER BY j.seq ${limitBy('@limit')}`;
  }
}

const DRIVERS: FilterDriver[] = ['tag', 'key', 'failed', 'schedule', 'created', 'status'];
export const JobBulkRead = Object.fromEntries(DRIVERS.map((driver) => [driver, bulkRead(driver)])) as Record<FilterDriver, string>;
/** How many a bulk action would match, counted only as far as @limit. */
export const JobBulkCount = Object.fromEntries(DRIVERS.map((driver) => [driver, `SELECT count(*) AS n FROM (${bulkRead(driver)})`])) as Record<FilterDriver, string>;

/**
 * A page of a list by tag or due window (job-store.ts, listedByFilter), newest first by seq below
 * @beforeSeq: by the tag's rows, or without a tag the project's QUEUED jobs (a due window matches
 * only those) by jobs_project_status.
 */
export const JobListByTag = `SELECT ${jobColumns('j')} ${BY_TAG} AND d.job_seq < @beforeSeq AND ${REST_OF_FILTER}
  ORDER BY d.job_seq DESC ${limitBy('@limit')}`;
export const JobListDue = `SELECT ${jobColumns('j')} FROM jobs j INDEXED BY jobs_project_status WHERE j.project_id = @projectId
  AND j.status = 'QUEUED' AND j.seq < @beforeSeq AND ${REST_OF_FILTER} ORDER BY j.seq DESC ${limitBy('@limit')}`;
/** A page of a concurrencyKey's jobs without a tag: the key's jobs of every status in jobs_by_key, by seq. */
export const JobListByKey = `SELECT ${jobColumns('j')} FROM jobs j INDEXED BY jobs_by_key WHERE j.project_id = @projectId
  AND j.concurrency_key = @concurrencyKey AND j.seq < @beforeSeq AND ${REST_OF_FILTER} ORDER BY j.seq DESC ${limitBy('@limit')}`;

/** How many of a tag's rows the project has, counted only as far as @bound (the rarest tag drives a read). */
export const JobTagCount = `SELECT count(*) AS n FROM (SELECT 1 FROM job_tags WHERE project_id = @projectId AND key = @key AND value = @value ${limitBy('@bound')})`;

/**
 * A bulk action's change of the jobs it read (@seqs, a JSON array), each guarded on the action's
 * state exactly as the single transition (JobCancelIfQueued, JobRescheduleIfQueued,
 * JobRetryIfFailed): the writer runs the read and this alone, so none leaves that state between.
 */
const OF_READ = `seq IN (SELECT value FROM json_each(@seqs)) AND project_id = @projectId`;
export const JobBulkCancel = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = @now, updated_at = @now
  WHERE ${OF_READ} AND status = 'QUEUED' RETURNING run_at AS runAt`;
export const JobBulkReschedule = `UPDATE jobs SET scheduled_for = @scheduledFor,
  run_at = MAX(COALESCE(@scheduledFor, queued_at), queued_at), updated_at = @now
  WHERE ${OF_READ} AND status = 'QUEUED' RETURNING run_at AS runAt`;
export const JobBulkRetry = `UPDATE jobs SET status = 'QUEUED', run_at = @now, queued_at = @now, ${HELD_IF_STOPPED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = @now
  WHERE ${OF_READ} AND status = 'FAILED' RETURNING run_at AS runAt`;

/** REST_OF_FILTER's parameters for a filter whose tags are `tags` (the one to read by first), and the read's own. */
function filterValues(...filter: Parameters<typeof filterParameters>) {
  const values = filterParameters(...filter);
  return { ...values, reschedule: values.reschedule ? 1 : 0, moreTags: JSON.stringify(Object.fromEntries(values.moreTags)) };
}

/** A bulk read's driver and parameters (JobBulkRead, JobBulkCount), its tags the rarest first. */
export function bulkReadStatement(params: Omit<JobBulkParams, 'now'>, tags: JobTagPair[]): [driver: FilterDriver, values: Record<string, unknown>] {
  const driver = filterDriver(params.filter);
  const status = bulkActionStatus(params.action);
  const values = { ...filterValues(params.filter, status, tags, params.action), readStatus: status, ...bulkReadStart(params.filter, driver, params.after), limit: params.limit };
  return [driver, values];
}

/** The statement of a page of a list by tag or due window and its parameters (the query-plan tests explain it). */
export function filteredListStatement(params: JobListParams, tags: JobTagPair[]): [sql: string, values: Record<string, unknown>] {
  const values = { ...filterValues(params, params.status, tags, null), beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit: params.limit };
  // By the filter's driver (a tag, else a key), else the project's QUEUED jobs (a due window).
  const driver = filterDriver({ ...params, tags });
  return [driver === 'tag' ? JobListByTag : driver === 'key' ? JobListByKey : JobListDue, values];
}
