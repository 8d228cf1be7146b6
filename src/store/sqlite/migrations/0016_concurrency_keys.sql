-- Keys (SPEC section 15): a job's concurrencyKey; its project's keyConcurrency; a schedule's key,
-- which its jobs carry.
ALTER TABLE jobs ADD COLUMN concurrency_key TEXT;
-- A keyed job's place in its key's order: its due time when it entered QUEUED (dispatch,
-- reschedule, retry of a FAILED job), not moved by a retry's backoff, so that a job waiting for a
-- retry keeps its key (strict order). Set by the triggers below; null for a job without a key.
ALTER TABLE jobs ADD COLUMN key_order_at INTEGER;
-- 1 while a keyed QUEUED job waits for its key's turn: out of jobs_due, so the claim never reads
-- it, however long its key's backlog. A key's turn is the first (keyConcurrency less its jobs
-- DISPATCHED or STARTED) of its QUEUED jobs by (key_order_at, seq); the triggers keep the flags so
-- on every change that moves a turn, whichever statement makes it. The claim's own change
-- (QUEUED to DISPATCHED or STARTED) moves no turn: a job in its turn becomes one of those counted.
ALTER TABLE jobs ADD COLUMN key_held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN key_concurrency INTEGER NOT NULL DEFAULT 1;
ALTER TABLE schedules ADD COLUMN concurrency_key TEXT;

DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'QUEUED' AND on_hold = 0 AND key_held = 0;
-- A key's unfinished jobs, by status then order: its running count (a seek per status, DISPATCHED
-- and STARTED, never a read of its QUEUED backlog) and its turn, each a seek.
CREATE INDEX jobs_key ON jobs (project_id, concurrency_key, status, key_order_at, seq)
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED');
-- A key's QUEUED jobs in their turn (at most keyConcurrency): those a turn's move may hold again.
CREATE INDEX jobs_key_turn ON jobs (project_id, concurrency_key)
  WHERE concurrency_key IS NOT NULL AND status = 'QUEUED' AND key_held = 0;

-- A keyed job's order: set when it enters QUEUED other than from a claim (a retry's backoff keeps it).
-- (A new job's order is set with its key, just after its insert: queries/jobs.ts, JobConcurrencyKeySet.)
CREATE TRIGGER jobs_key_order AFTER UPDATE OF status, run_at ON jobs
  WHEN NEW.concurrency_key IS NOT NULL AND NEW.status = 'QUEUED'
    AND ((OLD.status = 'QUEUED' AND NEW.run_at <> OLD.run_at) OR OLD.status IN ('COMPLETED', 'FAILED', 'CANCELLED'))
BEGIN
  UPDATE jobs SET key_order_at = NEW.run_at WHERE seq = NEW.seq;
END;
-- The key's turn, again: after a keyed job is created (its key set just after its insert), leaves
-- DISPATCHED or STARTED, becomes final, or changes its order.
CREATE TRIGGER jobs_key_turn AFTER UPDATE OF status, key_order_at ON jobs
  WHEN NEW.concurrency_key IS NOT NULL AND NEW.key_order_at IS NOT NULL AND (OLD.key_order_at IS NOT NEW.key_order_at
    OR (OLD.status <> NEW.status AND NOT (OLD.status = 'QUEUED' AND NEW.status IN ('DISPATCHED', 'STARTED'))
      AND NOT (OLD.status = 'DISPATCHED' AND NEW.status = 'STARTED')))
BEGIN
  UPDATE jobs SET key_held = 0 WHERE seq IN (
    SELECT seq FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' ORDER BY key_order_at, seq
    LIMIT MAX(0, (SELECT key_concurrency FROM projects WHERE id = NEW.project_id)
      - (SELECT count(*) FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'DISPATCHED')
      - (SELECT count(*) FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'STARTED')))
    AND key_held = 1;
  UPDATE jobs SET key_held = 1 WHERE seq IN (
    SELECT seq FROM jobs INDEXED BY jobs_key_turn WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
      AND status = 'QUEUED' AND key_held = 0)
    AND seq NOT IN (
    SELECT seq FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' ORDER BY key_order_at, seq
    LIMIT MAX(0, (SELECT key_concurrency FROM projects WHERE id = NEW.project_id)
      - (SELECT count(*) FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'DISPATCHED')
      - (SELECT count(*) FROM jobs INDEXED BY jobs_key WHERE project_id = NEW.project_id AND concurrency_key = NEW.concurrency_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'STARTED')));
END;
-- A project's keyConcurrency changed: every key's turn of it, again (an operator's change, rare).
CREATE TRIGGER projects_key_concurrency AFTER UPDATE OF key_concurrency ON projects
  WHEN NEW.key_concurrency <> OLD.key_concurrency
BEGIN
  UPDATE jobs SET key_held = turn.held FROM (
    SELECT q.seq, row_number() OVER (PARTITION BY q.concurrency_key ORDER BY q.key_order_at, q.seq) > MAX(0, NEW.key_concurrency
      - (SELECT count(*) FROM jobs a WHERE a.project_id = NEW.id AND a.concurrency_key = q.concurrency_key
          AND a.status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND a.status IN ('DISPATCHED', 'STARTED'))) AS held
    FROM jobs q WHERE q.project_id = NEW.id AND q.concurrency_key IS NOT NULL AND q.status IN ('QUEUED', 'DISPATCHED', 'STARTED')
      AND q.status = 'QUEUED'
  ) AS turn WHERE jobs.seq = turn.seq AND jobs.key_held <> turn.held;
END;

-- Debounce (SPEC section 15): a job dispatched with a debounceKey, its deadline (its first
-- dispatch + maxWaitMs; null for none) and the dispatches it absorbed. The open job of a key (QUEUED,
-- never attempted) is found through jobs_debounce; dispatches of one key take turns (here on the
-- one writer), so that concurrent ones leave exactly one.
ALTER TABLE jobs ADD COLUMN debounce_key TEXT;
ALTER TABLE jobs ADD COLUMN debounce_deadline INTEGER;
ALTER TABLE jobs ADD COLUMN debounced_count INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_debounce ON jobs (project_id, debounce_key)
  WHERE debounce_key IS NOT NULL AND status = 'QUEUED' AND attempt_count = 0;
