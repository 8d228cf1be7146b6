-- Punctual schema v1 (SQLite). Instants are epoch milliseconds (INTEGER).

CREATE TABLE settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE teams (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  plan       TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE projects (
  id                     TEXT PRIMARY KEY,
  team_id                TEXT NOT NULL REFERENCES teams (id),
  name                   TEXT NOT NULL,
  webhook_url            TEXT,
  retry_max_retries      INTEGER,
  retry_initial_delay_ms INTEGER NOT NULL,
  retry_factor           REAL NOT NULL,
  retry_max_delay_ms     INTEGER NOT NULL,
  delivery_timeout_ms    INTEGER NOT NULL,
  delivery_concurrency   INTEGER NOT NULL,
  accept_any_2xx         INTEGER NOT NULL,
  created_at             INTEGER NOT NULL
) STRICT;
CREATE INDEX projects_team ON projects (team_id, created_at);

CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  project_id   TEXT NOT NULL REFERENCES projects (id),
  name         TEXT NOT NULL,
  key_hash     BLOB NOT NULL UNIQUE,
  prefix       TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  last_used_at INTEGER,
  revoked_at   INTEGER
) STRICT;
CREATE INDEX api_keys_project ON api_keys (project_id, created_at);

CREATE TABLE webhook_secrets (
  id                TEXT PRIMARY KEY,
  project_id        TEXT NOT NULL REFERENCES projects (id),
  secret_ciphertext TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER
) STRICT;
CREATE INDEX webhook_secrets_project ON webhook_secrets (project_id, created_at);

CREATE TABLE jobs (
  seq                       INTEGER PRIMARY KEY,
  id                        TEXT NOT NULL UNIQUE,
  project_id                TEXT NOT NULL,
  status                    TEXT NOT NULL,
  payload                   TEXT NOT NULL,
  scheduled_for             INTEGER,
  run_at                    INTEGER NOT NULL,
  queued_at                 INTEGER NOT NULL,
  max_retries               INTEGER NOT NULL,
  attempt_count             INTEGER NOT NULL DEFAULT 0,
  round_start_attempt_count INTEGER NOT NULL DEFAULT 0,
  lease_owner               TEXT,
  lease_expires_at          INTEGER,
  lease_attempt_id          TEXT,
  last_error                TEXT,
  created_at                INTEGER NOT NULL,
  updated_at                INTEGER NOT NULL,
  completed_at              INTEGER,
  failed_at                 INTEGER,
  cancelled_at              INTEGER
) STRICT;
-- The scheduler reads only this partial index, so jobs waiting far ahead cost it nothing.
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'QUEUED';
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE status IN ('DISPATCHED', 'STARTED');
CREATE INDEX jobs_project ON jobs (project_id, seq);
CREATE INDEX jobs_project_status ON jobs (project_id, status, seq);

CREATE TABLE attempts (
  id             TEXT PRIMARY KEY,
  job_id         TEXT NOT NULL,
  attempt_number INTEGER NOT NULL,
  started_at     INTEGER NOT NULL,
  finished_at    INTEGER,
  outcome        TEXT,
  status_code    INTEGER,
  duration_ms    INTEGER,
  error          TEXT,
  response_body  TEXT
) STRICT;
CREATE INDEX attempts_job ON attempts (job_id, started_at);

CREATE TABLE idempotency_keys (
  project_id      TEXT NOT NULL,
  endpoint        TEXT NOT NULL,
  key             TEXT NOT NULL,
  request_hash    TEXT NOT NULL,
  response_status INTEGER NOT NULL,
  response_body   TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  PRIMARY KEY (project_id, endpoint, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- Jobs created per team per UTC day: the monthly quota and the usage chart read this, never count(*) over jobs.
CREATE TABLE usage_daily (
  team_id      TEXT NOT NULL,
  day          TEXT NOT NULL,
  jobs_created INTEGER NOT NULL,
  PRIMARY KEY (team_id, day)
) STRICT, WITHOUT ROWID;
