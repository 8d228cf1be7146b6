/**
 * Every SQL statement of the PostgreSQL store, named as in ../sqlite/queries.ts so a diff shows
 * both dialects side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */
import { AWAITING_REPORT, JOB_STATUSES, listedByCreation, type JobListParams } from '../store.js';
import { creationListStart } from '../job-rules.js';
import { LATENESS_BOUNDS, MINUTE_MS } from '../overview-store.js';

/** The lateness buckets' bounds as an array literal: constants of the code, never data. */
const LATENESS_BOUNDS_ARRAY = `'{${LATENESS_BOUNDS.join(',')}}'::bigint[]`;

const TEAM_COLUMNS = 'id, name, plan, created_at AS "createdAt"';
const PROJECT_COLUMNS = `id, team_id AS "teamId", name, webhook_url AS "webhookUrl", retry_max_retries AS "retryMaxRetries",
  retry_initial_delay_ms AS "retryInitialDelayMs", retry_factor AS "retryFactor", retry_max_delay_ms AS "retryMaxDelayMs",
  delivery_timeout_ms AS "deliveryTimeoutMs", delivery_concurrency AS "deliveryConcurrency", accept_any_2xx AS "acceptAny2xx",
  retention_days AS "retentionDays", paused, events_url AS "eventsUrl", events_format AS "eventsFormat",
  delivery_rate_per_second AS "deliveryRatePerSecond", async_completion AS "asyncCompletion",
  async_completion_timeout_ms AS "asyncCompletionTimeoutMs", created_at AS "createdAt"`;
const API_KEY_COLUMNS = `id, project_id AS "projectId", name, prefix, created_at AS "createdAt", last_used_at AS "lastUsedAt",
  revoked_at AS "revokedAt"`;
const jobColumns = (t = 'jobs') => `${t}.seq, ${t}.id, ${t}.project_id AS "projectId", ${t}.status, ${t}.payload,
  ${t}.scheduled_for AS "scheduledFor", ${t}.run_at AS "runAt", ${t}.queued_at AS "queuedAt", ${t}.max_retries AS "maxRetries",
  ${t}.attempt_count AS "attemptCount", ${t}.round_start_attempt_count AS "roundStartAttemptCount", ${t}.last_error AS "lastError",
  ${t}.created_at AS "createdAt", ${t}.updated_at AS "updatedAt", ${t}.completed_at AS "completedAt", ${t}.failed_at AS "failedAt",
  ${t}.cancelled_at AS "cancelledAt", ${t}.schedule_id AS "scheduleId", ${t}.traceparent, ${t}.tracestate`;
const JOB_COLUMNS = jobColumns();
const attemptColumns = (t: string) => `${t}.id, ${t}.job_id AS "jobId", ${t}.attempt_number AS "attemptNumber",
  ${t}.started_at AS "startedAt", ${t}.finished_at AS "finishedAt", ${t}.outcome, ${t}.status_code AS "statusCode",
  ${t}.duration_ms AS "durationMs", ${t}.error, ${t}.response_body AS "responseBody", ${t}.accepted_at AS "acceptedAt",
  ${t}.reported_at AS "reportedAt"`;

/** Paused projects (SPEC section 10), read through the partial index projects_paused. */
const PAUSED_PROJECTS = 'SELECT id FROM projects WHERE paused';
/** Projects a receiver's Retry-After holds back at the instant `now` (SPEC section 11), through projects_backoff. */
const backedOffProjects = (now: string) => `SELECT id FROM projects WHERE backoff_until > ${now}`;
/** A job entering QUEUED is held while its project is paused (0007_operator_controls.sql). */
const HELD_IF_PAUSED = 'on_hold = (SELECT paused FROM projects WHERE projects.id = jobs.project_id)';

export const SettingGet = 'SELECT value FROM settings WHERE key = $1';
export const SettingInsertIfAbsent = `WITH ins AS (INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value)
  SELECT value FROM ins UNION ALL SELECT value FROM settings WHERE key = $1 LIMIT 1`;

export const TeamInsert = 'INSERT INTO teams (id, name, plan, created_at) VALUES ($1, $2, $3, $4)';
export const TeamGet = `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = $1`;
export const TeamUpdate = `UPDATE teams SET name = COALESCE($2, name), plan = COALESCE($3, plan) WHERE id = $1 RETURNING ${TEAM_COLUMNS}`;
export const TeamCount = 'SELECT count(*)::int AS n FROM teams';

export const ProjectInsert = `INSERT INTO projects (id, team_id, name, webhook_url, retry_max_retries, retry_initial_delay_ms,
  retry_factor, retry_max_delay_ms, delivery_timeout_ms, delivery_concurrency, accept_any_2xx, retention_days, paused,
  events_url, events_format, delivery_rate_per_second, async_completion, async_completion_timeout_ms, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`;
export const ProjectGet = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1`;
export const ProjectGetForUpdate = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1 FOR UPDATE`;
export const ProjectGetMany = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ANY($1::text[])`;
export const ProjectListByTeam = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE team_id = $1 ORDER BY created_at, id`;
export const ProjectUpdate = `UPDATE projects SET name = $2, webhook_url = $3, retry_max_retries = $4, retry_initial_delay_ms = $5,
  retry_factor = $6, retry_max_delay_ms = $7, delivery_timeout_ms = $8, delivery_concurrency = $9, accept_any_2xx = $10,
  retention_days = $11, paused = $12, events_url = $13, events_format = $14,
  delivery_rate_per_second = $15, async_completion = $16, async_completion_timeout_ms = $17 WHERE id = $1`;

