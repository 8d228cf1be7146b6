-- A schedule's pause stops it at once (SPEC section 9): the instant it was paused, null while it
-- is not. A job of the schedule for an instant after it is not created (a fire under way when the
-- pause came), and those created ahead of time are cancelled with the pause. A schedule paused
-- before this migration counts as paused at its last change.
ALTER TABLE schedules ADD COLUMN paused_at INTEGER;
UPDATE schedules SET paused_at = updated_at WHERE paused = 1;
