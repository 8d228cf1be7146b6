/**
 * The PostgreSQL store's SQL for the one filter of SPEC section 14 (tags, status, schedule,
 * creation and due windows): lists by tag or due window, and the reads and changes of bulk
 * actions, named as in ../../sqlite/queries/ under the same file name. Each read is written to go
 * by one index (job-rules.ts, filterDriver) in its order, with a LIMIT, so that it stops after the
 * matching jobs; the filter's other fields are checked on each job it reads (REST_OF_FILTER).
 * Written with named parameters (named-params.ts).
 */
import { bulkReadStart, filterDriver, filterParameters, type FilterDriver } from '../../job-rules.js';
import { bulkActionStatus, type JobBulkAction, type JobBulkParams, type JobListParams, type JobTagPair } from '../../job-store.js';
import { HELD_IF_STOPPED, jobColumns } from './jobs.js';
import { named, type NamedStatement } from './named-params.js';

/**
 * Every condition of a filter, on `j`, with a null argument for a field not given (a custom plan
 * folds those away). :moreTags is an object of the tags after the one the read goes by, checked
 * against the job's own tags column (which holds exactly the tags its job_tags rows do): no
 * further read, and nothing for the planner to turn into a hash of every tag of the project. A
 * reschedule does not match a job already due where it would put it (job-store.ts,
 * JobBulkAction), so that repeating one moves on to the rest.
 */
const REST_OF_FILTER = `j.project_id = :projectId AND (:status::text IS NULL OR j.status = :status::text)
  AND (:scheduleId::text IS NULL OR j.schedule_id = :scheduleId::text)
  AND (:concurrencyKey::text IS NULL OR j.concurrency_key = :concurrencyKey::text)
  AND j.created_at >= :createdFrom::bigint AND j.created_at < :createdBefore::bigint
  AND (:dueFrom::bigint IS NULL OR (j.status = 'QUEUED' AND j.run_at >= :dueFrom::bigint))
  AND (:dueBefore::bigint IS NULL OR (j.status = 'QUEUED' AND j.run_at < :dueBefore::bigint))
  AND (:failedFrom::bigint IS NULL OR j.failed_at >= :failedFrom::bigint) AND (:failedBefore::bigint IS NULL OR j.failed_at < :failedBefore::bigint)
  AND NOT (:reschedule::boolean AND j.scheduled_for IS NOT DISTINCT FROM :scheduledFor::bigint
    AND j.run_at = GREATEST(COALESCE(:scheduledFor::bigint, j.queued_at), j.queued_at))
  AND (:moreTags::jsonb IS NULL OR j.tags::jsonb @> :moreTags::jsonb)`;

/**
 * The tag a read goes by: its rows of job_tags (project_id, key, value, job_seq), in seq order,
 * each joined to its job by its key. The job is a LATERAL subquery kept apart (OFFSET 0), so that
 * the join is always this loop: planned as a plain join, a tag the statistics take for a common
 * one was merged against a walk of the jobs' primary key (98,000 rows read for 50 jobs).
 */
const BY_TAG = `FROM job_tags d CROSS JOIN LATERAL (SELECT * FROM jobs WHERE jobs.seq = d.job_seq OFFSET 0) AS j
  WHERE d.project_id = :projectId AND d.key = :tagKey::text AND d.value = :tagValue::text`;

/**
 * A bulk action's next jobs after the cursor, oldest first in its driver's order, as (seq, key):
 * key is what the cursor goes on from (job-rules.ts, bulkReadStart). :readStatus is the action's
 * state, which every driver but a tag's reads by.
 */
