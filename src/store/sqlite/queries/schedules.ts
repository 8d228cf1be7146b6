import { limitBy } from './bound-parameters.js';
/**
 * The embedded store's SQL for recurring schedules (SPEC section 9), named after the store method
 * that runs it, as in ../../postgres/queries/ under the same file name. Columns are aliased to the
 * camelCase row types of ../../store.ts so rows need little mapping.
 */

// Recurring schedules (SPEC section 9).
const SCHEDULE_COLUMNS = `seq, id, project_id AS projectId, name, cron, timezone, payload, max_retries AS maxRetries,
  catch_up AS catchUp, overlap, paused, next_run_at AS nextRunAt, last_run_at AS lastRunAt, last_job_id AS lastJobId,
  skipped_count AS skippedCount, created_at AS createdAt, updated_at AS updatedAt, tags, concurrency_key AS concurrencyKey`;
export const ScheduleInsertBelowLimit = `INSERT INTO schedules (id, project_id, name, cron, timezone, payload, max_retries, catch_up,
  overlap, paused, next_run_at, last_run_at, last_job_id, skipped_count, created_at, updated_at, tags, concurrency_key)
  SELECT @id, @projectId, @name, @cron, @timezone, @payload, @maxRetries, @catchUp, @overlap, @paused, @nextRunAt, @lastRunAt,
    @lastJobId, @skippedCount, @createdAt, @updatedAt, @tags, @concurrencyKey
  WHERE (SELECT count(*) FROM schedules WHERE project_id = @projectId) < @maxPerProject`;
export const ScheduleGet = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = ? AND project_id = ?`;
export const ScheduleList = `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE project_id = @projectId AND seq < @beforeSeq
  ORDER BY seq DESC ${limitBy('@limit')}`;
/**
 * A pause remembers its instant (kept while the schedule stays paused, cleared by a resume). A
 * resume lets go of any claim a fire cut short by the pause still holds (its advance was refused):
 * the schedule fires again at once, not when that claim runs out.
 */
export const ScheduleUpdate = `UPDATE schedules SET name = @name, cron = @cron, timezone = @timezone, payload = @payload,
  max_retries = @maxRetries, catch_up = @catchUp, overlap = @overlap, paused = @paused, next_run_at = @nextRunAt, updated_at = @now, tags = @tags,
  concurrency_key = @concurrencyKey,
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
    ORDER BY next_run_at ${limitBy('@limit')}`;
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
