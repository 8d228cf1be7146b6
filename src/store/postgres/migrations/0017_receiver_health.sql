-- Receiver health (SPEC section 13): hold, probe, resume; event subscriptions; retryPolicy.stopOn.
ALTER TABLE projects ADD COLUMN hold_on_failure boolean NOT NULL DEFAULT false;
-- The event types sent to the eventsUrl; null: the default set (all but job.completed).
ALTER TABLE projects ADD COLUMN event_types text[];
-- HTTP statuses that end a job at once.
ALTER TABLE projects ADD COLUMN retry_stop_on integer[] NOT NULL DEFAULT '{}';
-- A held project (holdOnFailure, turned failing): since when, when it is probed next, and the
-- interval that probe opens (30 s doubling to 10 min). All null while not held. Written in the
-- transaction that records the failure that turns it failing; a probe is claimed by moving
-- next_probe_at on, so that one instance probes each time.
ALTER TABLE projects ADD COLUMN held_since bigint;
ALTER TABLE projects ADD COLUMN next_probe_at bigint;
ALTER TABLE projects ADD COLUMN probe_interval_ms bigint;
-- A held project is stopped as a paused one is (claims and starts step over it, its QUEUED jobs
-- are out of jobs_due): the index claims read for both.
DROP INDEX projects_paused;
CREATE INDEX projects_stopped ON projects (id) WHERE paused OR held_since IS NOT NULL;
CREATE INDEX projects_probe_due ON projects (next_probe_at) WHERE next_probe_at IS NOT NULL;
