/**
 * The embedded store's SQL for jobs: creation with its quota and Idempotency-Key, lists, guarded
 * transitions, holds, claims and leases, named after the store method that runs it, as in
 * ../../postgres/queries/ under the same file name. Columns are aliased to the camelCase row types
 * of ../../store.ts so rows need little mapping.
 */
import { creationListStart } from '../../job-rules.js';
import { AWAITING_REPORT, JOB_STATUSES, listedByCreation, type JobListParams } from '../../job-store.js';
import { limitBy } from './bound-parameters.js';

/** A job's columns as JobRow's fields; `t` qualifies them where a statement joins another table. */
export const jobColumns = (t?: string) => {
  const c = t ? `${t}.` : '';
  return `${c}seq, ${c}id, ${c}project_id AS projectId, ${c}status, ${c}payload, ${c}scheduled_for AS scheduledFor, ${c}run_at AS runAt,
  ${c}queued_at AS queuedAt, ${c}max_retries AS maxRetries, ${c}attempt_count AS attemptCount,
  ${c}round_start_attempt_count AS roundStartAttemptCount, ${c}last_error AS lastError, ${c}created_at AS createdAt,
  ${c}updated_at AS updatedAt, ${c}completed_at AS completedAt, ${c}failed_at AS failedAt, ${c}cancelled_at AS cancelledAt,
  ${c}schedule_id AS scheduleId, ${c}traceparent, ${c}tracestate, ${c}tags, ${c}concurrency_key AS concurrencyKey`;
};
const JOB_COLUMNS = jobColumns();
/**
 * Stopped projects: paused (SPEC section 10) or held for a failing receiver (SPEC section 13), read
 * through the partial index projects_stopped. Nothing of theirs is claimed or started.
 */
const STOPPED_PROJECTS = 'SELECT id FROM projects WHERE paused = 1 OR held_since IS NOT NULL';
/** Whether the job's project is stopped, 0 or 1 (a job entering QUEUED takes it as on_hold). */
const PROJECT_STOPPED = '(SELECT paused = 1 OR held_since IS NOT NULL FROM projects WHERE projects.id = jobs.project_id)';
/** Projects a receiver's Retry-After holds back at @now (SPEC section 11), read through projects_backoff. */
const BACKED_OFF_PROJECTS = 'SELECT id FROM projects WHERE backoff_until > @now';
/** A job entering QUEUED is held while its project is paused or held (0007_operator_controls.sql, 0017_receiver_health.sql). */
export const HELD_IF_STOPPED = `on_hold = ${PROJECT_STOPPED}`;
/**
 * A schedule's fire (schedule_id, schedule_fire_at) already created elsewhere is left as it is. A
 * job with tags is inserted by the same statement with its tags column (jobInsert), then its
 * job_tags rows (JobTagsInsert): a job without tags binds and writes nothing for them.
 */
const jobInsert = (tagged: boolean) => `INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries,
  created_at, updated_at, schedule_id, schedule_fire_at, on_hold, traceparent, tracestate${tagged ? ', tags' : ''}) VALUES (@id, @projectId, 'QUEUED', @payload,
  @scheduledFor, @runAt, @now, @maxRetries, @now, @now, @scheduleId, @scheduleFireAt, @onHold, @traceparent, @tracestate${tagged ? ', @tags' : ''}) ON CONFLICT DO NOTHING`;
export const JobInsert = jobInsert(false);
export const JobInsertTagged = jobInsert(true);
/**
 * A job due at once, created with its first attempt STARTED by the instance that accepted it
 * (JobCreateParams.startDueNow): one insert instead of an insert, a claim and a start.
 */
const jobInsertStarted = (tagged: boolean) => `INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries,
  attempt_count, lease_owner, lease_expires_at, lease_attempt_id, created_at, updated_at, schedule_id, schedule_fire_at, traceparent, tracestate${tagged ? ', tags' : ''})
  VALUES (@id, @projectId, 'STARTED', @payload, @scheduledFor, @runAt, @now, @maxRetries, 1, @workerId, @leaseExpiresAt, @attemptId, @now, @now,
  @scheduleId, @scheduleFireAt, @traceparent, @tracestate${tagged ? ', @tags' : ''}) ON CONFLICT DO NOTHING`;
