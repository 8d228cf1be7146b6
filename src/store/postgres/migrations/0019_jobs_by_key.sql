-- A concurrencyKey's jobs of every status, by seq (SPEC section 15; the jobs list's and the bulk
-- actions' filter by key): without it a key's list or bulk action read the project's jobs each
-- checked for the key, far on a big project with a rare key. Keyed jobs only (an empty index until
-- a job has a key). Built without blocking writes is not possible inside the migration's
-- transaction; on a table of many keyed jobs, run `punctual migrate` at a quiet moment.
CREATE INDEX jobs_by_key ON jobs (project_id, concurrency_key, seq) WHERE concurrency_key IS NOT NULL;
