/**
 * The PostgreSQL store's SQL for delivery attempts, named as in ../../sqlite/queries/ under the
 * same file name, so a diff shows both dialects side by side. Aliases are quoted: PostgreSQL folds
 * unquoted names to lower case.
 */
import { AWAITING_REPORT } from '../../job-store.js';
import { LATENESS_BOUNDS, MINUTE_MS } from '../../overview-store.js';
import { PROJECT_STOPPED, STOPPED_PROJECTS, backedOffProjects } from './fragments.js';
import { sentTo } from './events.js';

/** The lateness buckets' bounds as an array literal: constants of the code, never data. */
const LATENESS_BOUNDS_ARRAY = `'{${LATENESS_BOUNDS.join(',')}}'::bigint[]`;
const attemptColumns = (t: string) => `${t}.id, ${t}.job_id AS "jobId", ${t}.attempt_number AS "attemptNumber",
  ${t}.started_at AS "startedAt", ${t}.finished_at AS "finishedAt", ${t}.outcome, ${t}.status_code AS "statusCode",
  ${t}.duration_ms AS "durationMs", ${t}.error, ${t}.response_body AS "responseBody", ${t}.accepted_at AS "acceptedAt",
  ${t}.reported_at AS "reportedAt"`;
/**
 * Many attempts' STARTED and their attempt rows in one statement, each guarded by its lease. A job
 * of a paused or held project is not started: claimed before the pause and not yet sent, it is QUEUED again
 * as it was, due when it was.
 */
export const AttemptStartMany = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS i(job_id, attempt_id, worker_id, now, lease_expires_at)
  ), paused AS (${STOPPED_PROJECTS}), backed_off AS (
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
 * job.failed (SPEC section 10) for each job of the CTE `job` that the finish made FAILED, and
 * job.completed (SPEC section 13) for each it made COMPLETED when its project subscribes to it, in
 * the finish's own statement. Their id is the attempt's (event-store.ts, jobFailedEventId); their
 * data is built as the embedded store builds it (EventInsertJobFailed, EventInsertJobCompleted).
 */
const JOB_EVENTS = `failed_event AS (
    INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
    SELECT 'evt_' || substr(j.attempt_id, 5), j.project_id, 'job.failed', j.now,
      CASE WHEN j.schedule_id IS NULL THEN json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error)
        ELSE json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error, 'scheduleId', j.schedule_id) END::text,
      CASE WHEN ${sentTo("'job.failed'")} THEN 'PENDING' ELSE 'NOT_SENT' END, CASE WHEN ${sentTo("'job.failed'")} THEN j.now END, j.now
    FROM job j JOIN projects p ON p.id = j.project_id WHERE j.status = 'FAILED'
  ), completed_event AS (
    INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
    SELECT 'evt_' || substr(j.attempt_id, 5), j.project_id, 'job.completed', j.now,
      CASE WHEN j.schedule_id IS NULL THEN json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'durationMs', j.duration_ms)
        ELSE json_build_object('jobId', j.id, 'attemptCount', j.attempt_count, 'scheduleId', j.schedule_id, 'durationMs', j.duration_ms) END::text,
      'PENDING', j.now, j.now
    FROM job j JOIN projects p ON p.id = j.project_id WHERE j.status = 'COMPLETED' AND ${sentTo("'job.completed'")}
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
      on_hold = CASE WHEN i.status = 'QUEUED' THEN ${PROJECT_STOPPED} ELSE jobs.on_hold END,
      round_start_attempt_count = jobs.round_start_attempt_count + i.released,
      lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
      last_error = COALESCE(i.last_error, jobs.last_error), updated_at = i.now,
      completed_at = CASE WHEN i.status = 'COMPLETED' THEN i.now ELSE jobs.completed_at END,
      failed_at = CASE WHEN i.status = 'FAILED' THEN i.now ELSE jobs.failed_at END
    FROM input i
    WHERE jobs.id = i.job_id AND jobs.status = 'STARTED' AND jobs.lease_owner = i.worker_id AND jobs.lease_attempt_id = i.attempt_id
    RETURNING jobs.id, jobs.project_id, jobs.status, jobs.attempt_count, jobs.last_error, jobs.schedule_id, i.attempt_id, i.now, i.duration_ms
  ), attempt AS (
    UPDATE attempts SET finished_at = i.now, outcome = i.outcome, status_code = COALESCE(i.status_code, attempts.status_code),
      duration_ms = i.duration_ms, error = i.error, response_body = COALESCE(i.response_body, attempts.response_body)
    FROM input i WHERE attempts.id = i.attempt_id AND attempts.outcome IS NULL AND i.job_id IN (SELECT id FROM job)
    RETURNING attempts.id, i.outcome
  ), ${overviewCounts('$14')}, ${JOB_EVENTS}
  SELECT id AS "jobId" FROM job`;
/** Guarded on the lease and the attempt: a worker whose lease was taken over changes nothing. */
export const AttemptFinish = `WITH job AS (
    UPDATE jobs SET status = $5::text,
      run_at = COALESCE($6::bigint, run_at), queued_at = CASE WHEN $5::text = 'QUEUED' THEN $4::bigint ELSE queued_at END,
      on_hold = CASE WHEN $5::text = 'QUEUED' THEN ${PROJECT_STOPPED} ELSE on_hold END,
      round_start_attempt_count = round_start_attempt_count + $7::int,
      lease_owner = NULL, lease_expires_at = NULL, lease_attempt_id = NULL,
      last_error = COALESCE($8::text, last_error), updated_at = $4::bigint,
      completed_at = CASE WHEN $5::text = 'COMPLETED' THEN $4::bigint ELSE completed_at END,
      failed_at = CASE WHEN $5::text = 'FAILED' THEN $4::bigint ELSE failed_at END
    WHERE id = $1 AND status = 'STARTED' AND lease_owner = $3 AND lease_attempt_id = $2
    RETURNING id, project_id, status, attempt_count, last_error, schedule_id, $2::text AS attempt_id, $4::bigint AS now, $11::int AS duration_ms
  ), attempt AS (
    -- An attempt accepted with 202 keeps that answer's status and body when its report or deadline ends it.
    UPDATE attempts SET finished_at = $4, outcome = $9, status_code = COALESCE($10, status_code), duration_ms = $11, error = $12,
      response_body = COALESCE($13, response_body), reported_at = CASE WHEN $14 THEN $4 ELSE reported_at END
    WHERE id = $2 AND outcome IS NULL AND EXISTS (SELECT 1 FROM job)
    RETURNING id, outcome
  ), ${overviewCounts('$15')}, ${JOB_EVENTS}
  SELECT count(*)::int AS n FROM job`;
/** reportBy: the deadline of the attempt waiting for its report, read from its job's lease. */
const attemptWithDeadline = (where: string) => `SELECT ${attemptColumns('a')},
  CASE WHEN j.lease_owner = '${AWAITING_REPORT}' AND j.lease_attempt_id = a.id THEN j.lease_expires_at END AS "reportBy"
  FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE ${where}`;
export const AttemptListByJob = `${attemptWithDeadline('a.job_id = $1')} ORDER BY a.started_at, a.attempt_number`;
export const AttemptGetOfJob = attemptWithDeadline('a.id = $2 AND a.job_id = $1');
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
