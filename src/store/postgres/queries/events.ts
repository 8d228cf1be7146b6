/**
 * The PostgreSQL store's SQL for events and webhook health (SPEC section 10), named as in
 * ../../sqlite/queries/ under the same file name, so a diff shows both dialects side by side.
 * Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

// Events (SPEC section 10): as in ../../sqlite/queries/events.ts.
const EVENT_COLUMNS = `seq, id, project_id AS "projectId", type, occurred_at AS "occurredAt", data, status, attempt_count AS "attemptCount",
  next_attempt_at AS "nextAttemptAt", last_error AS "lastError", delivered_at AS "deliveredAt"`;
/**
 * Whether an event of `type` is sent: the project (`p`) has an eventsUrl and subscribes to the type
 * (eventTypes, SPEC section 13; null subscribes to every type but job.completed).
 */
export const sentTo = (type: string) => `(p.events_url IS NOT NULL AND ((p.event_types IS NULL AND ${type} <> 'job.completed') OR ${type} = ANY(p.event_types)))`;
/** As in ../../sqlite/queries/events.ts: every event recorded, PENDING when sent, NOT_SENT otherwise; job.completed only when sent. */
export const EventInsert = `INSERT INTO events (id, project_id, type, occurred_at, data, status, next_attempt_at, updated_at)
  SELECT $1, p.id, $3, $4::bigint, $5, CASE WHEN ${sentTo('$3::text')} THEN 'PENDING' ELSE 'NOT_SENT' END,
    CASE WHEN ${sentTo('$3::text')} THEN $4::bigint END, $4::bigint FROM projects p
  WHERE p.id = $2 AND ($3::text <> 'job.completed' OR ${sentTo('$3::text')})`;
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
/**
 * Takes the row's lock even when there is no row yet: two instances' first failures of a run must
 * not both insert. Reads whether the project holds on failure and is held (0017_receiver_health.sql).
 */
export const WebhookHealthLockProject = `SELECT hold_on_failure AS "holdOnFailure", held_since AS "heldSince" FROM projects WHERE id = $1 FOR NO KEY UPDATE`;
export const WebhookHealthUpsert = `INSERT INTO webhook_health (project_id, consecutive_failures, failing_since, failing_event_at, last_error)
  VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (project_id) DO UPDATE SET consecutive_failures = excluded.consecutive_failures, failing_since = excluded.failing_since,
  failing_event_at = excluded.failing_event_at, last_error = excluded.last_error`;
export const WebhookHealthDelete = 'DELETE FROM webhook_health WHERE project_id = $1';
export const WebhookHealthListFailing = 'SELECT project_id AS "projectId" FROM webhook_health';
export const WebhookHealthGet = `SELECT consecutive_failures AS "consecutiveFailures", failing_since AS "failingSince",
  failing_event_at AS "failingEventAt", last_error AS "lastError" FROM webhook_health WHERE project_id = $1`;

// Receiver health (SPEC section 13): as in ../../sqlite/queries/events.ts.
export const ProjectHoldGet = `SELECT held_since AS "heldSince", next_probe_at AS "nextProbeAt", probe_interval_ms AS "probeIntervalMs"
  FROM projects WHERE id = $1 AND held_since IS NOT NULL`;
export const ProjectHoldSet = 'UPDATE projects SET held_since = $2, next_probe_at = $3, probe_interval_ms = $4 WHERE id = $1 AND held_since IS NULL';
/**
 * Under READ COMMITTED an instance whose update waited on another's re-reads the row after that
 * commit, finds next_probe_at moved on, and claims nothing: one probe each time, across instances.
 */
export const WebhookProbeClaimDue = `UPDATE projects SET probe_interval_ms = LEAST(probe_interval_ms * 2, $2::bigint),
  next_probe_at = $1::bigint + LEAST(probe_interval_ms * 2, $2::bigint)
  WHERE next_probe_at <= $1 AND held_since IS NOT NULL AND NOT paused RETURNING id`;
export const WebhookProbeNextAt = 'SELECT min(next_probe_at) AS at FROM projects WHERE next_probe_at IS NOT NULL AND held_since IS NOT NULL AND NOT paused';
export const WebhookHoldEnd = `UPDATE projects SET held_since = NULL, next_probe_at = NULL, probe_interval_ms = NULL
  WHERE id = $1 AND held_since IS NOT NULL`;
export const WebhookHealthCounts = `SELECT (SELECT count(*)::int FROM webhook_health w JOIN projects p ON p.id = w.project_id
    WHERE w.consecutive_failures >= $1 AND p.held_since IS NULL) AS failing,
  (SELECT count(*)::int FROM projects WHERE held_since IS NOT NULL) AS held`;
