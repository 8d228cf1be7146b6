/**
 * Every SQL statement of the embedded store, named after the store method that runs it.
 * Columns are aliased to the camelCase row types of store.ts so rows need little mapping.
 */
import { AWAITING_REPORT, JOB_STATUSES, listedByCreation, type JobListParams } from '../store.js';
import { creationListStart } from '../job-rules.js';

const TEAM_COLUMNS = 'id, name, plan, created_at AS createdAt';
const PROJECT_COLUMNS = `id, team_id AS teamId, name, webhook_url AS webhookUrl, retry_max_retries AS retryMaxRetries,
  retry_initial_delay_ms AS retryInitialDelayMs, retry_factor AS retryFactor, retry_max_delay_ms AS retryMaxDelayMs,
  delivery_timeout_ms AS deliveryTimeoutMs, delivery_concurrency AS deliveryConcurrency, accept_any_2xx AS acceptAny2xx,
  retention_days AS retentionDays, paused, events_url AS eventsUrl, events_format AS eventsFormat,
  delivery_rate_per_second AS deliveryRatePerSecond, async_completion AS asyncCompletion,
  async_completion_timeout_ms AS asyncCompletionTimeoutMs, created_at AS createdAt`;
const API_KEY_COLUMNS = `id, project_id AS projectId, name, prefix, created_at AS createdAt, last_used_at AS lastUsedAt,
  revoked_at AS revokedAt`;
const JOB_COLUMNS = `seq, id, project_id AS projectId, status, payload, scheduled_for AS scheduledFor, run_at AS runAt,
  queued_at AS queuedAt, max_retries AS maxRetries, attempt_count AS attemptCount,
  round_start_attempt_count AS roundStartAttemptCount, last_error AS lastError, created_at AS createdAt,
  updated_at AS updatedAt, completed_at AS completedAt, failed_at AS failedAt, cancelled_at AS cancelledAt,
  schedule_id AS scheduleId, traceparent, tracestate`;
const attemptColumns = (t: string) => `${t}.id, ${t}.job_id AS jobId, ${t}.attempt_number AS attemptNumber,
  ${t}.started_at AS startedAt, ${t}.finished_at AS finishedAt, ${t}.outcome, ${t}.status_code AS statusCode,
  ${t}.duration_ms AS durationMs, ${t}.error, ${t}.response_body AS responseBody, ${t}.accepted_at AS acceptedAt,
  ${t}.reported_at AS reportedAt`;

/** Paused projects (SPEC section 10), read through the partial index projects_paused. */
const PAUSED_PROJECTS = 'SELECT id FROM projects WHERE paused = 1';
/** Projects a receiver's Retry-After holds back at @now (SPEC section 11), read through projects_backoff. */
const BACKED_OFF_PROJECTS = 'SELECT id FROM projects WHERE backoff_until > @now';
/** A job entering QUEUED is held while its project is paused (0007_operator_controls.sql). */
const HELD_IF_PAUSED = 'on_hold = (SELECT paused FROM projects WHERE projects.id = jobs.project_id)';

