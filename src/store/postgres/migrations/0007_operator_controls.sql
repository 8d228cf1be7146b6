-- Operator controls (SPEC section 10): pause, events, bulk replay and the list filters.
ALTER TABLE projects ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE projects ADD COLUMN events_url text;
ALTER TABLE projects ADD COLUMN events_format text NOT NULL DEFAULT 'json';

-- Events to a project's eventsUrl: an outbox, written in the transaction of what they tell, and
-- delivered (with retries) by whichever instance claims them.
CREATE TABLE events (
  seq             bigserial PRIMARY KEY,
  id              text NOT NULL UNIQUE,
  project_id      text NOT NULL REFERENCES projects (id),
  type            text NOT NULL,
  occurred_at     bigint NOT NULL,
  data            text NOT NULL,
  -- PENDING until delivered (DELIVERED) or out of retries (FAILED).
  status          text NOT NULL,
  attempt_count   integer NOT NULL DEFAULT 0,
  -- While PENDING: when the next attempt is due. A claim moves it past the attempt's timeout, so
  -- an instance that dies mid-attempt lets the event fall due again (a lease in the database).
  next_attempt_at bigint,
  claimed_by      text,
  last_error      text,
  delivered_at    bigint,
  updated_at      bigint NOT NULL
);
CREATE INDEX events_project ON events (project_id, seq);
CREATE INDEX events_due ON events (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX events_occurred ON events (occurred_at);

-- A project's run of failed attempts, for webhook.failing and webhook.recovered. A row exists
-- only while the project has failures in a row.
CREATE TABLE webhook_health (
  project_id           text PRIMARY KEY REFERENCES projects (id),
  consecutive_failures integer NOT NULL,
  failing_since        bigint NOT NULL,
  -- When the last webhook.failing was recorded; null until 10 failures in a row.
  failing_event_at     bigint,
  last_error           text
);

-- Bulk replay walks a project's FAILED jobs by failure time, oldest first; only failed jobs are in it.
CREATE INDEX jobs_failed ON jobs (project_id, failed_at) WHERE status = 'FAILED';
-- The list filtered by schedule reads one range per status by seq, as the project's list does.
DROP INDEX jobs_schedule;
CREATE INDEX jobs_schedule ON jobs (schedule_id, status, seq) WHERE schedule_id IS NOT NULL;
-- A paused project's QUEUED jobs are held: out of jobs_due, so that the scheduler, which reads
-- that index earliest first, never steps over a paused backlog (100,000 held jobs cost each claim
-- about 20 ms when they were in it). A job entering QUEUED takes its project's paused flag; a pause
-- or resume holds or releases the project's jobs in batches (jobs_held, earliest due first).
ALTER TABLE jobs ADD COLUMN on_hold boolean NOT NULL DEFAULT false;
DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'QUEUED' AND NOT on_hold;
CREATE INDEX jobs_held ON jobs (project_id, run_at) WHERE status = 'QUEUED' AND on_hold;
-- Claims and starts step over paused projects' jobs; few projects are paused at once.
CREATE INDEX projects_paused ON projects (id) WHERE paused;