function bulkRead(driver: FilterDriver): string {
  const byInstant = (column: string) =>
    `j.${column} >= :keyFrom::bigint AND (j.${column} > :afterKey::bigint OR j.seq > :afterSeq::bigint) AND ${REST_OF_FILTER}
  ORDER BY j.${column}, j.seq LIMIT :limit::int`;
  switch (driver) {
    case 'tag':
      return `SELECT j.seq, j.seq AS key ${BY_TAG} AND d.job_seq > :afterSeq::bigint AND j.status = :readStatus::text AND ${REST_OF_FILTER}
  ORDER BY d.job_seq LIMIT :limit::int`;
    case 'key':
      return `SELECT j.seq, j.seq AS key FROM jobs j WHERE j.project_id = :projectId AND j.concurrency_key = :concurrencyKey::text
  AND j.seq > :afterSeq::bigint AND j.status = :readStatus::text AND ${REST_OF_FILTER} ORDER BY j.seq LIMIT :limit::int`;
    case 'failed':
      return `SELECT j.seq, j.failed_at AS key FROM jobs j WHERE j.project_id = :projectId AND j.status = 'FAILED' AND ${byInstant('failed_at')}`;
    case 'schedule':
      return `SELECT j.seq, j.created_at AS key FROM jobs j WHERE j.schedule_id = :scheduleId::text AND j.status = :readStatus::text AND ${byInstant('created_at')}`;
    case 'created':
      return `SELECT j.seq, j.created_at AS key FROM jobs j WHERE j.project_id = :projectId AND j.status = :readStatus::text AND ${byInstant('created_at')}`;
    case 'status':
      return `SELECT j.seq, j.seq AS key FROM jobs j WHERE j.project_id = :projectId AND j.status = :readStatus::text
  AND j.seq > :afterSeq::bigint AND ${REST_OF_FILTER} ORDER BY j.seq LIMIT :limit::int`;
  }
}

/** What each action sets, exactly as its single transition (queries/jobs.ts: JobCancelIfQueued, JobRescheduleIfQueued, JobRetryIfFailed). */
const CHANGE: Record<JobBulkAction['kind'], string> = {
  cancel: `status = 'CANCELLED', cancelled_at = :now::bigint, updated_at = :now::bigint`,
  reschedule: `scheduled_for = :scheduledFor::bigint, run_at = GREATEST(COALESCE(:scheduledFor::bigint, queued_at), queued_at), updated_at = :now::bigint`,
  retry: `status = 'QUEUED', run_at = :now::bigint, queued_at = :now::bigint, ${HELD_IF_STOPPED}, round_start_attempt_count = attempt_count,
    failed_at = NULL, updated_at = :now::bigint`,
};

/**
 * One transaction of a bulk action, in one statement: the jobs read (picked, without locks), then
 * each locked in seq order and changed only if still in the action's state. FOR UPDATE waits for a
 * claim of the same row (one statement, short) and then sees what it left: a job it claimed is
 * matched and not changed; a claim that comes later skips the locked row (SKIP LOCKED) and finds it
 * changed. So exactly one of the two wins, as with the single transitions. Locks are taken in seq
 * order, so two bulk actions on the same jobs never deadlock.
 */
function bulkAct(driver: FilterDriver, kind: JobBulkAction['kind']): string {
  return `WITH picked AS MATERIALIZED (
    ${bulkRead(driver)}
  ), locked AS (
    SELECT j.seq FROM jobs j WHERE j.seq IN (SELECT seq FROM picked) AND j.project_id = :projectId AND j.status = :readStatus::text
      AND NOT (:reschedule::boolean AND j.scheduled_for IS NOT DISTINCT FROM :scheduledFor::bigint
        AND j.run_at = GREATEST(COALESCE(:scheduledFor::bigint, j.queued_at), j.queued_at))
    ORDER BY j.seq FOR UPDATE
  ), changed AS (
    UPDATE jobs SET ${CHANGE[kind]} FROM locked WHERE jobs.seq = locked.seq RETURNING jobs.run_at
  ), last AS (
    SELECT key, seq FROM picked ORDER BY key DESC, seq DESC LIMIT 1
  )
  SELECT (SELECT count(*)::int FROM picked) AS matched, (SELECT count(*)::int FROM changed) AS changed,
    (SELECT min(run_at) FROM changed) AS "earliestRunAt", (SELECT key FROM last) AS "lastKey", (SELECT seq FROM last) AS "lastSeq"`;
}