export const ApiKeyInsert = `INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at, last_used_at, revoked_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;
/** One indexed lookup by hash brings the key, its project and its team. */
export const ApiKeyFindByHash = `SELECT k.id AS "keyId", k.project_id AS "keyProjectId", k.name AS "keyName", k.key_hash AS "keyHash",
  k.prefix AS "keyPrefix", k.created_at AS "keyCreatedAt", k.last_used_at AS "keyLastUsedAt", k.revoked_at AS "keyRevokedAt",
  t.name AS "teamName", t.plan AS "teamPlan", t.created_at AS "teamCreatedAt",
  p.id, p.team_id AS "teamId", p.name, p.webhook_url AS "webhookUrl", p.retry_max_retries AS "retryMaxRetries",
  p.retry_initial_delay_ms AS "retryInitialDelayMs", p.retry_factor AS "retryFactor", p.retry_max_delay_ms AS "retryMaxDelayMs",
  p.delivery_timeout_ms AS "deliveryTimeoutMs", p.delivery_concurrency AS "deliveryConcurrency",
  p.accept_any_2xx AS "acceptAny2xx", p.retention_days AS "retentionDays", p.paused, p.events_url AS "eventsUrl",
  p.events_format AS "eventsFormat", p.delivery_rate_per_second AS "deliveryRatePerSecond", p.async_completion AS "asyncCompletion",
  p.async_completion_timeout_ms AS "asyncCompletionTimeoutMs", p.created_at AS "createdAt"
  FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN teams t ON t.id = p.team_id
  WHERE k.key_hash = $1`;
export const ApiKeyGet = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1`;
export const ApiKeyListByProject = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`;
export const ApiKeyRevoke = `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING ${API_KEY_COLUMNS}`;
export const ApiKeyTouch = 'UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)';

export const WebhookSecretInsert = `INSERT INTO webhook_secrets (id, project_id, secret_ciphertext, created_at, expires_at)
  VALUES ($1, $2, $3, $4, $5)`;
export const WebhookSecretListActive = `SELECT id, project_id AS "projectId", secret_ciphertext AS ciphertext, created_at AS "createdAt",
  expires_at AS "expiresAt" FROM webhook_secrets WHERE project_id = $1 AND (expires_at IS NULL OR expires_at > $2)
  ORDER BY created_at DESC, expires_at IS NULL DESC`;
/** A rotation drops every secret that was already on its way out, so at most two ever sign. */
export const WebhookSecretDeleteExpiring = 'DELETE FROM webhook_secrets WHERE project_id = $1 AND expires_at IS NOT NULL';
export const WebhookSecretExpireNewest = 'UPDATE webhook_secrets SET expires_at = $2 WHERE project_id = $1 AND expires_at IS NULL';
/** Rotations of one project take turns, so two at once cannot leave three secrets signing. */
export const ProjectLock = 'SELECT 1 FROM projects WHERE id = $1 FOR UPDATE';

/** All jobs of one request in one statement, from parallel arrays. */
/**
 * Every dispatch: the requests of one event-loop turn (or one request with an Idempotency-Key) in
 * one statement: all their jobs, the usage of each team, and one wake-up hint. One round trip and
 * one commit for the group, and each team's usage is updated once per group, not per request, in
 * the shard $12 of its day (0003_shard_usage_daily.sql).
 */
const jobInsertGroup = (usageRows: string, fires = false) => `WITH ${
  fires
    ? `fire_schedule AS MATERIALIZED (
    -- The fires' schedules, read as a pause under way leaves them (FOR SHARE waits for its commit;
    -- a pause that comes after waits for this statement's, and then cancels what it created).
    SELECT id, paused, paused_at FROM schedules WHERE id = ANY($13::text[]) FOR SHARE
  ), `
    : ''
}inserted AS (
    INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries, created_at, updated_at,
      schedule_id, schedule_fire_at, on_hold, traceparent, tracestate)
    -- Each job's own request's instant ($17, else the group's $1): a job due at once has
    -- nextAttemptAt = createdAt (SPEC section 2).
    SELECT j.id, j.project_id, 'QUEUED', j.payload, j.scheduled_for, j.run_at, COALESCE(j.created_at, $1::bigint), j.max_retries,
      COALESCE(j.created_at, $1::bigint), COALESCE(j.created_at, $1::bigint),
      -- A paused project's jobs are created held (0007_operator_controls.sql). A subquery, not a join,
      -- so that rows keep the arrays' order (the order of seq, which lists follow).
      j.schedule_id, j.schedule_fire_at, (SELECT paused FROM projects p WHERE p.id = j.project_id), j.traceparent, j.tracestate
    -- unnest pads a shorter array with nulls, so a group without trace context passes null for $15 and $16.
    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::int[], $13::text[], $14::bigint[], $15::text[], $16::text[], $17::bigint[])
      AS j(id, project_id, payload, scheduled_for, run_at, max_retries, schedule_id, schedule_fire_at, traceparent, tracestate, created_at)${
      fires
        ? `
    -- A fire for an instant after its schedule's pause creates no job (../schedule-store.ts, scheduleUpdate).
    WHERE NOT EXISTS (SELECT 1 FROM fire_schedule s WHERE s.id = j.schedule_id AND s.paused AND j.schedule_fire_at > s.paused_at)`
        : ''
    }
    -- A schedule fire (schedule_id, schedule_fire_at) already created elsewhere is left as it is.
    ON CONFLICT DO NOTHING
    RETURNING id
  ), usage AS (
    INSERT INTO usage_daily (team_id, day, shard, jobs_created)
    ${usageRows}
    ON CONFLICT (team_id, day, shard) DO UPDATE SET jobs_created = usage_daily.jobs_created + excluded.jobs_created
  ), hint AS (
    SELECT pg_notify('punctual_job_due', $11::text) WHERE $11::text IS NOT NULL
  )
  SELECT (SELECT count(*)::int FROM inserted) AS n, (SELECT count(*)::int FROM hint) AS notified`;
export const JobInsertGroup = jobInsertGroup(
  'SELECT u.team_id, u.day, $12::smallint, u.n FROM unnest($8::text[], $9::text[], $10::bigint[]) AS u(team_id, day, n)',
);
/**
 * The same for a group with a schedule's fire in it: a fire whose job exists already is not
 * counted again, so usage counts the jobs inserted ($18 and $19: each job's team and day), in the
 * teams' order as above.
 */
export const JobInsertGroupWithFires = jobInsertGroup(`SELECT t.team_id, t.day, $12::smallint, count(*) FROM inserted i
    JOIN unnest($2::text[], $18::text[], $19::text[]) AS t(id, team_id, day) ON t.id = i.id
    -- $8 to $10 are not read; naming their types lets the statement prepare.
    WHERE $8::text[] IS NOT NULL AND $9::text[] IS NOT NULL AND $10::bigint[] IS NOT NULL
    GROUP BY t.team_id, t.day ORDER BY t.team_id, t.day`, true);
export const JobGet = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1 AND project_id = $2`;
export const JobStatusGet = 'SELECT status FROM jobs WHERE id = $1 AND project_id = $2';
/**
 * A project's jobs of every status, newest first: one arm per status through jobs_project_status,
 * each limited on its own (the planner would otherwise read every arm whole and sort it), then
 * merged by seq; so no index on (project_id, seq) has to be kept for every job (as in
 * ../sqlite/queries.ts).
 */
export const JobList = `${JOB_STATUSES.map(
  (status) => `(SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = '${status}' AND seq < $2 ORDER BY seq DESC LIMIT $3)`,
).join('\n  UNION ALL ')}\n  ORDER BY seq DESC LIMIT $3`;
export const JobListByStatus = `SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = $4 AND seq < $2
  ORDER BY seq DESC LIMIT $3`;
