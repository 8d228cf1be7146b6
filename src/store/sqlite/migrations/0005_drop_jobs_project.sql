-- A project's jobs newest first are read through jobs_project_status, one range per status merged
-- by seq (queries.ts, JobList), so this index is no longer read: dropping it saves 38 bytes a job
-- and a page written per commit.
DROP INDEX jobs_project;
