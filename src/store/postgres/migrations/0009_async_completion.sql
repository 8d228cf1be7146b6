-- Async completion (SPEC section 11): a 202 from a project with async_completion leaves the
-- attempt pending and the job STARTED, its lease held by the marker owner 'async' until the
-- receiver reports or async_completion_timeout_ms passes (jobs.lease_expires_at is that deadline,
-- so it survives restarts and is seen by every instance's lease rescue).
ALTER TABLE projects ADD COLUMN async_completion boolean NOT NULL DEFAULT false;
ALTER TABLE projects ADD COLUMN async_completion_timeout_ms integer NOT NULL DEFAULT 3600000;
-- When the 202 came, and when the receiver last reported.
ALTER TABLE attempts ADD COLUMN accepted_at bigint;
ALTER TABLE attempts ADD COLUMN reported_at bigint;
