-- Retention (SPEC section 12). A project's own retention in days; null follows PUNCTUAL_RETENTION_DAYS.
ALTER TABLE projects ADD COLUMN retention_days integer;

-- The pruner walks each project's final jobs by the instant they became final, oldest first. Only
-- final jobs are in this index, so jobs waiting or in delivery cost it nothing. The expression is
-- repeated word for word in queries.ts (JobPruneFinal): the planner matches it to use the index.
-- Building it makes writes to jobs wait until it is built (it reads every final job);
-- docs/deployment.md says so.
CREATE INDEX jobs_final ON jobs (project_id, (CASE status WHEN 'COMPLETED' THEN completed_at WHEN 'FAILED' THEN failed_at ELSE cancelled_at END))
  WHERE status IN ('COMPLETED', 'FAILED', 'CANCELLED');
