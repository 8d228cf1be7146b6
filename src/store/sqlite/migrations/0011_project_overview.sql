-- The project overview (dashboard): figures kept as attempts start and finish, so that the page
-- reads at most a day of minutes, never the attempts themselves (attempts have no index by
-- project or by time, and adding one would cost every start and finish).

-- Attempts finished per project and minute (epoch ms of the minute's start); failed ones are
-- those whose outcome is not success.
CREATE TABLE delivery_minutes (
  project_id      TEXT NOT NULL,
  minute          INTEGER NOT NULL,
  attempts        INTEGER NOT NULL,
  failed_attempts INTEGER NOT NULL,
  PRIMARY KEY (project_id, minute)
) STRICT, WITHOUT ROWID;

-- Lateness of first attempts (started at minus due at), per project and minute of the start, as a
-- histogram: bucket is the number of overview-store.ts's LATENESS_BOUNDS at or below the lateness.
CREATE TABLE lateness_minutes (
  project_id TEXT NOT NULL,
  minute     INTEGER NOT NULL,
  bucket     INTEGER NOT NULL,
  attempts   INTEGER NOT NULL,
  PRIMARY KEY (project_id, minute, bucket)
) STRICT, WITHOUT ROWID;

-- Failed attempts by project, newest last: the overview's last failures read the newest few and
-- take the rest from attempts by id. Written only when an attempt fails.
CREATE TABLE failed_attempts (
  project_id  TEXT NOT NULL,
  finished_at INTEGER NOT NULL,
  attempt_id  TEXT NOT NULL,
  PRIMARY KEY (project_id, finished_at, attempt_id)
) STRICT, WITHOUT ROWID;
-- Retention deletes all three by time, across projects.
CREATE INDEX delivery_minutes_minute ON delivery_minutes (minute);
CREATE INDEX lateness_minutes_minute ON lateness_minutes (minute);
CREATE INDEX failed_attempts_finished ON failed_attempts (finished_at);