export const JobInsertStarted = jobInsertStarted(false);
export const JobInsertStartedTagged = jobInsertStarted(true);
/** The tag lookup's rows of a job just inserted (seq): one per entry of its tags (0015_tags.sql). */
export const JobTagsInsert = `INSERT INTO job_tags (project_id, key, value, job_seq)
  SELECT @projectId, key, value, @seq FROM json_each(@tags)`;
/**
 * A keyed job's key and its order (its due time), set just after its insert (one insert statement
 * for jobs with a key or without): the trigger of 0016_concurrency_keys.sql then sets its key's turn.
 */
export const JobConcurrencyKeySet = 'UPDATE jobs SET concurrency_key = @key, key_order_at = run_at WHERE seq = @seq';
/**
 * Debounce (SPEC section 15): the open job of a debounceKey (QUEUED, never attempted; jobs_debounce),
 * a dispatch it absorbs, and a new job's key and deadline, set just after its insert.
 */
export const JobDebounceOpenGet = `SELECT seq, tags FROM jobs INDEXED BY jobs_debounce WHERE project_id = @projectId AND debounce_key = @key
  AND debounce_key IS NOT NULL AND status = 'QUEUED' AND attempt_count = 0 LIMIT 1`;
export const JobDebounceAbsorb = `UPDATE jobs SET payload = @payload, tags = CASE WHEN @tagsGiven THEN @tags ELSE tags END,
  max_retries = CASE WHEN @maxRetriesGiven THEN @maxRetries ELSE max_retries END,
  run_at = MIN(@runAt, COALESCE(debounce_deadline, @runAt)), debounced_count = debounced_count + 1, updated_at = @now
  WHERE seq = @seq RETURNING id, scheduled_for AS scheduledFor, max_retries AS maxRetries, run_at AS runAt, debounced_count AS debouncedCount`;
export const JobDebounceSet = 'UPDATE jobs SET debounce_key = @key, debounce_deadline = @deadline WHERE seq = @seq';
/** A job's rows of the tag lookup for its tags `@tags` (as stored), before they are replaced. */
export const JobTagsDelete = `DELETE FROM job_tags WHERE project_id = @projectId AND job_seq = @seq
  AND (key, value) IN (SELECT key, value FROM json_each(@tags))`;
export const JobGet = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ? AND project_id = ?`;
export const JobStatusGet = 'SELECT status FROM jobs WHERE id = ? AND project_id = ?';
/**
 * A project's jobs of every status, newest first: one arm per status through jobs_project_status,
 * merged by seq (SQLite's MERGE (UNION ALL) reads each arm only as far as the limit needs), so no
 * index on (project_id, seq) has to be kept for every job (38 bytes a job, and a page written per
 * commit). INDEXED BY because, with statistics saying a status is empty, the planner may pick a
 * walk of the whole table for its arm.
 */
export const JobList = `${JOB_STATUSES.map(
  (status) =>
    `SELECT ${JOB_COLUMNS} FROM jobs INDEXED BY jobs_project_status WHERE project_id = @projectId AND status = '${status}' AND seq < @beforeSeq`,
).join('\n  UNION ALL ')}\n  ORDER BY seq DESC ${limitBy('@limit')}`;
export const JobListByStatus = `SELECT ${JOB_COLUMNS} FROM jobs INDEXED BY jobs_project_status WHERE project_id = @projectId AND status = @status
  AND seq < @beforeSeq ORDER BY seq DESC ${limitBy('@limit')}`;
export const JobCancelIfQueued = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = @now, updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRescheduleIfQueued = `UPDATE jobs SET scheduled_for = @scheduledFor,
  run_at = MAX(COALESCE(@scheduledFor, queued_at), queued_at), updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRetryIfFailed = `UPDATE jobs SET status = 'QUEUED', run_at = @now, queued_at = @now, ${HELD_IF_STOPPED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'FAILED' RETURNING ${JOB_COLUMNS}`;
