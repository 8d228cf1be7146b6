-- Punctual schema v1 (PostgreSQL). Instants are epoch milliseconds (bigint), as in the SQLite schema.

CREATE TABLE settings (
  key   text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE teams (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  plan       text NOT NULL,
  created_at bigint NOT NULL
);

CREATE TABLE projects (
  id                     text PRIMARY KEY,
  team_id                text NOT NULL REFERENCES teams (id),
  name                   text NOT NULL,
  webhook_url            text,
  retry_max_retries      integer,
  retry_initial_delay_ms bigint NOT NULL,
  retry_factor           double precision NOT NULL,
  retry_max_delay_ms     bigint NOT NULL,
  delivery_timeout_ms    integer NOT NULL,
  delivery_concurrency   integer NOT NULL,
  accept_any_2xx         boolean NOT NULL,
  created_at             bigint NOT NULL
);
CREATE INDEX projects_team ON projects (team_id, created_at);

CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects (id),
  name         text NOT NULL,
  key_hash     bytea NOT NULL UNIQUE,
  prefix       text NOT NULL,
  created_at   bigint NOT NULL,
  last_used_at bigint,
  revoked_at   bigint
);
CREATE INDEX api_keys_project ON api_keys (project_id, created_at);

CREATE TABLE webhook_secrets (
  id                text PRIMARY KEY,
  project_id        text NOT NULL REFERENCES projects (id),
  secret_ciphertext text NOT NULL,
  created_at        bigint NOT NULL,
  expires_at        bigint
);
CREATE INDEX webhook_secrets_project ON webhook_secrets (project_id, created_at);

-- The payload is text, not jsonb: jsonb refuses \u0000 and reorders keys, and every payload the
-- API accepts must come back byte for byte as JSON.stringify wrote it.
CREATE TABLE jobs (
  seq                       bigserial PRIMARY KEY,
  id                        text NOT NULL UNIQUE,
  project_id                text NOT NULL,
  status                    text NOT NULL,
  payload                   text NOT NULL,
  scheduled_for             bigint,
  run_at                    bigint NOT NULL,
  queued_at                 bigint NOT NULL,
  max_retries               integer NOT NULL,
  attempt_count             integer NOT NULL DEFAULT 0,
  round_start_attempt_count integer NOT NULL DEFAULT 0,
  lease_owner               text,
  lease_expires_at          bigint,
  lease_attempt_id          text,
  last_error                text,
  created_at                bigint NOT NULL,
  updated_at                bigint NOT NULL,
  completed_at              bigint,
  failed_at                 bigint,
  cancelled_at              bigint
);
-- The scheduler reads only this partial index, so jobs waiting far ahead cost it nothing.
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'QUEUED';
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE status IN ('DISPATCHED', 'STARTED');
CREATE INDEX jobs_project ON jobs (project_id, seq);
CREATE INDEX jobs_project_status ON jobs (project_id, status, seq);

CREATE TABLE attempts (
  id             text PRIMARY KEY,
  job_id         text NOT NULL,
  attempt_number integer NOT NULL,
  started_at     bigint NOT NULL,
  finished_at    bigint,
  outcome        text,
  status_code    integer,
  duration_ms    integer,
  error          text,
  response_body  text
);
CREATE INDEX attempts_job ON attempts (job_id, started_at);

CREATE TABLE idempotency_keys (
  project_id      text NOT NULL,
  endpoint        text NOT NULL,
  key             text NOT NULL,
  request_hash    text NOT NULL,
  response_status integer NOT NULL,
  response_body   text NOT NULL,
  created_at      bigint NOT NULL,
  PRIMARY KEY (project_id, endpoint, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Jobs created per team per UTC day: the monthly quota and the usage chart read this, never count(*) over jobs.
CREATE TABLE usage_daily (
  team_id      text NOT NULL,
  day          text NOT NULL,
  jobs_created bigint NOT NULL,
  PRIMARY KEY (team_id, day)
);