export const SettingGet = 'SELECT value FROM settings WHERE key = ?';
/** A write whose only purpose is to find out whether the disk takes writes again (readiness). */
export const WriteProbe = `INSERT INTO settings (key, value) VALUES ('write_probe_at', @now)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
/** Counts commits that changed keys, projects, teams or secrets, from any process: readers drop their cache when it moves. */
export const CacheEpochBump = `INSERT INTO settings (key, value) VALUES ('cache_epoch', '1')
  ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`;
export const CacheEpochGet = "SELECT value FROM settings WHERE key = 'cache_epoch'";
export const SettingInsertIfAbsent = 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING';

export const TeamInsert = 'INSERT INTO teams (id, name, plan, created_at) VALUES (@id, @name, @plan, @createdAt)';
export const TeamGet = `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = ?`;
export const TeamUpdate = `UPDATE teams SET name = COALESCE(@name, name), plan = COALESCE(@plan, plan) WHERE id = @teamId
  RETURNING ${TEAM_COLUMNS}`;
export const TeamCount = 'SELECT count(*) AS n FROM teams';

export const ProjectInsert = `INSERT INTO projects (id, team_id, name, webhook_url, retry_max_retries, retry_initial_delay_ms,
  retry_factor, retry_max_delay_ms, delivery_timeout_ms, delivery_concurrency, accept_any_2xx, retention_days, paused,
  events_url, events_format, delivery_rate_per_second, async_completion, async_completion_timeout_ms, created_at)
  VALUES (@id, @teamId, @name, @webhookUrl, @retryMaxRetries, @retryInitialDelayMs, @retryFactor, @retryMaxDelayMs,
  @deliveryTimeoutMs, @deliveryConcurrency, @acceptAny2xx, @retentionDays, @paused, @eventsUrl, @eventsFormat, @deliveryRatePerSecond,
  @asyncCompletion, @asyncCompletionTimeoutMs, @createdAt)`;
export const ProjectGet = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ?`;
export const ProjectListByTeam = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE team_id = ? ORDER BY created_at, id`;
export const ProjectUpdate = `UPDATE projects SET name = @name, webhook_url = @webhookUrl, retry_max_retries = @retryMaxRetries,
  retry_initial_delay_ms = @retryInitialDelayMs, retry_factor = @retryFactor, retry_max_delay_ms = @retryMaxDelayMs,
  delivery_timeout_ms = @deliveryTimeoutMs, delivery_concurrency = @deliveryConcurrency, accept_any_2xx = @acceptAny2xx,
  retention_days = @retentionDays, paused = @paused, events_url = @eventsUrl, events_format = @eventsFormat,
  delivery_rate_per_second = @deliveryRatePerSecond, async_completion = @asyncCompletion,
  async_completion_timeout_ms = @asyncCompletionTimeoutMs WHERE id = @id`;

export const ApiKeyInsert = `INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at, last_used_at, revoked_at)
  VALUES (@id, @projectId, @name, @hash, @prefix, @createdAt, @lastUsedAt, @revokedAt)`;
/** One indexed lookup by hash brings the key, its project and its team. */
export const ApiKeyFindByHash = `SELECT k.id AS keyId, k.project_id AS keyProjectId, k.name AS keyName, k.key_hash AS keyHash,
  k.prefix AS keyPrefix, k.created_at AS keyCreatedAt, k.last_used_at AS keyLastUsedAt, k.revoked_at AS keyRevokedAt,
  t.name AS teamName, t.plan AS teamPlan, t.created_at AS teamCreatedAt,
  p.id, p.team_id AS teamId, p.name, p.webhook_url AS webhookUrl, p.retry_max_retries AS retryMaxRetries,
  p.retry_initial_delay_ms AS retryInitialDelayMs, p.retry_factor AS retryFactor, p.retry_max_delay_ms AS retryMaxDelayMs,
  p.delivery_timeout_ms AS deliveryTimeoutMs, p.delivery_concurrency AS deliveryConcurrency,
  p.accept_any_2xx AS acceptAny2xx, p.retention_days AS retentionDays, p.paused, p.events_url AS eventsUrl,
  p.events_format AS eventsFormat, p.delivery_rate_per_second AS deliveryRatePerSecond, p.async_completion AS asyncCompletion,
  p.async_completion_timeout_ms AS asyncCompletionTimeoutMs, p.created_at AS createdAt
  FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN teams t ON t.id = p.team_id
  WHERE k.key_hash = ?`;
export const ApiKeyGet = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = ?`;
export const ApiKeyListByProject = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE project_id = ? ORDER BY created_at, id`;
export const ApiKeyRevoke = 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, @now) WHERE id = @keyId';
export const ApiKeyTouch = 'UPDATE api_keys SET last_used_at = @now WHERE id = @keyId AND (last_used_at IS NULL OR last_used_at < @now)';

export const WebhookSecretInsert = `INSERT INTO webhook_secrets (id, project_id, secret_ciphertext, created_at, expires_at)
  VALUES (@id, @projectId, @ciphertext, @createdAt, @expiresAt)`;
export const WebhookSecretListActive = `SELECT id, project_id AS projectId, secret_ciphertext AS ciphertext, created_at AS createdAt,
  expires_at AS expiresAt FROM webhook_secrets WHERE project_id = @projectId AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY created_at DESC, expires_at IS NULL DESC`;
/** A rotation drops every secret that was already on its way out, so at most two ever sign. */
export const WebhookSecretDeleteExpiring = 'DELETE FROM webhook_secrets WHERE project_id = ? AND expires_at IS NOT NULL';
export const WebhookSecretExpireNewest = 'UPDATE webhook_secrets SET expires_at = @expiresAt WHERE project_id = @projectId AND expires_at IS NULL';

/** A schedule's fire (schedule_id, schedule_fire_at) already created elsewhere is left as it is. */
export const JobInsert = `INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries,
  created_at, updated_at, schedule_id, schedule_fire_at, on_hold, traceparent, tracestate) VALUES (@id, @projectId, 'QUEUED', @payload,
  @scheduledFor, @runAt, @now, @maxRetries, @now, @now, @scheduleId, @scheduleFireAt, @onHold, @traceparent, @tracestate) ON CONFLICT DO NOTHING`;
/**
 * Whether a project's new jobs are held (it is paused) and whether they may start now (not held
 * back by a receiver's Retry-After either): read once per creation, in its transaction.
 */
export const ProjectCreationStateGet = `SELECT paused, paused = 0 AND coalesce(backoff_until, 0) <= @now AS startable FROM projects WHERE id = @projectId`;
/**
 * A job due at once, created with its first attempt STARTED by the instance that accepted it
 * (JobCreateParams.startDueNow): one insert instead of an insert, a claim and a start.
 */
export const JobInsertStarted = `INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries,
  attempt_count, lease_owner, lease_expires_at, lease_attempt_id, created_at, updated_at, schedule_id, schedule_fire_at, traceparent, tracestate)
  VALUES (@id, @projectId, 'STARTED', @payload, @scheduledFor, @runAt, @now, @maxRetries, 1, @workerId, @leaseExpiresAt, @attemptId, @now, @now,
  @scheduleId, @scheduleFireAt, @traceparent, @tracestate) ON CONFLICT DO NOTHING`;
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
).join('\n  UNION ALL ')}\n  ORDER BY seq DESC LIMIT @limit`;
export const JobListByStatus = `SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = @projectId AND status = @status
  AND seq < @beforeSeq ORDER BY seq DESC LIMIT @limit`;