/**
 * The subquery reads only the partial index jobs_due, so jobs waiting far ahead cost the claim
 * nothing. A paused project's due jobs are stepped over: they wait, QUEUED, for its resume.
 */
/**
 * How many of a project's jobs one worker holds at most: claimLimit of src/delivery/capacity-rules.ts,
 * from the numbers of @aheadFactor, @share and @rateWindowsPerSecond (JobClaimParams.claimRule).
 * `p` is the project's row; ceil is written out (SQLite may be built without math functions).
 */
const RATE_WINDOW = 'p.delivery_rate_per_second * 1.0 / @rateWindowsPerSecond';
/** projectSlots of capacity-rules.ts: the attempts of the project that may run at once in one worker. */
const PROJECT_SLOTS = 'MIN(p.delivery_concurrency, @share)';
const CLAIM_LIMIT = `MIN(@aheadFactor * ${PROJECT_SLOTS}, @share,
  CASE WHEN p.delivery_rate_per_second IS NULL THEN @share
    ELSE MAX(1, CAST(${RATE_WINDOW} AS INTEGER) + (${RATE_WINDOW} > CAST(${RATE_WINDOW} AS INTEGER))) END)`;
/**
 * The earliest due jobs, at most @limit, and of each project no more than its claim limit less what
 * the worker holds already (@heldByProject, a JSON object of counts): jobs beyond a project's room
 * stay QUEUED, cancellable, instead of waiting claimed for a slot. Of each project the first
 * @startable ones due by @now (a JSON object of counts; none for a project not in it) are claimed
 * with their attempt STARTED at once, its id @attemptPrefix and the job's seq; the writer records
 * those attempts (job-writes.ts, jobClaimDue). Never more than the project's slots as its row has
 * them now less what the worker holds: @startable was reckoned from settings the worker loaded
 * earlier, and a lowered deliveryConcurrency must hold from its answer on.
 */
export const JobClaimDue = `UPDATE jobs SET status = CASE WHEN picked.starts THEN 'STARTED' ELSE 'DISPATCHED' END,
  attempt_count = jobs.attempt_count + picked.starts,
  lease_attempt_id = CASE WHEN picked.starts THEN @attemptPrefix || jobs.seq END,
  lease_owner = @workerId, lease_expires_at = @now + @leaseExtraMs + picked.timeout_ms, updated_at = @now
  FROM (
    SELECT ranked.seq AS picked_seq, p.delivery_timeout_ms AS timeout_ms,
      (ranked.run_at <= @now AND ranked.place <= MIN(COALESCE(json_extract(@startable, '$."' || ranked.project_id || '"'), 0),
        ${PROJECT_SLOTS} - COALESCE(json_extract(@heldByProject, '$."' || ranked.project_id || '"'), 0))) AS starts
    FROM (
      SELECT seq, project_id, run_at, row_number() OVER (PARTITION BY project_id ORDER BY run_at, seq) AS place FROM (
        SELECT seq, project_id, run_at FROM jobs WHERE status = 'QUEUED' AND on_hold = 0 AND key_held = 0 AND run_at <= @dueBy
          AND project_id NOT IN (SELECT value FROM json_each(@excludeProjectIds)) AND project_id NOT IN (${STOPPED_PROJECTS})
          AND project_id NOT IN (${BACKED_OFF_PROJECTS})
        ORDER BY run_at, seq ${limitBy('@limit')})
    ) AS ranked JOIN projects p ON p.id = ranked.project_id
    WHERE ranked.place <= ${CLAIM_LIMIT} - COALESCE(json_extract(@heldByProject, '$."' || ranked.project_id || '"'), 0)
  ) AS picked
  WHERE jobs.seq = picked.picked_seq
  RETURNING ${JOB_COLUMNS}, lease_expires_at AS leaseExpiresAt, lease_attempt_id AS startedAttemptId`;
