-- A list by creation window (`createdAfter`, `createdBefore`) or by schedule reads newest first by
-- (created_at, seq), from the window's end (or the cursor) down, so that it stops at the limit
-- whatever the window's age: read by seq, an old window was reached only after every newer job of
-- the project (or of the schedule) had been stepped over. One range per status, merged, as the
-- list without a window reads jobs_project_status (queries.ts, newestCreatedFirst).
CREATE INDEX jobs_project_created ON jobs (project_id, status, created_at, seq);
-- The list by schedule always has a window (all time when none is given): created_at joins its
-- key. Its prefix (schedule_id, status) still serves the cancel of a deleted schedule's jobs.
DROP INDEX jobs_schedule;
CREATE INDEX jobs_schedule ON jobs (schedule_id, status, created_at, seq) WHERE schedule_id IS NOT NULL;