export const JobCancelIfQueued = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = @now, updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRescheduleIfQueued = `UPDATE jobs SET scheduled_for = @scheduledFor,
  run_at = MAX(COALESCE(@scheduledFor, queued_at), queued_at), updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRetryIfFailed = `UPDATE jobs SET status = 'QUEUED', run_at = @now, queued_at = @now, ${HELD_IF_PAUSED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = @now
  WHERE id = @jobId AND project_id = @projectId AND status = 'FAILED' RETURNING ${JOB_COLUMNS}`;

/** A project's FAILED jobs in a window, by jobs_failed (project_id, failed_at): bulk replay, oldest failure first. */
const FAILED_IN_WINDOW = `FROM jobs INDEXED BY jobs_failed WHERE project_id = @projectId AND status = 'FAILED'
  AND failed_at >= @failedFrom AND failed_at < @failedBefore AND created_at >= @createdFrom AND created_at < @createdBefore
  AND (@scheduleId IS NULL OR schedule_id = @scheduleId)`;
export const JobRetryFailedMany = `UPDATE jobs SET status = 'QUEUED', run_at = @now, queued_at = @now, ${HELD_IF_PAUSED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = @now
  WHERE seq IN (SELECT seq ${FAILED_IN_WINDOW} ORDER BY failed_at LIMIT @limit)`;
export const JobFailedExists = `SELECT 1 AS found ${FAILED_IN_WINDOW} LIMIT 1`;
export const JobCountFailed = `SELECT count(*) AS n ${FAILED_IN_WINDOW}`;

/**
 * The subquery reads only the partial index jobs_due, so jobs waiting far ahead cost the claim
 * nothing. A paused project's due jobs are stepped over: they wait, QUEUED, for its resume.
 */
/**
 * How many of a project's jobs one worker holds at most: claimLimit of src/delivery/capacity.ts,
 * from the numbers of @aheadFactor, @share and @rateWindowsPerSecond (JobClaimParams.claimRule).
 * `p` is the project's row; ceil is written out (SQLite may be built without math functions).
 */
const RATE_WINDOW = 'p.delivery_rate_per_second * 1.0 / @rateWindowsPerSecond';
const CLAIM_LIMIT = `MIN(@aheadFactor * MIN(p.delivery_concurrency, @share), @share,
  CASE WHEN p.delivery_rate_per_second IS NULL THEN @share
    ELSE MAX(1, CAST(${RATE_WINDOW} AS INTEGER) + (${RATE_WINDOW} > CAST(${RATE_WINDOW} AS INTEGER))) END)`;
/**
 * The earliest due jobs, at most @limit, and of each project no more than its claim limit less what
 * the worker holds already (@heldByProject, a JSON object of counts): jobs beyond a project's room
 * stay QUEUED, cancellable, instead of waiting claimed for a slot. Of each project the first
 * @startable ones due by @now (a JSON object of counts; none for a project not in it) are claimed
 * with their attempt STARTED at once, its id @attemptPrefix and the job's seq; the writer records
 * those attempts (writes.ts, jobClaimDue).
 */
export const JobClaimDue = `UPDATE jobs SET status = CASE WHEN picked.starts THEN 'STARTED' ELSE 'DISPATCHED' END,
  attempt_count = jobs.attempt_count + picked.starts,
  lease_attempt_id = CASE WHEN picked.starts THEN @attemptPrefix || jobs.seq END,
  lease_owner = @workerId, lease_expires_at = @now + @leaseExtraMs + picked.timeout_ms, updated_at = @now
  FROM (
    SELECT ranked.seq AS picked_seq, p.delivery_timeout_ms AS timeout_ms,
      (ranked.run_at <= @now AND ranked.place <= COALESCE(json_extract(@startable, '$."' || ranked.project_id || '"'), 0)) AS starts
    FROM (
      SELECT seq, project_id, run_at, row_number() OVER (PARTITION BY project_id ORDER BY run_at, seq) AS place FROM (
        SELECT seq, project_id, run_at FROM jobs WHERE status = 'QUEUED' AND on_hold = 0 AND run_at <= @dueBy
          AND project_id NOT IN (SELECT value FROM json_each(@excludeProjectIds)) AND project_id NOT IN (${PAUSED_PROJECTS})
          AND project_id NOT IN (${BACKED_OFF_PROJECTS})
        ORDER BY run_at LIMIT @limit)
    ) AS ranked JOIN projects p ON p.id = ranked.project_id
    WHERE ranked.place <= ${CLAIM_LIMIT} - COALESCE(json_extract(@heldByProject, '$."' || ranked.project_id || '"'), 0)
  ) AS picked
  WHERE jobs.seq = picked.picked_seq
  RETURNING ${JOB_COLUMNS}, lease_expires_at AS leaseExpiresAt, lease_attempt_id AS startedAttemptId`;
export const JobNextDueAt = `SELECT MIN(run_at) AS runAt FROM jobs WHERE status = 'QUEUED' AND on_hold = 0 AND run_at > @after`;
/**
 * Idempotent for one attempt: started again with the same attempt id, it counts nothing twice.
 * A job of a paused or backed-off project is not started (JobReleaseHeldBack gives it back).
 */
export const JobStart = `UPDATE jobs SET status = 'STARTED', attempt_count = attempt_count + (status = 'DISPATCHED'),
  lease_attempt_id = @attemptId, lease_expires_at = @leaseExpiresAt, updated_at = @now
  WHERE id = @jobId AND lease_owner = @workerId AND (status = 'DISPATCHED' OR (status = 'STARTED' AND lease_attempt_id = @attemptId))
    -- Asked again for a started attempt, the answer stays the same, paused or not.
    AND (status = 'STARTED' OR (project_id NOT IN (${PAUSED_PROJECTS}) AND project_id NOT IN (${BACKED_OFF_PROJECTS})))
  RETURNING attempt_count - round_start_attempt_count AS attemptNumber, project_id AS projectId, run_at AS runAt`;
/**
 * A job claimed before its project was paused (or backed off) and not yet sent: QUEUED again as
 * it was, due when it was; held if paused.
 */
export const JobReleaseHeldBack = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_PAUSED}, lease_owner = NULL, lease_expires_at = NULL, updated_at = @now
  WHERE id = @jobId AND lease_owner = @workerId AND status = 'DISPATCHED'
    AND (project_id IN (${PAUSED_PROJECTS}) OR project_id IN (${BACKED_OFF_PROJECTS}))`;
/** A receiver's Retry-After (SPEC section 11): the project's deliveries wait until @until on every instance; a later hold wins. */
export const ProjectBackoff = `UPDATE projects SET backoff_until = max(coalesce(backoff_until, 0), @until) WHERE id = @projectId`;
export const AttemptInsert = `INSERT INTO attempts (id, job_id, attempt_number, started_at) VALUES (@attemptId, @jobId, @attemptNumber, @now)`;
export const AttemptJobGet = 'SELECT job_id AS jobId FROM attempts WHERE id = ?';
/** Guarded on the lease and the attempt: a worker whose lease was taken over changes nothing. */
export const JobFinishAttempt = `UPDATE jobs SET status = @status,
  run_at = COALESCE(@runAt, run_at), queued_at = CASE WHEN @status = 'QUEUED' THEN @now ELSE queued_at END,
  on_hold = CASE WHEN @status = 'QUEUED' THEN (SELECT paused FROM projects WHERE projects.id = jobs.project_id) ELSE on_hold END,
  round_start_attempt_count = round_start_attempt_count + @releasedAttempts,
  lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
  last_error = COALESCE(@lastError, last_error), updated_at = @now,
  completed_at = CASE WHEN @status = 'COMPLETED' THEN @now ELSE completed_at END,
  failed_at = CASE WHEN @status = 'FAILED' THEN @now ELSE failed_at END
  WHERE id = @jobId AND status = 'STARTED' AND lease_owner = @workerId AND lease_attempt_id = @attemptId
  RETURNING project_id AS projectId`;
/** An attempt accepted with 202 keeps that answer's status and body when its report or deadline ends it. */
export const AttemptFinish = `UPDATE attempts SET finished_at = @now, outcome = @outcome, status_code = COALESCE(@statusCode, status_code),
  duration_ms = @durationMs, error = @error, response_body = COALESCE(@responseBody, response_body),
  reported_at = CASE WHEN @reported = 1 THEN @now ELSE reported_at END
  WHERE id = @attemptId AND outcome IS NULL`;
/** A 202 to a project with asyncCompletion (SPEC section 11): the worker hands the lease to the report's deadline. */
export const JobAccept = `UPDATE jobs SET lease_owner = '${AWAITING_REPORT}', lease_expires_at = @deadline
  WHERE id = @jobId AND status = 'STARTED' AND lease_owner = @workerId AND lease_attempt_id = @attemptId`;
export const AttemptAccept = `UPDATE attempts SET accepted_at = @now, status_code = @statusCode, response_body = @responseBody
  WHERE id = @attemptId AND outcome IS NULL`;
/** The attempt still waits for its report, and its deadline is after @now. */
const AWAITING_REPORT_GUARD = `id = @jobId AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
  AND lease_attempt_id = @attemptId AND lease_expires_at > @now`;
export const JobAwaitingReportCheck = `SELECT 1 AS waiting FROM jobs WHERE ${AWAITING_REPORT_GUARD}`;
/** A "running" report: the deadline moves (the job itself does not change, so neither does its updatedAt). */
export const JobReportRunning = `UPDATE jobs SET lease_expires_at = @deadline WHERE ${AWAITING_REPORT_GUARD}`;
export const AttemptReported = 'UPDATE attempts SET reported_at = @now WHERE id = @attemptId';
export const JobLeaseRenew = `UPDATE jobs SET lease_expires_at = @leaseExpiresAt
  WHERE id = @jobId AND lease_owner = @workerId AND status IN ('DISPATCHED', 'STARTED')`;
/** A lease waiting for a receiver's report is no dead worker's: it expires at its deadline, never earlier. */
const EXPIRED_LEASE = `lease_expires_at < @expiredBefore AND (lease_owner <> '${AWAITING_REPORT}' OR lease_expires_at < @now)`;
export const JobListExpiredLeases = `SELECT ${JOB_COLUMNS}, lease_owner AS leaseOwner, lease_attempt_id AS leaseAttemptId FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND ${EXPIRED_LEASE} ORDER BY lease_expires_at LIMIT @limit`;
/** The started attempt's lease is still the one the rescuer read as expired (not renewed or reported on since). */
export const JobLeaseExpiredCheck = `SELECT 1 AS expired FROM jobs WHERE id = @jobId AND status = 'STARTED'
  AND lease_attempt_id = @attemptId AND ${EXPIRED_LEASE}`;
/**
 * A claim never started (its worker died, or is stopping): QUEUED again due when it was, and in its
 * QUEUED state as before: being claimed and given back is not a new due time (SPEC section 2).
 */
export const JobRequeueExpired = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_PAUSED}, lease_owner = NULL,
  lease_expires_at = NULL, lease_attempt_id = NULL, updated_at = @now
  WHERE id = @jobId AND status = 'DISPATCHED' AND lease_expires_at < @expiredBefore`;
export const JobReleaseDispatched = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_PAUSED}, lease_owner = NULL,
  lease_expires_at = NULL, updated_at = @now WHERE lease_owner = @workerId AND status = 'DISPATCHED'`;
/** The `status IN (…)` repeats the partial index's condition: without it SQLite scans every job. */
export const JobListDispatchedTo = `SELECT ${JOB_COLUMNS}, lease_expires_at AS leaseExpiresAt FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND status = 'DISPATCHED' AND lease_owner = ?`;
export const JobCountByStatus = 'SELECT status, count(*) AS n FROM jobs GROUP BY status';

/** reportBy: the deadline of the attempt waiting for its report, read from its job's lease. */
const attemptWithDeadline = (where: string) => `SELECT ${attemptColumns('a')},
  CASE WHEN j.lease_owner = '${AWAITING_REPORT}' AND j.lease_attempt_id = a.id THEN j.lease_expires_at END AS reportBy
  FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE ${where}`;
export const AttemptListByJob = `${attemptWithDeadline('a.job_id = ?')} ORDER BY a.started_at, a.attempt_number`;
export const AttemptGetOfJob = attemptWithDeadline('a.id = @attemptId AND a.job_id = @jobId');
export const JobGetById = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`;

export const IdempotencyKeyGet = `SELECT request_hash AS requestHash, response_status AS statusCode, response_body AS body,
  created_at AS createdAt FROM idempotency_keys WHERE project_id = ? AND endpoint = ? AND key = ?`;
/** An expired key (older than the replay window) is replaced in place. */
export const IdempotencyKeyUpsert = `INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status,
  response_body, created_at) VALUES (@projectId, @endpoint, @key, @requestHash, @statusCode, @body, @now)
  ON CONFLICT (project_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash,
  response_status = excluded.response_status, response_body = excluded.response_body, created_at = excluded.created_at`;

export const UsageAdd = `INSERT INTO usage_daily (team_id, day, jobs_created) VALUES (?, ?, ?)
  ON CONFLICT (team_id, day) DO UPDATE SET jobs_created = jobs_created + excluded.jobs_created`;
export const UsageSum = `SELECT COALESCE(SUM(jobs_created), 0) AS n FROM usage_daily WHERE team_id = ? AND day >= ? AND day < ?`;
export const UsageDaily = `SELECT day, jobs_created AS jobsCreated FROM usage_daily WHERE team_id = ? AND day >= ? AND day < ?
  ORDER BY day`;

/**
 * A list by creation window or by schedule (store.ts, listedByCreation), newest first by
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
  return `${ranges.join('\n  UNION ALL ')}\n  ORDER BY createdAt DESC, seq DESC LIMIT @limit`;
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

export const TeamList = `SELECT ${TEAM_COLUMNS} FROM teams ORDER BY created_at, id`;
export const TeamListByUser = `SELECT t.id, t.name, t.plan, t.created_at AS createdAt FROM teams t
  JOIN team_memberships m ON m.team_id = t.id WHERE m.user_id = ? ORDER BY t.created_at, t.id`;

const USER_COLUMNS = 'id, email, is_operator AS isOperator, created_at AS createdAt, updated_at AS updatedAt';
export const UserInsert = `INSERT INTO users (id, email, password_hash, is_operator, created_at, updated_at)
  VALUES (@id, @email, @passwordHash, @isOperator, @createdAt, @updatedAt) ON CONFLICT (email) DO NOTHING`;
export const UserGet = `SELECT ${USER_COLUMNS} FROM users WHERE id = ?`;
export const UserGetByEmail = `SELECT ${USER_COLUMNS}, password_hash AS passwordHash FROM users WHERE email = ?`;
export const UserGetPasswordHash = 'SELECT password_hash AS passwordHash FROM users WHERE id = ?';
export const UserList = `SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, id`;
export const UserCount = 'SELECT count(*) AS n FROM users';
export const UserUpdatePassword = 'UPDATE users SET password_hash = @passwordHash, updated_at = @now WHERE id = @userId';
export const TeamMembershipInsert = `INSERT INTO team_memberships (user_id, team_id, created_at) VALUES (@userId, @teamId, @now)
  ON CONFLICT (user_id, team_id) DO NOTHING`;

export const SessionInsert = `INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at)
  VALUES (@tokenHash, @userId, @csrfToken, @createdAt, @expiresAt)`;
export const SessionGet = `SELECT s.token_hash AS tokenHash, s.user_id AS userId, s.csrf_token AS csrfToken, s.created_at AS createdAt,
  s.expires_at AS expiresAt, u.email, u.is_operator AS isOperator, u.created_at AS userCreatedAt, u.updated_at AS userUpdatedAt
  FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = @tokenHash AND s.expires_at > @now`;
export const SessionDelete = 'DELETE FROM sessions WHERE token_hash = ?';
export const SessionDeleteByUser = 'DELETE FROM sessions WHERE user_id = @userId AND (@keepTokenHash IS NULL OR token_hash <> @keepTokenHash)';
export const SessionDeleteExpired = 'DELETE FROM sessions WHERE expires_at <= ?';

/**
 * When a final job became final, null while it is not: word for word the expression of the index
 * jobs_final (0014_final_index_without_status_list.sql), which SQLite uses only for it.
 */
const FINAL_AT = 'coalesce(completed_at, failed_at, cancelled_at)';
const PRUNABLE_JOBS = `FROM jobs WHERE project_id = @projectId AND ${FINAL_AT} IS NOT NULL AND ${FINAL_AT} <= @finalBy`;
export const ProjectListRetention = 'SELECT id AS projectId, retention_days AS retentionDays FROM projects ORDER BY id';
export const JobListPrunable = `SELECT seq, id ${PRUNABLE_JOBS} ORDER BY ${FINAL_AT} LIMIT @limit`;
export const AttemptDeleteByJob = 'DELETE FROM attempts WHERE job_id = ?';
export const JobDeleteBySeq = 'DELETE FROM jobs WHERE seq = ?';
export const JobCountPrunable = `SELECT count(*) AS jobs,
  COALESCE(SUM((SELECT count(*) FROM attempts a WHERE a.job_id = jobs.id)), 0) AS attempts ${PRUNABLE_JOBS}`;
export const IdempotencyKeyPrune = `DELETE FROM idempotency_keys WHERE (project_id, endpoint, key) IN
  (SELECT project_id, endpoint, key FROM idempotency_keys WHERE created_at <= @createdBy LIMIT @limit)`;
export const IdempotencyKeyCountPrunable = 'SELECT count(*) AS n FROM idempotency_keys WHERE created_at <= ?';
export const EventCountPrunable = 'SELECT count(*) AS n FROM events WHERE occurred_at <= ?';
export const UsagePrune = `DELETE FROM usage_daily WHERE (team_id, day) IN
  (SELECT team_id, day FROM usage_daily WHERE day < @beforeDay LIMIT @limit)`;
export const UsageCountPrunable = 'SELECT count(*) AS n FROM usage_daily WHERE day < ?';

// Recurring schedules (SPEC section 9).
const SCHEDULE_COLUMNS = `seq, id, project_id AS projectId, name, cron, timezone, payload, max_retries AS maxRetries,
  catch_up AS catchUp, overlap, paused, next_run_at AS nextRunAt, last_run_at AS lastRunAt, last_job_id AS lastJobId,
  skipped_count AS skippedCount, created_at AS createdAt, updated_at AS updatedAt`;
export const ScheduleInsertBelowLimit = `INSERT INTO schedules (id, project_id, name, cron, timezone, payload, max_retries, catch_up,
  overlap, paused, next_run_at, last_run_at, last_job_id, skipped_count, created_at, updated_at)
  SELECT @id, @projectId, @name, @cron, @timezone, @payload, @maxRetries, @catchUp, @overlap, @paused, @nextRunAt, @lastRunAt,
    @lastJobId, @skippedCount, @createdAt, @updatedAt
  WHERE (SELECT count(*) FROM schedules WHERE project_id = @projectId) < @maxPerProject`;
export const ScheduleGet = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = ? AND project_id = ?`;
export const ScheduleList = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE project_id = @projectId AND seq < @beforeSeq
  ORDER BY seq DESC LIMIT @limit`;
/**
 * A pause remembers its instant (kept while the schedule stays paused, cleared by a resume). A
 * resume lets go of any claim a fire cut short by the pause still holds (its advance was refused):
 * the schedule fires again at once, not when that claim runs out.
 */
export const ScheduleUpdate = `UPDATE schedules SET name = @name, cron = @cron, timezone = @timezone, payload = @payload,
  max_retries = @maxRetries, catch_up = @catchUp, overlap = @overlap, paused = @paused, next_run_at = @nextRunAt, updated_at = @now,
  paused_at = CASE WHEN @paused = 0 THEN NULL WHEN paused = 1 THEN COALESCE(paused_at, @now) ELSE @now END,
  firing_until = CASE WHEN @paused = 0 AND paused = 1 THEN NULL ELSE firing_until END
  WHERE id = @scheduleId AND project_id = @projectId RETURNING ${SCHEDULE_COLUMNS}, paused_at AS pausedAt`;
/**
 * A paused schedule's jobs for instants after its pause that no request has left for: QUEUED, or
 * DISPATCHED (claimed, not yet started: the claim is withdrawn, and the worker's start finds the
 * job no longer its own). Each gives its instant up (schedule_fire_at, the unique key of a fire):
 * resumed before that instant, the schedule fires it again; after, catchUp decides.
 */
export const JobCancelOfPausedSchedule = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = @now, updated_at = @now,
  schedule_fire_at = NULL, lease_owner = NULL, lease_expires_at = NULL
  WHERE schedule_id = @scheduleId AND schedule_fire_at > @pausedAt AND status IN ('QUEUED', 'DISPATCHED')`;
