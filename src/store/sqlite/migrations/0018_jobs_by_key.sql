-- A concurrencyKey's jobs of every status, by seq (SPEC section 15; the jobs list's and the bulk
-- actions' filter by key): without it a key's list or bulk action read the project's jobs each
-- checked for the key, far on a big project with a rare key. Keyed jobs only; none of its columns
-- ever changes, so a job's status changes do not touch it.
CREATE INDEX jobs_by_key ON jobs (project_id, concurrency_key, seq) WHERE concurrency_key IS NOT NULL;
