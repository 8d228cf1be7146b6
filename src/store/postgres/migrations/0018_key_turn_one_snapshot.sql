-- A key's turn (0016_concurrency_keys.sql) read in one statement, so in one snapshot. Its room and
-- its QUEUED jobs in order were read by separate statements, each with a snapshot of its own: a
-- claim committing between them (it takes no key lock) made the key's first job count as neither
-- QUEUED nor running, and the job behind it got the turn too (two jobs of a key of
-- keyConcurrency 1 claimed at once). Read together, the room and the order agree, whichever side
-- of the claim's commit they fall on.
CREATE OR REPLACE FUNCTION jobs_key_turn_of(p_project text, p_key text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(p_project || '/' || p_key, 0));
  -- A seek per status, DISPATCHED and STARTED: never a read of the key's QUEUED backlog. The
  -- two updates touch different rows (those of the turn still held; those out of it not held).
  WITH room AS (
    SELECT GREATEST(0, p.key_concurrency
      - (SELECT count(*) FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'DISPATCHED')
      - (SELECT count(*) FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
          AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'STARTED')) AS n
    FROM projects p WHERE p.id = p_project
  ), turn AS (
    SELECT seq FROM jobs WHERE project_id = p_project AND concurrency_key = p_key
      AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED'
    ORDER BY key_order_at, seq LIMIT (SELECT n FROM room)
  ), unheld AS (
    UPDATE jobs SET key_held = false WHERE seq IN (SELECT seq FROM turn) AND key_held RETURNING seq
  )
  UPDATE jobs SET key_held = true WHERE project_id = p_project AND concurrency_key = p_key AND status = 'QUEUED' AND NOT key_held
    AND seq NOT IN (SELECT seq FROM turn);
END $$;