/** When a fire's schedule was paused (null: it is not): a fire for a later instant creates no job. */
export const SchedulePausedAtGet = 'SELECT paused_at AS pausedAt FROM schedules WHERE id = ? AND paused = 1';
/** The latest due time after @now of a schedule's jobs for instants after @firedAfter started ahead of it (request not yet sent). */
export const JobStartedAheadOfSchedule = `SELECT max(run_at) AS runAt FROM jobs
  WHERE schedule_id = @scheduleId AND status = 'STARTED' AND schedule_fire_at > @firedAfter AND run_at > @now`;
export const ScheduleDelete = `DELETE FROM schedules WHERE id = @scheduleId AND project_id = @projectId RETURNING ${SCHEDULE_COLUMNS}`;
export const JobCancelQueuedOfSchedule = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = @now, updated_at = @now
  WHERE schedule_id = @scheduleId AND status = 'QUEUED'`;
const SCHEDULES_TO_CLAIM = `SELECT seq FROM schedules WHERE paused = 0 AND next_run_at IS NOT NULL AND next_run_at <= @dueBy
      AND (overlap <> 'skip' OR next_run_at <= @now) AND (firing_until IS NULL OR firing_until <= @now)
    ORDER BY next_run_at LIMIT @limit`;
/** The leases (run out) that the claim below takes over, read first in its transaction: RETURNING gives only the new values. */
export const ScheduleHeldBeforeClaim = `SELECT seq, firing_until AS heldUntil FROM schedules
  WHERE seq IN (${SCHEDULES_TO_CLAIM}) AND firing_until IS NOT NULL`;
export const ScheduleClaimDue = `UPDATE schedules SET firing_until = @leaseUntil WHERE seq IN (${SCHEDULES_TO_CLAIM})
  RETURNING ${SCHEDULE_COLUMNS}`;
/** Not a schedule paused since its claim: it waits at the instant its pause left it for its resume. */
export const ScheduleAdvance = `UPDATE schedules SET next_run_at = @nextRunAt, firing_until = NULL,
  last_run_at = COALESCE(@lastRunAt, last_run_at), last_job_id = COALESCE(@lastJobId, last_job_id),
  skipped_count = skipped_count + @skipped, updated_at = @now
  WHERE id = @scheduleId AND next_run_at = @expectedNextRunAt AND paused = 0`;
/** When the firing loop has work next: a fire's instant less the lead, or for overlap "skip" its instant; only fires by @horizon. */
export const ScheduleNextWakeAt = `SELECT min(CASE WHEN overlap = 'skip' THEN next_run_at ELSE next_run_at - @leadMs END) AS wakeAt
  FROM schedules WHERE paused = 0 AND next_run_at IS NOT NULL AND next_run_at <= @horizon`;

// Events (SPEC section 10): see ../event-store.ts.
const EVENT_COLUMNS = `seq, id, project_id AS projectId, type, occurred_at AS occurredAt, data, status, attempt_count AS attemptCount,
  next_attempt_at AS nextAttemptAt, last_error AS lastError, delivered_at AS deliveredAt`;
/** Recorded only for a project with an eventsUrl; due at once. */
export const EventInsert = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT @id, id, @type, @occurredAt, @data, 'PENDING', @occurredAt, @occurredAt FROM projects
  WHERE id = @projectId AND events_url IS NOT NULL`;