export const JobCancelIfQueued = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRescheduleIfQueued = `UPDATE jobs SET scheduled_for = $4,
  run_at = GREATEST(COALESCE($4::bigint, queued_at), queued_at), updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRetryIfFailed = `UPDATE jobs SET status = 'QUEUED', run_at = $3, queued_at = $3, ${HELD_IF_PAUSED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'FAILED' RETURNING ${JOB_COLUMNS}`;

/** A project's FAILED jobs in a window, by jobs_failed (project_id, failed_at): bulk replay, oldest failure first. */
const FAILED_IN_WINDOW = `FROM jobs WHERE project_id = $1 AND status = 'FAILED'
  AND failed_at >= $2 AND failed_at < $3 AND created_at >= $4 AND created_at < $5 AND ($6::text IS NULL OR schedule_id = $6)`;
/** Rows another transaction holds (a single retry, the pruner) are skipped, not waited for. */
export const JobRetryFailedMany = `WITH picked AS (
    SELECT seq ${FAILED_IN_WINDOW} ORDER BY failed_at LIMIT $7 FOR UPDATE SKIP LOCKED
  )
  UPDATE jobs SET status = 'QUEUED', run_at = $8, queued_at = $8, ${HELD_IF_PAUSED}, round_start_attempt_count = attempt_count,
    failed_at = NULL, updated_at = $8
  FROM picked WHERE jobs.seq = picked.seq AND jobs.status = 'FAILED'`;
export const JobFailedExists = `SELECT EXISTS (SELECT 1 ${FAILED_IN_WINDOW}) AS found`;
export const JobCountFailed = `SELECT count(*)::int AS n ${FAILED_IN_WINDOW}`;

/**
 * How many of a project's jobs one worker holds at most: claimLimit of src/delivery/capacity.ts,
 * from the numbers of $9 (aheadFactor), $10 (share) and $11 (rateWindowsPerSecond). `p` is the
 * project's row.
 */
const CLAIM_LIMIT = `LEAST($9::int * LEAST(p.delivery_concurrency, $10::int), $10::int,
  CASE WHEN p.delivery_rate_per_second IS NULL THEN $10::int ELSE GREATEST(1, CEIL(p.delivery_rate_per_second / $11::int)::int) END)`;
/**
 * One statement: pick due jobs through the partial index, skipping rows another instance is
 * claiming (SKIP LOCKED), and lease them. No transaction stays open beyond it. A paused project's
 * due jobs are stepped over: they wait, QUEUED, for its resume. Of each project no more are leased
 * than its claim limit less what the worker holds already ($7 and $8, project ids and counts): the
 * rest stay QUEUED, cancellable, instead of waiting claimed for a slot.
 */
export const JobClaimDue = `WITH picked AS (
    SELECT seq, project_id, run_at FROM jobs WHERE status = 'QUEUED' AND NOT on_hold AND run_at <= $2::bigint AND NOT (project_id = ANY($6::text[]))
      AND project_id NOT IN (${PAUSED_PROJECTS}) AND project_id NOT IN (${backedOffProjects('$1::bigint')})
    ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED
  ), due AS (
    SELECT ranked.seq FROM (
      SELECT seq, project_id, row_number() OVER (PARTITION BY project_id ORDER BY run_at, seq) AS place FROM picked
    ) AS ranked JOIN projects p ON p.id = ranked.project_id
      LEFT JOIN unnest($7::text[], $8::int[]) AS held(project_id, count) ON held.project_id = ranked.project_id
    WHERE ranked.place <= ${CLAIM_LIMIT} - COALESCE(held.count, 0)
  )
  UPDATE jobs SET status = 'DISPATCHED', lease_owner = $4, lease_expires_at = $1::bigint + $5::bigint + p.delivery_timeout_ms,
    updated_at = $1::bigint
  FROM due, projects p WHERE jobs.seq = due.seq AND p.id = jobs.project_id
  RETURNING ${JOB_COLUMNS}, jobs.lease_expires_at AS "leaseExpiresAt"`;
export const JobNextDueAt = `SELECT MIN(run_at) AS "runAt" FROM jobs WHERE status = 'QUEUED' AND NOT on_hold AND run_at > $1::bigint`;
/**
 * Many attempts' STARTED and their attempt rows in one statement, each guarded by its lease. A job
 * of a paused project is not started: claimed before the pause and not yet sent, it is QUEUED again
 * as it was, due when it was.
 */
export const AttemptStartMany = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS i(job_id, attempt_id, worker_id, now, lease_expires_at)
  ), paused AS (${PAUSED_PROJECTS}), backed_off AS (
    ${backedOffProjects('(SELECT max(now) FROM input)')}
  ), released AS (
    UPDATE jobs SET status = 'QUEUED', on_hold = jobs.project_id IN (SELECT id FROM paused), lease_owner = NULL, lease_expires_at = NULL,
      updated_at = i.now
    FROM input i WHERE jobs.id = i.job_id AND jobs.lease_owner = i.worker_id AND jobs.status = 'DISPATCHED'
      AND (jobs.project_id IN (SELECT id FROM paused) OR jobs.project_id IN (SELECT id FROM backed_off))
  ), again AS (
    -- Asked again for an attempt already started (its first answer was lost): read before the update below.
    SELECT jobs.id FROM jobs JOIN input i ON jobs.id = i.job_id
    WHERE jobs.status = 'STARTED' AND jobs.lease_attempt_id = i.attempt_id AND jobs.lease_owner = i.worker_id
  ), started AS (
    UPDATE jobs SET status = 'STARTED', attempt_count = jobs.attempt_count + CASE WHEN jobs.status = 'DISPATCHED' THEN 1 ELSE 0 END,
      lease_attempt_id = i.attempt_id, lease_expires_at = i.lease_expires_at, updated_at = i.now
    FROM input i WHERE jobs.id = i.job_id AND jobs.lease_owner = i.worker_id
      AND (jobs.status = 'DISPATCHED' OR (jobs.status = 'STARTED' AND jobs.lease_attempt_id = i.attempt_id))
      -- Asked again for a started attempt, the answer stays the same, paused or not.
      AND (jobs.status = 'STARTED' OR (jobs.project_id NOT IN (SELECT id FROM paused) AND jobs.project_id NOT IN (SELECT id FROM backed_off)))
    RETURNING jobs.id AS job_id, i.attempt_id, i.now, jobs.attempt_count - jobs.round_start_attempt_count AS n, jobs.project_id,
      jobs.run_at
  ), recorded AS (
    INSERT INTO attempts (id, job_id, attempt_number, started_at)
    SELECT attempt_id, job_id, n, now FROM started WHERE job_id NOT IN (SELECT id FROM again)
  ), lateness AS (
    -- First attempts' lateness for the overview (0011_project_overview.sql), in the shard $6, the
    -- rows taken in one order on every instance (a deadlock otherwise), as for usage_daily.
    INSERT INTO lateness_minutes (project_id, minute, bucket, shard, attempts)
    SELECT project_id, now - now % ${MINUTE_MS}, width_bucket(now - run_at, ${LATENESS_BOUNDS_ARRAY}), $6::smallint, count(*)
    FROM started WHERE n = 1 AND job_id NOT IN (SELECT id FROM again)
    GROUP BY 1, 2, 3 ORDER BY project_id COLLATE "C", 2, 3
    ON CONFLICT (project_id, minute, bucket, shard) DO UPDATE SET attempts = lateness_minutes.attempts + excluded.attempts
  )
  SELECT job_id AS "jobId", n AS "attemptNumber" FROM started`;
/**
 * job.failed (SPEC section 10) for each job of the CTE `job` that the finish made FAILED, in the
 * finish's own statement, for a project with an eventsUrl. Its id is the attempt's (event-store.ts,
 * jobFailedEventId); its data is built as the embedded store builds it (EventInsertJobFailed).
 */
const JOB_FAILED_EVENT = `failed_event AS (
    INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
    SELECT 'evt_' || substr(j.attempt_id, 5), j.project_id, 'job.failed', j.now,
      CASE WHEN j.schedule_id IS NULL THEN json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error)
        ELSE json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error, 'scheduleId', j.schedule_id) END::text,
      'PENDING', j.now, j.now
    FROM job j JOIN projects p ON p.id = j.project_id WHERE j.status = 'FAILED' AND p.events_url IS NOT NULL
  )`;
/**
 * The overview's figures for the attempts a finish recorded (CTE `attempt`, RETURNING id and
 * outcome) of the jobs it moved on (CTE `job`), in the same statement: each project's minute, in the
 * shard `shard`, taken in (project, minute) order on every instance; and each failed attempt.
 */
const overviewCounts = (shard: string) => `finished AS (
    SELECT j.project_id, j.now, a.id AS attempt_id, a.outcome FROM attempt a JOIN job j ON j.attempt_id = a.id
  ), delivery_minute AS (
    INSERT INTO delivery_minutes (project_id, minute, shard, attempts, failed_attempts)
    SELECT project_id, now - now % ${MINUTE_MS}, ${shard}::smallint, count(*), count(*) FILTER (WHERE outcome <> 'success')
    FROM finished GROUP BY 1, 2 ORDER BY project_id COLLATE "C", 2
    ON CONFLICT (project_id, minute, shard) DO UPDATE SET attempts = delivery_minutes.attempts + excluded.attempts,
      failed_attempts = delivery_minutes.failed_attempts + excluded.failed_attempts
  ), failed_attempt AS (
    INSERT INTO failed_attempts (project_id, finished_at, attempt_id)
    SELECT project_id, now, attempt_id FROM finished WHERE outcome <> 'success' ON CONFLICT DO NOTHING
  )`;
/** Many attempts' results in one statement, each guarded by its lease and attempt. Returns the jobs it applied to. */
export const AttemptFinishMany = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::int[], $8::text[],
      $9::text[], $10::int[], $11::int[], $12::text[], $13::text[])
      AS i(job_id, attempt_id, worker_id, now, status, run_at, released, last_error, outcome, status_code, duration_ms, error, response_body)
  ), job AS (
    UPDATE jobs SET status = i.status,
      run_at = COALESCE(i.run_at, jobs.run_at), queued_at = CASE WHEN i.status = 'QUEUED' THEN i.now ELSE jobs.queued_at END,
      on_hold = CASE WHEN i.status = 'QUEUED' THEN (SELECT paused FROM projects WHERE projects.id = jobs.project_id) ELSE jobs.on_hold END,
      round_start_attempt_count = jobs.round_start_attempt_count + i.released,
      lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
      last_error = COALESCE(i.last_error, jobs.last_error), updated_at = i.now,
      completed_at = CASE WHEN i.status = 'COMPLETED' THEN i.now ELSE jobs.completed_at END,
      failed_at = CASE WHEN i.status = 'FAILED' THEN i.now ELSE jobs.failed_at END
    FROM input i
    WHERE jobs.id = i.job_id AND jobs.status = 'STARTED' AND jobs.lease_owner = i.worker_id AND jobs.lease_attempt_id = i.attempt_id
    RETURNING jobs.id, jobs.project_id, jobs.status, jobs.attempt_count, jobs.last_error, jobs.schedule_id, i.attempt_id, i.now
  ), attempt AS (
    UPDATE attempts SET finished_at = i.now, outcome = i.outcome, status_code = COALESCE(i.status_code, attempts.status_code),
      duration_ms = i.duration_ms, error = i.error, response_body = COALESCE(i.response_body, attempts.response_body)
    FROM input i WHERE attempts.id = i.attempt_id AND attempts.outcome IS NULL AND i.job_id IN (SELECT id FROM job)
    RETURNING attempts.id, i.outcome
  ), ${overviewCounts('$14')}, ${JOB_FAILED_EVENT}
  SELECT id AS "jobId" FROM job`;
/** Guarded on the lease and the attempt: a worker whose lease was taken over changes nothing. */
export const AttemptFinish = `WITH job AS (
    UPDATE jobs SET status = $5::text,
      run_at = COALESCE($6::bigint, run_at), queued_at = CASE WHEN $5::text = 'QUEUED' THEN $4::bigint ELSE queued_at END,
      on_hold = CASE WHEN $5::text = 'QUEUED' THEN (SELECT paused FROM projects WHERE projects.id = jobs.project_id) ELSE on_hold END,
      round_start_attempt_count = round_start_attempt_count + $7::int,
      lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
      last_error = COALESCE($8::text, last_error), updated_at = $4::bigint,
      completed_at = CASE WHEN $5::text = 'COMPLETED' THEN $4::bigint ELSE completed_at END,
      failed_at = CASE WHEN $5::text = 'FAILED' THEN $4::bigint ELSE failed_at END
    WHERE id = $1 AND status = 'STARTED' AND lease_owner = $3 AND lease_attempt_id = $2
    RETURNING id, project_id, status, attempt_count, last_error, schedule_id, $2::text AS attempt_id, $4::bigint AS now
  ), attempt AS (
    -- An attempt accepted with 202 keeps that answer's status and body when its report or deadline ends it.
    UPDATE attempts SET finished_at = $4, outcome = $9, status_code = COALESCE($10, status_code), duration_ms = $11, error = $12,
      response_body = COALESCE($13, response_body), reported_at = CASE WHEN $14 THEN $4 ELSE reported_at END
    WHERE id = $2 AND outcome IS NULL AND EXISTS (SELECT 1 FROM job)
    RETURNING id, outcome
  ), ${overviewCounts('$15')}, ${JOB_FAILED_EVENT}
  SELECT count(*)::int AS n FROM job`;
export const JobLeaseRenew = `UPDATE jobs SET lease_expires_at = v.expires_at
  FROM unnest($2::text[], $3::bigint[]) AS v(id, expires_at)
  WHERE jobs.id = v.id AND jobs.lease_owner = $1 AND jobs.status IN ('DISPATCHED', 'STARTED')`;
/** A lease waiting for a receiver's report is no dead worker's: it expires at its deadline ($3, now), never earlier. */
export const JobListExpiredLeases = `SELECT ${JOB_COLUMNS}, lease_owner AS "leaseOwner", lease_attempt_id AS "leaseAttemptId" FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND lease_expires_at < $1 AND (lease_owner <> '${AWAITING_REPORT}' OR lease_expires_at < $3)
  ORDER BY lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