const DRIVERS: FilterDriver[] = ['tag', 'key', 'failed', 'schedule', 'created', 'status'];
const KINDS: JobBulkAction['kind'][] = ['cancel', 'reschedule', 'retry'];
export const JobBulkAct = Object.fromEntries(
  DRIVERS.map((driver) => [driver, Object.fromEntries(KINDS.map((kind) => [kind, named(bulkAct(driver, kind))]))]),
) as Record<FilterDriver, Record<JobBulkAction['kind'], NamedStatement>>;
/** How many a bulk action would match, counted only as far as :limit. */
export const JobBulkCount = Object.fromEntries(
  DRIVERS.map((driver) => [driver, named(`SELECT count(*)::int AS n FROM (${bulkRead(driver)}) AS r`)]),
) as Record<FilterDriver, NamedStatement>;

/**
 * A page of a list by tag or due window (job-store.ts, listedByFilter), newest first by seq below
 * :beforeSeq: by the tag's rows, or without a tag the project's QUEUED jobs (a due window matches
 * only those) by jobs_project_status.
 */
export const JobListByTag = named(`SELECT ${jobColumns('j')} ${BY_TAG} AND d.job_seq < :beforeSeq::bigint AND ${REST_OF_FILTER}
  ORDER BY d.job_seq DESC LIMIT :limit::int`);
export const JobListDue = named(`SELECT ${jobColumns('j')} FROM jobs j WHERE j.project_id = :projectId AND j.status = 'QUEUED'
  AND j.seq < :beforeSeq::bigint AND ${REST_OF_FILTER} ORDER BY j.seq DESC LIMIT :limit::int`);
/** A page of a concurrencyKey's jobs without a tag: the key's jobs of every status (jobs_by_key), by seq. */
export const JobListByKey = named(`SELECT ${jobColumns('j')} FROM jobs j WHERE j.project_id = :projectId
  AND j.concurrency_key = :concurrencyKey::text AND j.seq < :beforeSeq::bigint AND ${REST_OF_FILTER} ORDER BY j.seq DESC LIMIT :limit::int`);

/** How many of each tag's rows ($2, $3: keys and values) the project has, each counted only as far as $4, in the order given. */
export const JobTagCounts = `SELECT (SELECT count(*)::int FROM (SELECT 1 FROM job_tags WHERE project_id = $1 AND key = t.key AND value = t.value LIMIT $4) AS r) AS n
  FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(key, value, i) ORDER BY t.i`;

/** REST_OF_FILTER's arguments for a filter whose tags are `tags` (the one to read by first). */
function filterValues(...filter: Parameters<typeof filterParameters>) {
  const values = filterParameters(...filter);
  return { ...values, moreTags: values.moreTags.length === 0 ? null : JSON.stringify(Object.fromEntries(values.moreTags)) };
}

/** A bulk read's driver and named arguments (JobBulkAct, JobBulkCount), its tags the rarest first. */
export function bulkReadValues(params: Omit<JobBulkParams, 'now'> & { now?: number }, tags: JobTagPair[]): [driver: FilterDriver, values: Record<string, unknown>] {
  const driver = filterDriver(params.filter);
  const status = bulkActionStatus(params.action);
  const values = {
    ...filterValues(params.filter, status, tags, params.action),
    readStatus: status,
    ...bulkReadStart(params.filter, driver, params.after),
    limit: params.limit,
    now: params.now ?? null,
  };
  return [driver, values];
}

/** The statement of a page of a list by tag or due window and its named arguments (the query-plan tests explain it). */
export function filteredListStatement(params: JobListParams, tags: JobTagPair[]): [statement: NamedStatement, values: Record<string, unknown>] {
  const values = { ...filterValues(params, params.status, tags, null), beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit: params.limit };
  // By the filter's driver (a tag, else a key), else the project's QUEUED jobs (a due window).
  const driver = filterDriver({ ...params, tags });
  return [driver === 'tag' ? JobListByTag : driver === 'key' ? JobListByKey : JobListDue, values];
}

