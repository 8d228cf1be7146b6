/**
 * The PostgreSQL store's SQL for retention (SPEC section 12): pruning and what pruning would
 * delete, named as in ../../sqlite/queries/ under the same file name, so a diff shows both dialects
 * side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

/** When a final job became final; word for word the expression of the index jobs_final (0004_retention.sql). */
const FINAL_AT = "(CASE status WHEN 'COMPLETED' THEN completed_at WHEN 'FAILED' THEN failed_at ELSE cancelled_at END)";
const PRUNABLE_JOBS = `FROM jobs WHERE project_id = $1 AND status IN ('COMPLETED', 'FAILED', 'CANCELLED') AND ${FINAL_AT} <= $2`;
export const ProjectListRetention = 'SELECT id AS "projectId", retention_days AS "retentionDays" FROM projects ORDER BY id';
/**
 * One batch of retention in one statement. SKIP LOCKED: rows another instance is deleting (or a
 * retry is requeueing) are left to it rather than waited for, so instances never queue on each other.
 */
export const JobPruneFinal = `WITH victims AS (
    SELECT seq, id, tags ${PRUNABLE_JOBS} ORDER BY ${FINAL_AT} LIMIT $3 FOR UPDATE SKIP LOCKED
  ), gone_tags AS (
    -- The tag lookup's rows of the jobs with tags (0015_tags.sql), by its key; a job without has none.
    DELETE FROM job_tags t USING victims v, json_each_text(v.tags::json) AS e
    WHERE t.project_id = $1 AND t.key = e.key AND t.value = e.value AND t.job_seq = v.seq
  ), gone_attempts AS (
    DELETE FROM attempts WHERE job_id IN (SELECT id FROM victims) RETURNING 1
  ), gone_jobs AS (
    DELETE FROM jobs WHERE seq IN (SELECT seq FROM victims) RETURNING 1
  )
  SELECT (SELECT count(*) FROM gone_jobs)::int AS jobs, (SELECT count(*) FROM gone_attempts)::int AS attempts`;
export const JobCountPrunable = `SELECT count(*)::int AS jobs,
  COALESCE(SUM((SELECT count(*) FROM attempts a WHERE a.job_id = jobs.id)), 0)::int AS attempts ${PRUNABLE_JOBS}`;
export const IdempotencyKeyPrune = `DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM idempotency_keys WHERE created_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const IdempotencyKeyCountPrunable = 'SELECT count(*)::int AS n FROM idempotency_keys WHERE created_at <= $1';
export const EventCountPrunable = 'SELECT count(*)::int AS n FROM events WHERE occurred_at <= $1';
export const UsagePrune = `DELETE FROM usage_daily WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM usage_daily WHERE day < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const UsageCountPrunable = 'SELECT count(*)::int AS n FROM usage_daily WHERE day < $1';
/** The tables and indexes of this store's schema; the server's WAL is shared with other databases and not counted. */
export const StoreSize = `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`;