export const JobNextDueAt = `SELECT MIN(run_at) AS runAt FROM jobs WHERE status = 'QUEUED' AND on_hold = 0 AND key_held = 0 AND run_at > @after`;
/**
 * Idempotent for one attempt: started again with the same attempt id, it counts nothing twice.
 * A job of a paused or backed-off project is not started (JobReleaseHeldBack gives it back).
 */
export const JobStart = `UPDATE jobs SET status = 'STARTED', attempt_count = attempt_count + (status = 'DISPATCHED'),
  lease_attempt_id = @attemptId, lease_expires_at = @leaseExpiresAt, updated_at = @now
  WHERE id = @jobId AND lease_owner = @workerId AND (status = 'DISPATCHED' OR (status = 'STARTED' AND lease_attempt_id = @attemptId))
    -- Asked again for a started attempt, the answer stays the same, paused or not.
    AND (status = 'STARTED' OR (project_id NOT IN (${STOPPED_PROJECTS}) AND project_id NOT IN (${BACKED_OFF_PROJECTS})))
  RETURNING attempt_count - round_start_attempt_count AS attemptNumber, project_id AS projectId, run_at AS runAt`;
/**
 * A job claimed before its project was paused (or backed off) and not yet sent: QUEUED again as
 * it was, due when it was; held if paused.
 */
export const JobReleaseHeldBack = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_STOPPED}, lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
  WHERE id = @jobId AND lease_owner = @workerId AND status = 'DISPATCHED'
    AND (project_id IN (${STOPPED_PROJECTS}) OR project_id IN (${BACKED_OFF_PROJECTS}))`;
/** Guarded on the lease and the attempt: a worker whose lease was taken over changes nothing. */
export const JobFinishAttempt = `UPDATE jobs SET status = @status,
  run_at = COALESCE(@runAt, run_at), queued_at = CASE WHEN @status = 'QUEUED' THEN @now ELSE queued_at END,
  on_hold = CASE WHEN @status = 'QUEUED' THEN ${PROJECT_STOPPED} ELSE on_hold END,
  round_start_attempt_count = round_start_attempt_count + @releasedAttempts,
  lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
  last_error = COALESCE(@lastError, last_error), updated_at = @now,
  completed_at = CASE WHEN @status = 'COMPLETED' THEN @now ELSE completed_at END,
  failed_at = CASE WHEN @status = 'FAILED' THEN @now ELSE failed_at END
  WHERE id = @jobId AND status = 'STARTED' AND lease_owner = @workerId AND lease_attempt_id = @attemptId
  RETURNING project_id AS projectId`;
/** A 202 to a project with asyncCompletion (SPEC section 11): the worker hands the lease to the report's deadline. */
export const JobAccept = `UPDATE jobs SET lease_owner = '${AWAITING_REPORT}', lease_expires_at = @deadline
  WHERE id = @jobId AND status = 'STARTED' AND lease_owner = @workerId AND lease_attempt_id = @attemptId`;
/** The attempt still waits for its report, and its deadline is after @now. */
const AWAITING_REPORT_GUARD = `id = @jobId AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
  AND lease_attempt_id = @attemptId AND lease_expires_at > @now`;
export const JobAwaitingReportCheck = `SELECT 1 AS waiting FROM jobs WHERE ${AWAITING_REPORT_GUARD}`;
/** A "running" report: the deadline moves (the job itself does not change, so neither does its updatedAt). */
export const JobReportRunning = `UPDATE jobs SET lease_expires_at = @deadline WHERE ${AWAITING_REPORT_GUARD}`;
export const JobLeaseRenew = `UPDATE jobs SET lease_expires_at = @leaseExpiresAt
  WHERE id = @jobId AND lease_owner = @workerId AND status IN ('DISPATCHED', 'STARTED')`;
/** A lease waiting for a receiver's report is no dead worker's: it expires at its deadline, never earlier. */
const EXPIRED_LEASE = `lease_expires_at < @expiredBefore AND (lease_owner <> '${AWAITING_REPORT}' OR lease_expires_at < @now)`;
export const JobListExpiredLeases = `SELECT ${JOB_COLUMNS}, lease_owner AS leaseOwner, lease_attempt_id AS leaseAttemptId FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND ${EXPIRED_LEASE} ORDER BY lease_expires_at ${limitBy('@limit')}`;
/** The started attempt's lease is still the one the rescuer read as expired (not renewed or reported on since). */
export const JobLeaseExpiredCheck = `SELECT 1 AS expired FROM jobs WHERE id = @jobId AND status = 'STARTED'
  AND lease_attempt_id = @attemptId AND ${EXPIRED_LEASE}`;
/**
 * A claim never started (its worker died, or is stopping): QUEUED again due when it was, and in its
 * QUEUED state as before: being claimed and given back is not a new due time (SPEC section 2).
 */
export const JobRequeueExpired = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_STOPPED}, lease_owner = NULL,
  lease_expires_at = NULL, lease_attempt_id = NULL, updated_at = @now
  WHERE id = @jobId AND status = 'DISPATCHED' AND lease_expires_at < @expiredBefore`;
