-- Tags (SPEC section 14): a job's tags as JSON.stringify wrote them (null: none), returned in its
-- status body and delivery; a schedule's, which its jobs carry.
ALTER TABLE jobs ADD COLUMN tags TEXT;
ALTER TABLE schedules ADD COLUMN tags TEXT;
-- The tag lookup: one row per tag of a job, keyed so that a filter by (key, value) reads only the
-- jobs that have it, oldest or newest first by seq, however many other jobs the project has. A
-- table of its own rather than an index on jobs: a job without tags writes nothing here, and the
-- rows never change with a job's status, so claims, starts and finishes never touch it. A job's
-- rows go with it (retention deletes them by this key, from the job's tags column).
CREATE TABLE job_tags (
  project_id TEXT NOT NULL,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  job_seq    INTEGER NOT NULL,
  PRIMARY KEY (project_id, key, value, job_seq)
) STRICT, WITHOUT ROWID;
