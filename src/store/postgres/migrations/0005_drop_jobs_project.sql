-- A project's jobs newest first are read through jobs_project_status, one range per status merged
-- by seq (queries.ts, JobList), so this index is no longer read: dropping it saves its space and
-- its upkeep on every insert.
DROP INDEX jobs_project;
