-- Keys (SPEC section 15): a job's concurrencyKey; its project's keyConcurrency; a schedule's key,
-- which its jobs carry. Columns with a constant default or none: added instantly.
ALTER TABLE jobs ADD COLUMN concurrency_key text;
-- A keyed job's place in its key's order: its due time when it entered QUEUED (dispatch,
-- reschedule, retry of a FAILED job), not moved by a retry's backoff, so that a job waiting for a
-- retry keeps its key (strict order). Set by the triggers below; null for a job without a key.
ALTER TABLE jobs ADD COLUMN key_order_at bigint;
-- True while a keyed QUEUED job waits for its key's turn: out of jobs_due, so the claim never
-- reads it, however long its key's backlog. A key's turn is the first (keyConcurrency less its jobs
-- DISPATCHED or STARTED) of its QUEUED jobs by (key_order_at, seq); the triggers keep the flags so
-- on every change that moves a turn, whichever statement makes it, under a lock of the key (an
-- advisory lock for the transaction), so that instances moving one key's turn at once take turns.
-- The claim's own change (QUEUED to DISPATCHED or STARTED) moves no turn and takes no lock: a job
-- in its turn becomes one of those counted.
ALTER TABLE jobs ADD COLUMN key_held boolean NOT NULL DEFAULT false;
ALTER TABLE projects ADD COLUMN key_concurrency integer NOT NULL DEFAULT 1;
ALTER TABLE schedules ADD COLUMN concurrency_key text;

DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (run_at) WHERE status = 'QUEUED' AND NOT on_hold AND NOT key_held;
-- A key's unfinished jobs, by status then order: its running count and its turn, each a seek.
CREATE INDEX jobs_key ON jobs (project_id, concurrency_key, status, key_order_at, seq)
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED');
-- A key's QUEUED jobs in their turn (at most keyConcurrency): those a turn's move may hold again.
CREATE INDEX jobs_key_turn ON jobs (project_id, concurrency_key)
  WHERE concurrency_key IS NOT NULL AND status = 'QUEUED' AND NOT key_held;

-- A keyed job's order: set when it is created, and when it enters QUEUED other than from a claim
-- (a retry's backoff keeps it).
CREATE FUNCTION jobs_key_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.key_order_at := NEW.run_at;
  RETURN NEW;
END $$;
CREATE TRIGGER jobs_key_order_insert BEFORE INSERT ON jobs FOR EACH ROW
  WHEN (NEW.concurrency_key IS NOT NULL) EXECUTE FUNCTION jobs_key_order();
CREATE TRIGGER jobs_key_order_update BEFORE UPDATE OF status, run_at ON jobs FOR EACH ROW
  WHEN (NEW.concurrency_key IS NOT NULL AND NEW.status = 'QUEUED'
    AND ((OLD.status = 'QUEUED' AND NEW.run_at <> OLD.run_at) OR OLD.status IN ('COMPLETED', 'FAILED', 'CANCELLED')))
  EXECUTE FUNCTION jobs_key_order();

-- One key's turn, again, under the key's lock: each statement after the lock sees what the
-- transaction that held it before committed.
CREATE FUNCTION jobs_key_turn_of(p_project text, p_key text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  room integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_project || '/' || p_key, 0));
  -- A seek per status, DISPATCHED and STARTED: never a read of the key's QUEUED backlog.
  SELECT GREATEST(0, p.key_concurrency
    - (SELECT count(*) FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
        AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'DISPATCHED')
    - (SELECT count(*) FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
        AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'STARTED'))
  INTO room FROM projects p WHERE p.id = p_project;
  UPDATE jobs SET key_held = false WHERE seq IN (
    SELECT seq FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' ORDER BY key_order_at, seq LIMIT room)
    AND key_held;
  UPDATE jobs SET key_held = true WHERE project_id = p_project AND concurrency_key = p_key AND status = 'QUEUED' AND NOT key_held
    AND seq NOT IN (SELECT seq FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' ORDER BY key_order_at, seq LIMIT room);
END $$;
CREATE FUNCTION jobs_key_turn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM jobs_key_turn_of(NEW.project_id, NEW.concurrency_key);
  RETURN NULL;
END $$;
-- After a keyed job is created, leaves DISPATCHED or STARTED, becomes final, or changes its order.
CREATE TRIGGER jobs_key_turn_insert AFTER INSERT ON jobs FOR EACH ROW
  WHEN (NEW.concurrency_key IS NOT NULL) EXECUTE FUNCTION jobs_key_turn();
CREATE TRIGGER jobs_key_turn_update AFTER UPDATE OF status, run_at ON jobs FOR EACH ROW
  WHEN (NEW.concurrency_key IS NOT NULL AND (OLD.key_order_at IS DISTINCT FROM NEW.key_order_at
    OR (OLD.status <> NEW.status AND NOT (OLD.status = 'QUEUED' AND NEW.status IN ('DISPATCHED', 'STARTED'))
      AND NOT (OLD.status = 'DISPATCHED' AND NEW.status = 'STARTED'))))
  EXECUTE FUNCTION jobs_key_turn();
-- A project's keyConcurrency changed: every key's turn of it, again (an operator's change, rare).
CREATE FUNCTION projects_key_concurrency() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  k text;
BEGIN
  FOR k IN SELECT DISTINCT concurrency_key FROM jobs WHERE project_id = NEW.id AND concurrency_key IS NOT NULL
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') ORDER BY 1 LOOP
    PERFORM jobs_key_turn_of(NEW.id, k);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER projects_key_concurrency AFTER UPDATE OF key_concurrency ON projects FOR EACH ROW
  WHEN (NEW.key_concurrency <> OLD.key_concurrency) EXECUTE FUNCTION projects_key_concurrency();

-- Debounce (SPEC section 15): a job dispatched with a debounceKey, its deadline (its first
-- dispatch + maxWaitMs; null for none) and the dispatches it absorbed. The open job of a key (QUEUED,
-- never attempted) is found through jobs_debounce; dispatches of one key take turns under the
-- key's advisory lock, so that concurrent ones, on any instance, leave exactly one.
ALTER TABLE jobs ADD COLUMN debounce_key text;
ALTER TABLE jobs ADD COLUMN debounce_deadline bigint;
ALTER TABLE jobs ADD COLUMN debounced_count integer NOT NULL DEFAULT 0;
CREATE INDEX jobs_debounce ON jobs (project_id, debounce_key)
  WHERE debounce_key IS NOT NULL AND status = 'QUEUED' AND attempt_count = 0;
