-- The project overview (dashboard): figures kept as attempts start and finish, so that the page
-- reads at most a day of minutes, never the attempts themselves (attempts have no index by
-- project or by time, and adding one would cost every start and finish). As in usage_daily
-- (0003), a minute's counts are spread over up to 16 rows (shards): each statement adds to one
-- shard picked at random, so instances finishing attempts of one busy project at the same moment
-- seldom wait for one row's lock; readers sum the shards. Once a minute is past, the retention
-- pass folds its shards into shard 0: a day of a busy project is then 1,440 rows, not 23,040.

-- Attempts finished per project and minute (epoch ms of the minute's start); failed ones are
-- those whose outcome is not success.
CREATE TABLE delivery_minutes (
  project_id      text NOT NULL,
  minute          bigint NOT NULL,
  shard           smallint NOT NULL,
  attempts        bigint NOT NULL,
  failed_attempts bigint NOT NULL,
  PRIMARY KEY (project_id, minute, shard)
);

-- Lateness of first attempts (started at minus due at), per project and minute of the start, as a
-- histogram: bucket is the number of overview-store.ts's LATENESS_BOUNDS at or below the lateness.
CREATE TABLE lateness_minutes (
  project_id text NOT NULL,
  minute     bigint NOT NULL,
  bucket     smallint NOT NULL,
  shard      smallint NOT NULL,
  attempts   bigint NOT NULL,
  PRIMARY KEY (project_id, minute, bucket, shard)
);

-- Failed attempts by project, newest last: the overview's last failures read the newest few and
-- take the rest from attempts by id. Written only when an attempt fails.
CREATE TABLE failed_attempts (
  project_id  text NOT NULL,
  finished_at bigint NOT NULL,
  attempt_id  text NOT NULL,
  PRIMARY KEY (project_id, finished_at, attempt_id)
);
-- Retention deletes all three by time, across projects.
CREATE INDEX delivery_minutes_minute ON delivery_minutes (minute);
CREATE INDEX lateness_minutes_minute ON lateness_minutes (minute);
-- Past minutes' shards are folded into shard 0 (overviewCompact), found through these: only rows
-- not yet folded are in them, so a day of folded minutes costs the fold nothing.
CREATE INDEX delivery_minutes_unfolded ON delivery_minutes (minute) WHERE shard > 0;
CREATE INDEX lateness_minutes_unfolded ON lateness_minutes (minute) WHERE shard > 0;
CREATE INDEX failed_attempts_finished ON failed_attempts (finished_at);