/**
 * A claim never started (its worker died, or is stopping): QUEUED again due when it was, and in its
 * QUEUED state as before: being claimed and given back is not a new due time (SPEC section 2).
 */
export const JobRequeueExpired = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_PAUSED}, lease_owner = NULL,
  lease_expires_at = NULL, lease_attempt_id = NULL, updated_at = $2
  WHERE id = $1 AND status = 'DISPATCHED' AND lease_expires_at < $3`;
export const JobReleaseDispatched = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_PAUSED}, lease_owner = NULL,
  lease_expires_at = NULL, updated_at = $2 WHERE lease_owner = $1 AND status = 'DISPATCHED'`;
export const JobListDispatchedTo = `SELECT ${JOB_COLUMNS}, lease_expires_at AS "leaseExpiresAt" FROM jobs
  WHERE status = 'DISPATCHED' AND lease_owner = $1`;
export const JobCountByStatus = 'SELECT status, count(*)::int AS n FROM jobs GROUP BY status';

/** reportBy: the deadline of the attempt waiting for its report, read from its job's lease. */
const attemptWithDeadline = (where: string) => `SELECT ${attemptColumns('a')},
  CASE WHEN j.lease_owner = '${AWAITING_REPORT}' AND j.lease_attempt_id = a.id THEN j.lease_expires_at END AS "reportBy"
  FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE ${where}`;