export const JobReleaseDispatched = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_STOPPED}, lease_owner = NULL,
  lease_expires_at = NULL, updated_at = @now WHERE lease_owner = @workerId AND status = 'DISPATCHED'`;
/** The `status IN (…)` repeats the partial index's condition: without it SQLite scans every job. */
export const JobListDispatchedTo = `SELECT ${JOB_COLUMNS}, lease_expires_at AS leaseExpiresAt FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND status = 'DISPATCHED' AND lease_owner = ?`;
export const JobCountByStatus = 'SELECT status, count(*) AS n FROM jobs GROUP BY status';
/** Keys with a job waiting for their turn: read from jobs_key (keyed jobs only), each key's QUEUED jobs until one is held. */
export const JobCountKeysWaiting = `SELECT count(*) AS n FROM (SELECT DISTINCT project_id, concurrency_key FROM jobs INDEXED BY jobs_key
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' AND key_held = 1)`;
/** A project's busiest keys (JobStore.jobBusiestKeys): its unfinished keyed jobs, all in jobs_key, grouped by key. */
export const JobBusiestKeys = `SELECT concurrency_key AS key, sum(status = 'QUEUED') AS waiting, sum(status <> 'QUEUED') AS running
  FROM jobs INDEXED BY jobs_key WHERE project_id = @projectId AND concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED')
  GROUP BY concurrency_key ORDER BY waiting DESC, running DESC, key ${limitBy('@limit')}`;
export const JobGetById = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`;
export const IdempotencyKeyGet = `SELECT request_hash AS requestHash, response_status AS statusCode, response_body AS body,
  created_at AS createdAt FROM idempotency_keys WHERE project_id = ? AND endpoint = ? AND key = ?`;
/** An expired key (older than the replay window) is replaced in place. */
export const IdempotencyKeyUpsert = `INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status,
  response_body, created_at) VALUES (@projectId, @endpoint, @key, @requestHash, @statusCode, @body, @now)
  ON CONFLICT (project_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash,
  response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`;
/**
 * A list by creation window or by schedule (job-store.ts, listedByCreation), newest first by
 * (created_at, seq), read in `index`, keyed (`lead`, status, created_at, seq), from
 * (@beforeCreatedAt, @beforeSeq) (job-rules.ts, creationListStart) down to @createdFrom: per
 * status two ranges, the rest of that millisecond (created_at equal, seq below) and the
 * milliseconds before it, merged as JobList's ranges are, so that the read starts at the window's
 * end and stops at the limit however old the window (a read by seq would step over every newer
 * job first). Two ranges because SQLite seeks a row value (created_at, seq) < (?, ?) on created_at
 * alone when seq is the rowid, and would step over every other job of that millisecond.
 */
function newestCreatedFirst(index: string, lead: string, statuses: readonly string[]): string {
  const from = `SELECT ${JOB_COLUMNS} FROM jobs INDEXED BY ${index} WHERE ${lead}`;
  const ranges = statuses.flatMap((status) => [
    `${from} AND status = ${status} AND created_at = @beforeCreatedAt AND seq < @beforeSeq AND created_at >= @createdFrom`,
    `${from} AND status = ${status} AND created_at >= @createdFrom AND created_at < @beforeCreatedAt`,
  ]);
  return `${ranges.join('\n  UNION ALL ')}\n  ORDER BY createdAt DESC, seq DESC ${limitBy('@limit')}`;
}
const EVERY_STATUS = JOB_STATUSES.map((status) => `'${status}'`);
const OF_PROJECT = 'project_id = @projectId';
/** One schedule's jobs (`?scheduleId=`); a schedule of another project lists nothing. */
const OF_SCHEDULE = 'schedule_id = @scheduleId AND project_id = @projectId';
export const JobListCreatedBetween = newestCreatedFirst('jobs_project_created', OF_PROJECT, EVERY_STATUS);
export const JobListByStatusCreatedBetween = newestCreatedFirst('jobs_project_created', OF_PROJECT, ['@status']);
export const JobListBySchedule = newestCreatedFirst('jobs_schedule', OF_SCHEDULE, EVERY_STATUS);
export const JobListByScheduleStatus = newestCreatedFirst('jobs_schedule', OF_SCHEDULE, ['@status']);
/** The statement of a page of the jobs list and its parameters (the store runs it; the query-plan tests explain it). */
export function jobListStatement(params: JobListParams): [sql: string, values: Record<string, unknown>] {
  const status = params.status === null ? {} : { status: params.status };
  if (listedByCreation(params)) {
    const start = creationListStart(params);
    const values = { projectId: params.projectId, limit: params.limit, createdFrom: params.createdFrom ?? 0, beforeCreatedAt: start.createdAt, beforeSeq: start.seq, ...status };
    if (params.scheduleId != null) return [params.status === null ? JobListBySchedule : JobListByScheduleStatus, { ...values, scheduleId: params.scheduleId }];
    return [params.status === null ? JobListCreatedBetween : JobListByStatusCreatedBetween, values];
  }
  const values = { projectId: params.projectId, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit: params.limit, ...status };
  return [params.status === null ? JobList : JobListByStatus, values];
}
// Pause and resume (SPEC section 10), hold and recovery (SPEC section 13): a stopped project's QUEUED
// jobs held, a project no longer stopped has its released.
/** The end of a paused project's next batch of QUEUED jobs, by seq from @afterSeq (jobs_project_status). */
export const JobHoldBatchEnd = `SELECT max(seq) AS lastSeq, count(*) AS n FROM (SELECT seq FROM jobs INDEXED BY jobs_project_status
  WHERE project_id = @projectId AND status = 'QUEUED' AND seq > @afterSeq ORDER BY seq ${limitBy('@limit')})`;
/** Holds that batch, unless the project was resumed meanwhile. */
export const JobHoldRange = `UPDATE jobs SET on_hold = 1 WHERE project_id = @projectId AND status = 'QUEUED'
  AND seq > @afterSeq AND seq <= @lastSeq AND on_hold = 0 AND (SELECT paused = 1 OR held_since IS NOT NULL FROM projects WHERE id = @projectId) = 1`;
/** A batch of a resumed project's held jobs, earliest due first (jobs_held). */
export const JobReleaseHeldBatch = `UPDATE jobs SET on_hold = 0 WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_held
  WHERE project_id = @projectId AND status = 'QUEUED' AND on_hold = 1 ORDER BY run_at, seq ${limitBy('@limit')})
  AND (SELECT paused = 0 AND held_since IS NULL FROM projects WHERE id = @projectId) = 1`;
