-- Nothing on PostgreSQL: 0014 rebuilds the embedded store's retention index jobs_final so that an
-- update of a job that is not final does not evaluate its partial condition (SQLite checks a
-- `status IN (…)` list at every update of a job's status). PostgreSQL's jobs_final (0004) costs no
-- such thing and stays as it is; the number is kept so that both stores' migrations line up.
SELECT 1;