export const AttemptListByJob = `${attemptWithDeadline('a.job_id = $1')} ORDER BY a.started_at, a.attempt_number`;
export const AttemptGetOfJob = attemptWithDeadline('a.id = $2 AND a.job_id = $1');
export const JobGetById = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`;
/** 202s to projects with asyncCompletion (SPEC section 11), many in one statement: each worker hands its lease to the report's deadline. */
export const AttemptAcceptMany = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::int[], $7::text[])
      AS i(job_id, attempt_id, worker_id, now, deadline, status_code, response_body)
  ), job AS (
    UPDATE jobs SET lease_owner = '${AWAITING_REPORT}', lease_expires_at = i.deadline
    FROM input i
    WHERE jobs.id = i.job_id AND jobs.status = 'STARTED' AND jobs.lease_owner = i.worker_id AND jobs.lease_attempt_id = i.attempt_id
    RETURNING jobs.id
  ), attempt AS (
    UPDATE attempts SET accepted_at = i.now, status_code = i.status_code, response_body = i.response_body
    FROM input i WHERE attempts.id = i.attempt_id AND attempts.outcome IS NULL AND i.job_id IN (SELECT id FROM job)
  )
  SELECT id AS "jobId" FROM job`;
/** The attempt still waits for its report and its deadline is after $3 (now); locked for the report's transaction. */
export const JobAwaitingReportLock = `SELECT 1 AS waiting FROM jobs WHERE id = $1 AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
  AND lease_attempt_id = $2 AND lease_expires_at > $3 FOR UPDATE`;
/** A "running" report: the deadline moves (the job itself does not change, so neither does its updatedAt). */
export const JobReportRunning = `WITH job AS (
    UPDATE jobs SET lease_expires_at = $4 WHERE id = $1 AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
      AND lease_attempt_id = $2 AND lease_expires_at > $3 RETURNING id
  ), attempt AS (
    UPDATE attempts SET reported_at = $3 WHERE id = $2 AND EXISTS (SELECT 1 FROM job)
  )
  SELECT count(*)::int AS n FROM job`;

/**
 * Takes the key for this request, or finds it taken. A concurrent request with the same key
 * waits on the unique index until this transaction ends, then finds the key stored (replay) or
 * gone (this one failed and deleted it) and goes on.
 */
export const IdempotencyKeyClaim = `INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status, response_body, created_at)
  VALUES ($1, $2, $3, $4, 0, '', $5)
  ON CONFLICT (project_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash, response_status = 0,
    response_body = '', created_at = excluded.created_at
  WHERE idempotency_keys.created_at <= $6
  RETURNING 1`;
export const IdempotencyKeyGet = `SELECT request_hash AS "requestHash", response_status AS "statusCode", response_body AS body
  FROM idempotency_keys WHERE project_id = $1 AND endpoint = $2 AND key = $3`;
export const IdempotencyKeyStore = `UPDATE idempotency_keys SET response_status = $4, response_body = $5
  WHERE project_id = $1 AND endpoint = $2 AND key = $3`;
export const IdempotencyKeyDelete = 'DELETE FROM idempotency_keys WHERE project_id = $1 AND endpoint = $2 AND key = $3';

/**
 * Jobs of a team with a quota are created one transaction at a time, so the count cannot be
 * overtaken. Locks the teams in the order of the array (sorted by the caller, the same on every instance).
 */
export const TeamsLock = `SELECT t.id FROM unnest($1::text[]) WITH ORDINALITY AS l(id, ord)
  JOIN teams t ON t.id = l.id ORDER BY l.ord FOR UPDATE OF t`;
/** Each (team, month) pair's jobs created, in the order of the arrays. */
export const UsageSumMany = `SELECT (SELECT COALESCE(SUM(d.jobs_created), 0) FROM usage_daily d
    WHERE d.team_id = m.team_id AND d.day >= m.month_start AND d.day < m.month_end)::bigint AS n
  FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS m(team_id, month_start, month_end, ord)
  ORDER BY m.ord`;
/** A day's count is the sum of its shards (migration 0003). */
export const UsageDaily = `SELECT day, SUM(jobs_created)::bigint AS "jobsCreated" FROM usage_daily
  WHERE team_id = $1 AND day >= $2 AND day < $3 GROUP BY day ORDER BY day`;

