/**
 * The PostgreSQL store's SQL for recurring schedules (SPEC section 9), named as in
 * ../../sqlite/queries/ under the same file name, so a diff shows both dialects side by side.
 * Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

// Recurring schedules (SPEC section 9).
const SCHEDULE_COLUMNS = `seq, id, project_id AS "projectId", name, cron, timezone, payload, max_retries AS "maxRetries",
  catch_up AS "catchUp", overlap, paused, next_run_at AS "nextRunAt", last_run_at AS "lastRunAt", last_job_id AS "lastJobId",
  skipped_count AS "skippedCount", created_at AS "createdAt", updated_at AS "updatedAt", tags, concurrency_key AS "concurrencyKey"`;
/** Only while the project has fewer than $17 schedules (the caller holds the project's lock); $18 its tags, $19 its concurrencyKey. */
export const ScheduleInsertBelowLimit = `INSERT INTO schedules (id, project_id, name, cron, timezone, payload, max_retries, catch_up,
  overlap, paused, next_run_at, last_run_at, last_job_id, skipped_count, created_at, updated_at, tags, concurrency_key)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $18, $19
  WHERE (SELECT count(*) FROM schedules WHERE project_id = $2) < $17`;
export const ScheduleGet = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 AND project_id = $2`;
export const ScheduleList = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE project_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`;
/** As in ../../sqlite/queries/schedules.ts: a pause remembers its instant; a resume lets go of a claim the pause cut short. $13: its tags, $14 its concurrencyKey. */
export const ScheduleUpdate = `UPDATE schedules SET name = $3, cron = $4, timezone = $5, payload = $6, max_retries = $7, catch_up = $8,
  overlap = $9, paused = $10, next_run_at = $11, updated_at = $12, tags = $13, concurrency_key = $14,
  paused_at = CASE WHEN NOT $10 THEN NULL WHEN paused THEN COALESCE(paused_at, $12) ELSE $12 END,
  firing_until = CASE WHEN NOT $10 AND paused THEN NULL ELSE firing_until END
  WHERE id = $1 AND project_id = $2 RETURNING ${SCHEDULE_COLUMNS}, paused_at AS "pausedAt"`;
/** As in ../../sqlite/queries/schedules.ts: its jobs for instants after its pause that no request has left for, cancelled. */
export const JobCancelOfPausedSchedule = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3,
  schedule_fire_at = NULL, lease_owner = NULL, lease_expires_at = NULL
  WHERE schedule_id = $1 AND schedule_fire_at > $2 AND status IN ('QUEUED', 'DISPATCHED')`;
/** As in ../../sqlite/queries/schedules.ts. */
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
/** Not a schedule paused since its claim (as in ../../sqlite/queries/schedules.ts). */
export const ScheduleAdvance = `UPDATE schedules SET next_run_at = $3, firing_until = NULL, last_run_at = COALESCE($4, last_run_at),
  last_job_id = COALESCE($5, last_job_id), skipped_count = skipped_count + $6, updated_at = $7
  WHERE id = $1 AND next_run_at = $2 AND NOT paused`;
/** As in ../../sqlite/queries/schedules.ts. */
export const ScheduleNextWakeAt = `SELECT min(CASE WHEN overlap = 'skip' THEN next_run_at ELSE next_run_at - $1 END) AS "wakeAt"
  FROM schedules WHERE NOT paused AND next_run_at IS NOT NULL AND next_run_at <= $2`;
