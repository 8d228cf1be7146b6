-- Recurring schedules (SPEC section 9).
CREATE TABLE schedules (
  seq           INTEGER PRIMARY KEY,
  id            TEXT NOT NULL UNIQUE,
  project_id    TEXT NOT NULL REFERENCES projects (id),
  name          TEXT,
  cron          TEXT NOT NULL,
  timezone      TEXT NOT NULL,
  payload       TEXT NOT NULL,
  max_retries   INTEGER,
  catch_up      TEXT NOT NULL,
  overlap       TEXT NOT NULL,
  paused        INTEGER NOT NULL DEFAULT 0,
  -- The next fire instant; null once the expression fires no more.
  next_run_at   INTEGER,
  last_run_at   INTEGER,
  last_job_id   TEXT,
  skipped_count INTEGER NOT NULL DEFAULT 0,
  -- An instance creating this schedule's jobs holds it until then (a lease in the file, not in
  -- memory: one that dies lets go when it expires).
  firing_until  INTEGER,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
) STRICT;
CREATE INDEX schedules_project ON schedules (project_id, seq);
-- The firing loop reads only schedules that will fire.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE paused = 0 AND next_run_at IS NOT NULL;

-- A job a schedule created: its schedule, and for a fire of the cron (not a trigger) the fire
-- instant. The unique key makes a fire create its job once, however many instances try.
ALTER TABLE jobs ADD COLUMN schedule_id TEXT;
ALTER TABLE jobs ADD COLUMN schedule_fire_at INTEGER;
CREATE UNIQUE INDEX jobs_schedule_fire ON jobs (schedule_id, schedule_fire_at) WHERE schedule_fire_at IS NOT NULL;
CREATE INDEX jobs_schedule ON jobs (schedule_id, status) WHERE schedule_id IS NOT NULL;
