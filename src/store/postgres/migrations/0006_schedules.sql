-- Recurring schedules (SPEC section 9).
CREATE TABLE schedules (
  seq           bigserial PRIMARY KEY,
  id            text NOT NULL UNIQUE,
  project_id    text NOT NULL REFERENCES projects (id),
  name          text,
  cron          text NOT NULL,
  timezone      text NOT NULL,
  payload       text NOT NULL,
  max_retries   integer,
  catch_up      text NOT NULL,
  overlap       text NOT NULL,
  paused        boolean NOT NULL DEFAULT false,
  -- The next fire instant; null once the expression fires no more.
  next_run_at   bigint,
  last_run_at   bigint,
  last_job_id   text,
  skipped_count integer NOT NULL DEFAULT 0,
  -- An instance creating this schedule's jobs holds it until then (a lease in the database, not in
  -- memory: one that dies lets go when it expires).
  firing_until  bigint,
  created_at    bigint NOT NULL,
  updated_at    bigint NOT NULL
);
CREATE INDEX schedules_project ON schedules (project_id, seq);
-- The firing loop reads only schedules that will fire.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused AND next_run_at IS NOT NULL;

-- A job a schedule created: its schedule, and for a fire of the cron (not a trigger) the fire
-- instant. The unique key makes a fire create its job once, however many instances try.
ALTER TABLE jobs ADD COLUMN schedule_id text;
ALTER TABLE jobs ADD COLUMN schedule_fire_at bigint;
CREATE UNIQUE INDEX jobs_schedule_fire ON jobs (schedule_id, schedule_fire_at) WHERE schedule_fire_at IS NOT NULL;
CREATE INDEX jobs_schedule ON jobs (schedule_id, status) WHERE schedule_id IS NOT NULL;
