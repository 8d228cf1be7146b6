-- A concurrencyKey's jobs of every status, by seq (SPEC section 15; the jobs list's and the bulk
-- actions' filter by key): without it a key's list or bulk action read the project's jobs each
-- checked for the key, far on a big project with a rare key. It holds keyed jobs only, but its
-- build reads every job while writes to jobs wait (CONCURRENTLY cannot run in the migration's
-- transaction): on a big table, run `punctual migrate` at a quiet moment.
CREATE INDEX jobs_by_key ON jobs (project_id, concurrency_key, seq) WHERE concurrency_key IS NOT NULL;