/** Wakes the schedulers of every instance; the payload is the due time in ms. */
export const NotifyDue = `SELECT pg_notify('punctual_job_due', $1::text)`;
/** Sent in the transaction of every change to keys, projects, teams or secrets: instances drop their read caches. */
export const NotifyConfigChanged = `SELECT pg_notify('punctual_config_changed', '')`;

/**
 * A list by creation window or by schedule (store.ts, listedByCreation), newest first by
 * (created_at, seq) from ($5, $2) (job-rules.ts, creationListStart) down to $4: per status one
 * range of jobs_project_created (project_id, status, created_at, seq), or of jobs_schedule
 * (schedule_id, status, created_at, seq) for a schedule's, each limited on its own and then
 * merged as JobList's are, so that the read starts at the window's end and stops at the limit
 * however old the window (a read by seq would step over every newer job first).
 */
function newestCreatedFirst(filter: string, statuses: readonly string[]): string {
  const ranges = statuses.map(
    (status) => `SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = ${status}${filter}
    AND created_at >= $4 AND (created_at, seq) < ($5, $2) ORDER BY created_at DESC, seq DESC LIMIT $3`,
  );
  if (ranges.length === 1) return ranges[0]!;
  return `${ranges.map((range) => `(${range})`).join('\n  UNION ALL ')}\n  ORDER BY "createdAt" DESC, seq DESC LIMIT $3`;
}
const EVERY_STATUS = JOB_STATUSES.map((status) => `'${status}'`);
/** One schedule's jobs (`?scheduleId=`); a schedule of another project lists nothing. */
const OF_SCHEDULE = ' AND schedule_id = $6';
export const JobListCreatedBetween = newestCreatedFirst('', EVERY_STATUS);
export const JobListByStatusCreatedBetween = newestCreatedFirst('', ['$6']);
export const JobListBySchedule = newestCreatedFirst(OF_SCHEDULE, EVERY_STATUS);
export const JobListByScheduleStatus = newestCreatedFirst(OF_SCHEDULE, ['$7']);

/** The statement of a page of the jobs list and its arguments (the store runs it; the query-plan tests explain it). */
export function jobListStatement(params: JobListParams): [text: string, values: unknown[]] {
  const status = params.status === null ? [] : [params.status];
  if (listedByCreation(params)) {
    const start = creationListStart(params);
    const values = [params.projectId, start.seq, params.limit, params.createdFrom ?? 0, start.createdAt];
    if (params.scheduleId != null) return [params.status === null ? JobListBySchedule : JobListByScheduleStatus, [...values, params.scheduleId, ...status]];
    return [params.status === null ? JobListCreatedBetween : JobListByStatusCreatedBetween, [...values, ...status]];
  }
  return [params.status === null ? JobList : JobListByStatus, [params.projectId, params.beforeSeq ?? Number.MAX_SAFE_INTEGER, params.limit, ...status]];
}

export const TeamList = `SELECT ${TEAM_COLUMNS} FROM teams ORDER BY created_at, id`;
export const TeamListByUser = `SELECT t.id, t.name, t.plan, t.created_at AS "createdAt" FROM teams t
  JOIN team_memberships m ON m.team_id = t.id WHERE m.user_id = $1 ORDER BY t.created_at, t.id`;

const USER_COLUMNS = 'id, email, is_operator AS "isOperator", created_at AS "createdAt", updated_at AS "updatedAt"';
export const UserInsert = `INSERT INTO users (id, email, password_hash, is_operator, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (email) DO NOTHING`;
export const UserGet = `SELECT ${USER_COLUMNS} FROM users WHERE id = $1`;
export const UserGetByEmail = `SELECT ${USER_COLUMNS}, password_hash AS "passwordHash" FROM users WHERE email = $1`;
export const UserGetPasswordHash = 'SELECT password_hash AS "passwordHash" FROM users WHERE id = $1';
export const UserList = `SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, id`;
export const UserCount = 'SELECT count(*)::int AS n FROM users';
export const UserUpdatePassword = 'UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1';
export const TeamMembershipInsert = `INSERT INTO team_memberships (user_id, team_id, created_at) VALUES ($1, $2, $3)
  ON CONFLICT (user_id, team_id) DO NOTHING`;

export const SessionInsert = `INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`;
export const SessionGet = `SELECT s.token_hash AS "tokenHash", s.user_id AS "userId", s.csrf_token AS "csrfToken",
  s.created_at AS "createdAt", s.expires_at AS "expiresAt", u.email, u.is_operator AS "isOperator",
  u.created_at AS "userCreatedAt", u.updated_at AS "userUpdatedAt"
  FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2`;
export const SessionDelete = 'DELETE FROM sessions WHERE token_hash = $1';
export const SessionDeleteByUser = 'DELETE FROM sessions WHERE user_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)';
export const SessionDeleteExpired = 'DELETE FROM sessions WHERE expires_at <= $1';

/**
 * The migrating session waits as long as it takes: for another instance's migration (the lock) and
 * for a long migration. Set per session, over any default of the role or database.
 */