/** job.failed for a job whose last attempt just failed (JobFinishAttempt set it FAILED); its id comes from the attempt's. */
export const EventInsertJobFailed = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT @eventId, j.project_id, 'job.failed', @now,
    CASE WHEN j.schedule_id IS NULL THEN json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error)
      ELSE json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error, 'scheduleId', j.schedule_id) END,
    'PENDING', @now, @now
  FROM jobs j JOIN projects p ON p.id = j.project_id
  WHERE j.id = @jobId AND j.status = 'FAILED' AND p.events_url IS NOT NULL`;
export const EventList = `SELECT ${EVENT_COLUMNS} FROM events WHERE project_id = @projectId AND seq < @beforeSeq ORDER BY seq DESC LIMIT @limit`;
export const EventClaimDue = `UPDATE events SET claimed_by = @workerId, updated_at = @now,
  next_attempt_at = @now + @leaseExtraMs + (SELECT delivery_timeout_ms FROM projects WHERE projects.id = events.project_id)
  WHERE seq IN (SELECT seq FROM events WHERE status = 'PENDING' AND next_attempt_at <= @now ORDER BY next_attempt_at LIMIT @limit)
  RETURNING ${EVENT_COLUMNS}, next_attempt_at AS leaseUntil`;
/** Guarded on the claim: a worker whose claim lapsed (and was taken over) changes nothing. */
export const EventFinish = `UPDATE events SET status = @status, attempt_count = attempt_count + 1, next_attempt_at = @nextAttemptAt,
  last_error = COALESCE(@error, last_error), delivered_at = @deliveredAt, claimed_by = NULL, updated_at = @now
  WHERE id = @eventId AND status = 'PENDING' AND claimed_by = @workerId AND next_attempt_at = @leaseUntil`;
export const EventReleaseClaims = `UPDATE events SET claimed_by = NULL, next_attempt_at = @now, updated_at = @now
  WHERE status = 'PENDING' AND claimed_by IS NOT NULL`;
export const EventPrune = `DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE occurred_at <= @occurredBy
  ORDER BY occurred_at LIMIT @limit)`;
export const WebhookHealthGet = `SELECT consecutive_failures AS consecutiveFailures, failing_since AS failingSince,
  failing_event_at AS failingEventAt, last_error AS lastError FROM webhook_health WHERE project_id = ?`;
export const WebhookHealthUpsert = `INSERT INTO webhook_health (project_id, consecutive_failures, failing_since, failing_event_at, last_error)
  VALUES (@projectId, @consecutiveFailures, @failingSince, @failingEventAt, @lastError)
  ON CONFLICT (project_id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, failing_since = excluded.failing_since,
  failing_event_at = excluded.failing_event_at, last_error = excluded.last_error`;
export const WebhookHealthDelete = 'DELETE FROM webhook_health WHERE project_id = ?';
export const WebhookHealthListFailing = 'SELECT project_id AS projectId FROM webhook_health';

// Pause and resume (SPEC section 10): a paused project's QUEUED jobs held, a resumed one's released.
/** The end of a paused project's next batch of QUEUED jobs, by seq from @afterSeq (jobs_project_status). */
export const JobHoldBatchEnd = `SELECT max(seq) AS lastSeq, count(*) AS n FROM (SELECT seq FROM jobs INDEXED BY jobs_project_status
  WHERE project_id = @projectId AND status = 'QUEUED' AND seq > @afterSeq ORDER BY seq LIMIT @limit)`;
/** Holds that batch, unless the project was resumed meanwhile. */
export const JobHoldRange = `UPDATE jobs SET on_hold = 1 WHERE project_id = @projectId AND status = 'QUEUED'
  AND seq > @afterSeq AND seq <= @lastSeq AND on_hold = 0 AND (SELECT paused FROM projects WHERE id = @projectId) = 1`;
/** A batch of a resumed project's held jobs, earliest due first (jobs_held). */
export const JobReleaseHeldBatch = `UPDATE jobs SET on_hold = 0 WHERE seq IN (SELECT seq FROM jobs INDEXED BY jobs_held
  WHERE project_id = @projectId AND status = 'QUEUED' AND on_hold = 1 ORDER BY run_at LIMIT @limit)
  AND (SELECT paused FROM projects WHERE id = @projectId) = 0`;
/** Projects not paused that still have held jobs (a resume cut short). */
export const ProjectListWithHeldJobs = `SELECT id FROM projects p WHERE paused = 0
  AND EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_held WHERE project_id = p.id AND status = 'QUEUED' AND on_hold = 1)`;

// The project overview (../overview-store.ts, 0011_project_overview.sql).
/**
 * A project's jobs by status, each counted up to @limit rows (jobs_project_status): one arm per
 * status, so that a status of millions of jobs costs no more than the limit.
 */
export const JobCountByStatusOfProject = JOB_STATUSES.map(
  (status) => `SELECT '${status}' AS status, (SELECT count(*) FROM (SELECT 1 FROM jobs INDEXED BY jobs_project_status
    WHERE project_id = @projectId AND status = '${status}' LIMIT @limit)) AS n`,
).join('\n  UNION ALL ');
export const DeliveryMinuteList = `SELECT minute, attempts, failed_attempts AS failedAttempts FROM delivery_minutes
  WHERE project_id = @projectId AND minute >= @from AND minute < @until ORDER BY minute`;
export const LatenessHistogram = `SELECT bucket, SUM(attempts) AS attempts FROM lateness_minutes
  WHERE project_id = @projectId AND minute >= @from AND minute < @until GROUP BY bucket`;
/** The newest failed attempts of the window; an attempt deleted since (retention) drops out. */
export const FailedAttemptListRecent = `SELECT a.job_id AS jobId, a.id AS attemptId, a.attempt_number AS attemptNumber,
  f.finished_at AS finishedAt, a.outcome, a.status_code AS statusCode, a.error
  FROM failed_attempts f JOIN attempts a ON a.id = f.attempt_id
  WHERE f.project_id = @projectId AND f.finished_at >= @from AND f.finished_at < @until
  ORDER BY f.finished_at DESC, f.attempt_id DESC LIMIT @limit`;
/** A group commit's finished attempts (overview-tally.ts), added to their project's minute. */
export const DeliveryMinuteAdd = `INSERT INTO delivery_minutes (project_id, minute, attempts, failed_attempts)
  VALUES (@projectId, @minute, @attempts, @failedAttempts)
  ON CONFLICT (project_id, minute) DO UPDATE SET attempts = attempts + excluded.attempts,
    failed_attempts = failed_attempts + excluded.failed_attempts`;
export const FailedAttemptInsert = `INSERT INTO failed_attempts (project_id, finished_at, attempt_id) VALUES (@projectId, @now, @attemptId)
  ON CONFLICT DO NOTHING`;
/** A group commit's first attempts (overview-tally.ts), added to their lateness bucket of the minute they started. */
export const LatenessMinuteAdd = `INSERT INTO lateness_minutes (project_id, minute, bucket, attempts) VALUES (@projectId, @minute, @bucket, @attempts)
  ON CONFLICT (project_id, minute, bucket) DO UPDATE SET attempts = attempts + excluded.attempts`;
export const DeliveryMinutePrune = `DELETE FROM delivery_minutes WHERE (project_id, minute) IN
  (SELECT project_id, minute FROM delivery_minutes WHERE minute < @before LIMIT @limit)`;
export const LatenessMinutePrune = `DELETE FROM lateness_minutes WHERE (project_id, minute, bucket) IN
  (SELECT project_id, minute, bucket FROM lateness_minutes WHERE minute < @before LIMIT @limit)`;
export const FailedAttemptPrune = `DELETE FROM failed_attempts WHERE (project_id, finished_at, attempt_id) IN
  (SELECT project_id, finished_at, attempt_id FROM failed_attempts WHERE finished_at < @before LIMIT @limit)`;
