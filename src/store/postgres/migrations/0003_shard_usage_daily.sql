-- A team's jobs of a day are counted in up to 16 rows (shards) instead of one. Each dispatch
-- statement adds to one shard picked at random, so two instances dispatching for one busy team
-- no longer queue on the same row's lock; readers sum the shards (quota, usage chart).
-- Breaking for rolling upgrades: an instance of the previous version inserts ON CONFLICT
-- (team_id, day), which is no longer unique, and its dispatches fail; stop the previous version's
-- instances before starting this one (docs/deployment.md).
ALTER TABLE usage_daily ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE usage_daily DROP CONSTRAINT usage_daily_pkey;
ALTER TABLE usage_daily ADD PRIMARY KEY (team_id, day, shard);