export const MigrationSessionWithoutTimeouts = 'SET statement_timeout = 0; SET lock_timeout = 0';
export const MigrationLock = 'SELECT pg_advisory_lock($1)';
export const SchemaMigrationsCreate = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`;
export const SchemaMigrationsList = 'SELECT version FROM schema_migrations';
/** Recorded first, in the migration's own transaction (graphile's trick): two sessions cannot both apply it. */
export const SchemaMigrationInsert = 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)';

export const DatabaseNow = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now';
/** Ready means reachable and writable: a replica or a demoted primary is not ready. */
export const DatabaseWritable = "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable";

/** Both channels on the LISTEN connection, in one round trip. */
export const ListenAll = 'LISTEN punctual_job_due; LISTEN punctual_config_changed';
/** The LISTEN connection's heartbeat: any answer proves the connection still carries bytes both ways. */
export const ListenerHeartbeat = 'SELECT 1';

/** When a final job became final; word for word the expression of the index jobs_final (0004_retention.sql). */
const FINAL_AT = "(CASE status WHEN 'COMPLETED' THEN completed_at WHEN 'FAILED' THEN failed_at ELSE cancelled_at END)";
const PRUNABLE_JOBS = `FROM jobs WHERE project_id = $1 AND status IN ('COMPLETED', 'FAILED', 'CANCELLED') AND ${FINAL_AT} <= $2`;
export const ProjectListRetention = 'SELECT id AS "projectId", retention_days AS "retentionDays" FROM projects ORDER BY id';
/**
 * One batch of retention in one statement. SKIP LOCKED: rows another instance is deleting (or a
 * retry is requeueing) are left to it rather than waited for, so instances never queue on each other.
 */
export const JobPruneFinal = `WITH victims AS (
    SELECT seq, id ${PRUNABLE_JOBS} ORDER BY ${FINAL_AT} LIMIT $3 FOR UPDATE SKIP LOCKED
  ), gone_attempts AS (
    DELETE FROM attempts WHERE job_id IN (SELECT id FROM victims) RETURNING 1
  ), gone_jobs AS (
    DELETE FROM jobs WHERE seq IN (SELECT seq FROM victims) RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone_jobs)::int AS jobs, (SELECT count(*) FROM gone_attempts)::int AS attempts`;
export const JobCountPrunable = `SELECT count(*)::int AS jobs,
  COALESCE(SUM((SELECT count(*) FROM attempts a WHERE a.job_id = jobs.id)), 0)::int AS attempts ${PRUNABLE_JOBS}`;
export const IdempotencyKeyPrune = `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM idempotency_keys WHERE created_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const IdempotencyKeyCountPrunable = 'SELECT count(*)::int AS n FROM idempotency_keys WHERE created_at <= $1';
export const EventCountPrunable = 'SELECT count(*)::int AS n FROM events WHERE occurred_at <= $1';
export const UsagePrune = `DELETE FROM usage_daily WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM usage_daily WHERE day < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const UsageCountPrunable = 'SELECT count(*)::int AS n FROM usage_daily WHERE day < $1';
/** The tables and indexes of this store's schema; the server's WAL is shared with other databases and not counted. */
export const StoreSize = `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`;

// Recurring schedules (SPEC section 9).
const SCHEDULE_COLUMNS = `seq, id, project_id AS "projectId", name, cron, timezone, payload, max_retries AS "maxRetries",
  catch_up AS "catchUp", overlap, paused, next_run_at AS "nextRunAt", last_run_at AS "lastRunAt", last_job_id AS "lastJobId",
  skipped_count AS "skippedCount", created_at AS "createdAt", updated_at AS "updatedAt"`;
/** Only while the project has fewer than $17 schedules (the caller holds the project's lock). */
export const ScheduleInsertBelowLimit = `INSERT INTO schedules (id, project_id, name, cron, timezone, payload, max_retries, catch_up,
  overlap, paused, next_run_at, last_run_at, last_job_id, skipped_count, created_at, updated_at)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
  WHERE (SELECT count(*) FROM schedules WHERE project_id = $2) < $17`;
export const ScheduleGet = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 AND project_id = $2`;
export const ScheduleList = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE project_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`;
/** As in ../sqlite/queries.ts: a pause remembers its instant; a resume lets go of a claim the pause cut short. */
export const ScheduleUpdate = `UPDATE schedules SET name = $3, cron = $4, timezone = $5, payload = $6, max_retries = $7, catch_up = $8,
  overlap = $9, paused = $10, next_run_at = $11, updated_at = $12,
  paused_at = CASE WHEN NOT $10 THEN NULL WHEN paused THEN COALESCE(paused_at, $12) ELSE $12 END,
  firing_until = CASE WHEN NOT $10 AND paused THEN NULL ELSE firing_until END
  WHERE id = $1 AND project_id = $2 RETURNING ${SCHEDULE_COLUMNS}, paused_at AS "pausedAt"`;
/** As in ../sqlite/queries.ts: its jobs for instants after its pause that no request has left for, cancelled. */
export const JobCancelOfPausedSchedule = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3,
  schedule_fire_at = NULL, lease_owner = NULL, lease_expires_at = NULL
  WHERE schedule_id = $1 AND schedule_fire_at > $2 AND status IN ('QUEUED', 'DISPATCHED')`;
/** As in ../sqlite/queries.ts. */
export const JobStartedAheadOfSchedule = `SELECT max(run_at) AS "runAt" FROM jobs
  WHERE schedule_id = $1 AND status = 'STARTED' AND schedule_fire_at > $2 AND run_at > $3`;
export const ScheduleDelete = `WITH deleted AS (DELETE FROM schedules WHERE id = $1 AND project_id = $2 RETURNING *),
  cancelled AS (UPDATE jobs SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3
    WHERE schedule_id = (SELECT id FROM deleted) AND status = 'QUEUED')
  SELECT ${SCHEDULE_COLUMNS} FROM deleted`;
/** SKIP LOCKED: instances claiming at once each take other schedules instead of waiting. With the lease each had before (run out). */
export const ScheduleClaimDue = `UPDATE schedules SET firing_until = $3 FROM (
    SELECT seq AS due_seq, firing_until AS held_until FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL AND next_run_at <= $2
      AND (overlap <> 'skip' OR next_run_at <= $1) AND (firing_until IS NULL OR firing_until <= $1)
    ORDER BY next_run_at LIMIT $4 FOR UPDATE SKIP LOCKED) AS due
  WHERE seq = due.due_seq
  RETURNING ${SCHEDULE_COLUMNS}, due.held_until AS "heldUntil"`;
/** Not a schedule paused since its claim (as in ../sqlite/queries.ts). */
export const ScheduleAdvance = `UPDATE schedules SET next_run_at = $3, firing_until = NULL, last_run_at = COALESCE($4, last_run_at),
  last_job_id = COALESCE($5, last_job_id), skipped_count = skipped_count + $6, updated_at = $7
  WHERE id = $1 AND next_run_at = $2 AND NOT paused`;
/** As in ../sqlite/queries.ts. */
export const ScheduleNextWakeAt = `SELECT min(CASE WHEN overlap = 'skip' THEN next_run_at ELSE next_run_at - $1 END) AS "wakeAt"
  FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL AND next_run_at <= $2`;

// Events (SPEC section 10): as in ../sqlite/queries.ts.
const EVENT_COLUMNS = `seq, id, project_id AS "projectId", type, occurred_at AS "occurredAt", data, status, attempt_count AS "attemptCount",
  next_attempt_at AS "nextAttemptAt", last_error AS "lastError", delivered_at AS "deliveredAt"`;
