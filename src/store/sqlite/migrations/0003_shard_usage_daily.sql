-- PostgreSQL's 0003 spreads a team's daily usage over 16 rows so that instances do not wait for
-- one row's lock. The embedded store has one writer, which never waits for a row: nothing to do
-- here. The file keeps the two stores' migration numbers in step.
SELECT 1;
