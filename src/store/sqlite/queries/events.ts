import { limitBy } from './bound-parameters.js';
/**
 * The embedded store's SQL for events and webhook health (SPEC section 10), named after the store
 * method that runs it, as in ../../postgres/queries/ under the same file name. Columns are aliased
 * to the camelCase row types of ../../store.ts so rows need little mapping.
 */

// Events (SPEC section 10): see ../../event-store.ts.
const EVENT_COLUMNS = `seq, id, project_id AS projectId, type, occurred_at AS occurredAt, data, status, attempt_count AS attemptCount,
  next_attempt_at AS nextAttemptAt, last_error AS lastError, delivered_at AS deliveredAt`;
/**
 * Whether an event of `type` is sent: the project (`p`) has an eventsUrl and subscribes to the type
 * (eventTypes, SPEC section 13; null subscribes to every type but job.completed).
 */
const sentTo = (type: string) => `(p.events_url IS NOT NULL AND ((p.event_types IS NULL AND ${type} <> 'job.completed')
  OR EXISTS (SELECT 1 FROM json_each(p.event_types) WHERE value = ${type})))`;
/**
 * Every event is recorded (the Events tab is the project's activity feed): PENDING and due at once
 * when it is sent, NOT_SENT otherwise. job.completed, one per job, only when it is sent.
 */
export const EventInsert = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT @id, p.id, @type, @occurredAt, @data, CASE WHEN ${sentTo('@type')} THEN 'PENDING' ELSE 'NOT_SENT' END,
    CASE WHEN ${sentTo('@type')} THEN @occurredAt END, @occurredAt FROM projects p
  WHERE p.id = @projectId AND (@type <> 'job.completed' OR ${sentTo('@type')})`;
/** job.failed for a job whose last attempt just failed (JobFinishAttempt set it FAILED); its id comes from the attempt's. */
export const EventInsertJobFailed = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT @eventId, j.project_id, 'job.failed', @now,
    CASE WHEN j.schedule_id IS NULL THEN json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error)
      ELSE json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'lastError', j.last_error, 'scheduleId', j.schedule_id) END,
    CASE WHEN ${sentTo("'job.failed'")} THEN 'PENDING' ELSE 'NOT_SENT' END, CASE WHEN ${sentTo("'job.failed'")} THEN @now END, @now
  FROM jobs j JOIN projects p ON p.id = j.project_id
  WHERE j.id = @jobId AND j.status = 'FAILED'`;
/** job.completed (SPEC section 13) for a job whose attempt just completed it, only for a project subscribed to it. */
export const EventInsertJobCompleted = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT @eventId, j.project_id, 'job.completed', @now,
    CASE WHEN j.schedule_id IS NULL THEN json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'durationMs', @durationMs)
      ELSE json_object('jobId', j.id, 'attemptCount', j.attempt_count, 'scheduleId', j.schedule_id, 'durationMs', @durationMs) END,
    'PENDING', @now, @now
  FROM jobs j JOIN projects p ON p.id = j.project_id
  WHERE j.id = @jobId AND j.status = 'COMPLETED' AND ${sentTo("'job.completed'")}`;
export const EventList = `SELECT ${EVENT_COLUMNS} FROM events WHERE project_id = @projectId AND seq < @beforeSeq ORDER BY seq DESC ${limitBy('@limit')}`;
export const EventClaimDue = `UPDATE events SET claimed_by = @workerId, updated_at = @now,
  next_attempt_at = @now + @leaseExtraMs + (SELECT delivery_timeout_ms FROM projects WHERE projects.id = events.project_id)
  WHERE seq IN (SELECT seq FROM events WHERE status = 'PENDING' AND next_attempt_at <= @now ORDER BY next_attempt_at ${limitBy('@limit')})
  RETURNING ${EVENT_COLUMNS}, next_attempt_at AS leaseUntil`;
/** Guarded on the claim: a worker whose claim lapsed (and was taken over) changes nothing. */
export const EventFinish = `UPDATE events SET status = @status, attempt_count = attempt_count + 1, next_attempt_at = @nextAttemptAt,
  last_error = COALESCE(@error, last_error), delivered_at = @deliveredAt, claimed_by = NULL, updated_at = @now
  WHERE id = @eventId AND status = 'PENDING' AND claimed_by = @workerId AND next_attempt_at = @leaseUntil`;
export const EventReleaseClaims = `UPDATE events SET claimed_by = NULL, next_attempt_at = @now, updated_at = @now
  WHERE status = 'PENDING' AND claimed_by IS NOT NULL`;
export const EventPrune = `DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE occurred_at <= @occurredBy
  ORDER BY occurred_at ${limitBy('@limit')})`;
export const WebhookHealthGet = `SELECT consecutive_failures AS consecutiveFailures, failing_since AS failingSince,
  failing_event_at AS failingEventAt, last_error AS lastError FROM webhook_health WHERE project_id = ?`;
export const WebhookHealthUpsert = `INSERT INTO webhook_health (project_id, consecutive_failures, failing_since, failing_event_at, last_error)
  VALUES (@projectId, @consecutiveFailures, @failingSince, @failingEventAt, @lastError)
  ON CONFLICT (project_id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, failing_since = excluded.failing_since,
  failing_event_at = excluded.failing_event_at, last_error = excluded.last_error`;
export const WebhookHealthDelete = 'DELETE FROM webhook_health WHERE project_id = ?';
export const WebhookHealthListFailing = 'SELECT project_id AS projectId FROM webhook_health';

// Receiver health (SPEC section 13): a held project and its probes (0017_receiver_health.sql).
export const ProjectHoldStateGet = 'SELECT hold_on_failure AS holdOnFailure, held_since AS heldSince FROM projects WHERE id = ?';
export const ProjectHoldGet = `SELECT held_since AS heldSince, next_probe_at AS nextProbeAt, probe_interval_ms AS probeIntervalMs
  FROM projects WHERE id = ? AND held_since IS NOT NULL`;
export const ProjectHoldSet = `UPDATE projects SET held_since = @heldSince, next_probe_at = @nextProbeAt, probe_interval_ms = @probeIntervalMs
  WHERE id = @projectId AND held_since IS NULL`;
/** One conditional update claims each due probe: an instance whose update finds next_probe_at moved on claims nothing. */
export const WebhookProbeClaimDue = `UPDATE projects SET probe_interval_ms = min(probe_interval_ms * 2, @maxMs),
  next_probe_at = @now + min(probe_interval_ms * 2, @maxMs)
  WHERE next_probe_at <= @now AND held_since IS NOT NULL AND paused = 0 RETURNING id`;
export const WebhookProbeNextAt = 'SELECT min(next_probe_at) AS at FROM projects WHERE next_probe_at IS NOT NULL AND held_since IS NOT NULL AND paused = 0';
export const WebhookHoldEnd = `UPDATE projects SET held_since = NULL, next_probe_at = NULL, probe_interval_ms = NULL
  WHERE id = ? AND held_since IS NOT NULL`;
/** Failing projects not held, and held ones (FAILING_AFTER of ../../event-store.ts is @failingAfter). */
export const WebhookHealthCounts = `SELECT (SELECT count(*) FROM webhook_health w JOIN projects p ON p.id = w.project_id
    WHERE w.consecutive_failures >= @failingAfter AND p.held_since IS NULL) AS failing,
  (SELECT count(*) FROM projects WHERE held_since IS NOT NULL) AS held`;