export const EventInsert = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT $1, id, $3, $4::bigint, $5, 'PENDING', $4::bigint, $4::bigint FROM projects WHERE id = $2 AND events_url IS NOT NULL`;
export const EventList = `SELECT ${EVENT_COLUMNS} FROM events WHERE project_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`;
/** SKIP LOCKED: instances claiming at once each take other events instead of waiting. */
export const EventClaimDue = `WITH due AS (
    SELECT seq FROM events WHERE status = 'PENDING' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  UPDATE events SET claimed_by = $3, updated_at = $1, next_attempt_at = $1::bigint + $4::bigint + p.delivery_timeout_ms
  FROM due, projects p WHERE events.seq = due.seq AND p.id = events.project_id
  RETURNING events.seq, events.id, events.project_id AS "projectId", events.type, events.occurred_at AS "occurredAt", events.data,
    events.status, events.attempt_count AS "attemptCount", events.next_attempt_at AS "nextAttemptAt", events.last_error AS "lastError",
    events.delivered_at AS "deliveredAt", events.next_attempt_at AS "leaseUntil"`;
export const EventFinish = `UPDATE events SET status = $5, attempt_count = attempt_count + 1, next_attempt_at = $6,
  last_error = COALESCE($7, last_error), delivered_at = $8, claimed_by = NULL, updated_at = $4
  WHERE id = $1 AND status = 'PENDING' AND claimed_by = $2 AND next_attempt_at = $3`;
export const EventReleaseClaims = `UPDATE events SET claimed_by = NULL, next_attempt_at = $1, updated_at = $1
  WHERE status = 'PENDING' AND claimed_by IS NOT NULL`;
export const EventPrune = `WITH doomed AS (
    SELECT seq FROM events WHERE occurred_at <= $1 ORDER BY occurred_at LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  DELETE FROM events USING doomed WHERE events.seq = doomed.seq`;
export const WebhookHealthGetForUpdate = `SELECT consecutive_failures AS "consecutiveFailures", failing_since AS "failingSince",
  failing_event_at AS "failingEventAt", last_error AS "lastError" FROM webhook_health WHERE project_id = $1 FOR UPDATE`;
/** Takes the row's lock even when there is no row yet: two instances' first failures of a run must not both insert. */
export const WebhookHealthLockProject = 'SELECT 1 FROM projects WHERE id = $1 FOR NO KEY UPDATE';
export const WebhookHealthUpsert = `INSERT INTO webhook_health (project_id, consecutive_failures, failing_since, failing_event_at, last_error)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (project_id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, failing_since = excluded.failing_since,
  failing_event_at = excluded.failing_event_at, last_error = excluded.last_error`;
export const WebhookHealthDelete = 'DELETE FROM webhook_health WHERE project_id = $1';
export const WebhookHealthListFailing = 'SELECT project_id AS "projectId" FROM webhook_health';

// Pause and resume (SPEC section 10): as in ../sqlite/queries.ts.
export const JobHoldBatch = `WITH batch AS (
    SELECT seq FROM jobs WHERE project_id = $1 AND status = 'QUEUED' AND seq > $2 ORDER BY seq LIMIT $3
  ), held AS (
    UPDATE jobs SET on_hold = true FROM batch WHERE jobs.seq = batch.seq AND NOT jobs.on_hold
      AND (SELECT paused FROM projects WHERE id = $1)
  )
  SELECT max(seq) AS "lastSeq", count(*)::int AS n FROM batch`;
export const JobReleaseHeldBatch = `WITH batch AS (
    SELECT seq FROM jobs WHERE project_id = $1 AND status = 'QUEUED' AND on_hold ORDER BY run_at LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  UPDATE jobs SET on_hold = false FROM batch WHERE jobs.seq = batch.seq AND NOT (SELECT paused FROM projects WHERE id = $1)`;
export const ProjectListWithHeldJobs = `SELECT id FROM projects p WHERE NOT paused
  AND EXISTS (SELECT 1 FROM jobs WHERE project_id = p.id AND status = 'QUEUED' AND on_hold)`;
export const ProjectBackoff = 'UPDATE projects SET backoff_until = GREATEST(COALESCE(backoff_until, 0), $2) WHERE id = $1';

// The project overview (../overview-store.ts, 0011_project_overview.sql): a minute's figures are
// the sum of its shards.
/**
 * A project's jobs by status, each counted up to $2 rows (jobs_project_status): one arm per
 * status, so that a status of millions of jobs costs no more than the limit.
 */
export const JobCountByStatusOfProject = JOB_STATUSES.map(
  (status) => `SELECT '${status}' AS status, (SELECT count(*)::int FROM (SELECT 1 FROM jobs
    WHERE project_id = $1 AND status = '${status}' LIMIT $2) AS capped) AS n`,
).join('\n  UNION ALL ');
export const DeliveryMinuteList = `SELECT minute, SUM(attempts)::bigint AS attempts, SUM(failed_attempts)::bigint AS "failedAttempts"
  FROM delivery_minutes WHERE project_id = $1 AND minute >= $2 AND minute < $3 GROUP BY minute ORDER BY minute`;
export const LatenessHistogram = `SELECT bucket, SUM(attempts)::bigint AS attempts FROM lateness_minutes
  WHERE project_id = $1 AND minute >= $2 AND minute < $3 GROUP BY bucket`;
/** The newest failed attempts of the window; an attempt deleted since (retention) drops out. */
export const FailedAttemptListRecent = `SELECT a.job_id AS "jobId", a.id AS "attemptId", a.attempt_number AS "attemptNumber",
  f.finished_at AS "finishedAt", a.outcome, a.status_code AS "statusCode", a.error
  FROM failed_attempts f JOIN attempts a ON a.id = f.attempt_id
  WHERE f.project_id = $1 AND f.finished_at >= $2 AND f.finished_at < $3
  ORDER BY f.finished_at DESC, f.attempt_id DESC LIMIT $4`;
/** Rows another instance is deleting are skipped, not waited for. */
const overviewPrune = (table: string, time: string) => `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM ${table} WHERE ${time} < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const DeliveryMinutePrune = overviewPrune('delivery_minutes', 'minute');
export const LatenessMinutePrune = overviewPrune('lateness_minutes', 'minute');
export const FailedAttemptPrune = overviewPrune('failed_attempts', 'finished_at');
/**
 * Folds the shards (> 0) of minutes before $1 into shard 0, up to $2 rows, in one statement: the
 * sums move, never change. Rows a finish is adding to are skipped, not waited for; shard 0's rows
 * are taken in (project, minute) order, as the finishes take theirs.
 */
const overviewCompact = (table: string, key: string, sums: string[]) => `WITH moved AS (
    DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM ${table} WHERE minute < $1 AND shard > 0 LIMIT $2 FOR UPDATE SKIP LOCKED))
    RETURNING project_id, ${key}, ${sums.join(', ')}
  ), folded AS (
    INSERT INTO ${table} (project_id, ${key}, shard, ${sums.join(', ')})
    SELECT project_id, ${key}, 0, ${sums.map((c) => `sum(${c})`).join(', ')} FROM moved
    GROUP BY project_id, ${key} ORDER BY project_id COLLATE "C", ${key}
    ON CONFLICT (project_id, ${key}, shard) DO UPDATE SET ${sums.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(', ')}
  )
  SELECT count(*)::int AS n FROM moved`;
export const DeliveryMinuteCompact = overviewCompact('delivery_minutes', 'minute', ['attempts', 'failed_attempts']);
export const LatenessMinuteCompact = overviewCompact('lateness_minutes', 'minute, bucket', ['attempts']);
