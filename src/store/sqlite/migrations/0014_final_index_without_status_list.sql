-- The retention index jobs_final (0004) over (project, the instant a job became final), built so
-- that a status change of a job that is not final costs it nothing. 0004 made it partial on
-- `status IN ('COMPLETED', 'FAILED', 'CANCELLED')`; SQLite checks that list at every update of a
-- job's status, and it cost about 50 µs of each claim, start and finish (of about 80) on this
-- machine. coalesce(completed_at, failed_at, cancelled_at) is non-null exactly while a job is final
-- (a retry of a FAILED job clears failed_at), so it serves as the condition and the key.
-- Rebuilding it reads every final job once.
DROP INDEX jobs_final;
CREATE INDEX jobs_final ON jobs (project_id, coalesce(completed_at, failed_at, cancelled_at))
  WHERE coalesce(completed_at, failed_at, cancelled_at) IS NOT NULL;
