-- Tags (SPEC section 14): a job's tags as JSON.stringify wrote them (null: none), returned in its
-- status body and delivery; a schedule's, which its jobs carry. Text, not jsonb, as the payload:
-- they go out byte for byte as they came in. Nullable columns without a default: added instantly.
ALTER TABLE jobs ADD COLUMN tags text;
ALTER TABLE schedules ADD COLUMN tags text;
-- The tag lookup: one row per tag of a job, keyed so that a filter by (key, value) reads only the
-- jobs that have it, oldest or newest first by seq, however many other jobs the project has. A
-- table of its own rather than an index on jobs (a GIN index would be written for every job, and
-- is not ordered): a job without tags writes nothing here, and the rows never change with a job's
-- status, so claims, starts and finishes never touch it. A job's rows go with it (retention
-- deletes them by this key, from the job's tags column).
CREATE TABLE job_tags (
  project_id text NOT NULL,
  key        text NOT NULL,
  value      text NOT NULL,
  job_seq    bigint NOT NULL,
  PRIMARY KEY (project_id, key, value, job_seq)
);
