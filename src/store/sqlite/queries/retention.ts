import { limitBy } from './bound-parameters.js';
/**
 * The embedded store's SQL for retention (SPEC section 12): pruning and what pruning would delete,
 * named after the store method that runs it, as in ../../postgres/queries/ under the same file
 * name. Columns are aliased to the camelCase row types of ../../store.ts so rows need little
 * mapping.
 */

/**
 * When a final job became final, null while it is not: word for word the expression of the index
 * jobs_final (0014_final_index_without_status_list.sql), which SQLite uses only for it.
 */
const FINAL_AT = 'coalesce(completed_at, failed_at, cancelled_at)';
const PRUNABLE_JOBS = `FROM jobs WHERE project_id = @projectId AND ${FINAL_AT} IS NOT NULL AND ${FINAL_AT} <= @finalBy`;
export const ProjectListRetention = 'SELECT id AS projectId, retention_days AS retentionDays FROM projects ORDER BY id';
export const JobListPrunable = `SELECT seq, id, tags ${PRUNABLE_JOBS} ORDER BY ${FINAL_AT} ${limitBy('@limit')}`;
export const AttemptDeleteByJob = 'DELETE FROM attempts WHERE job_id = ?';
export const JobDeleteBySeq = 'DELETE FROM jobs WHERE seq = ?';
/** The tag lookup's rows of a job with tags (0015_tags.sql), by its key, from the job's tags. */
export const JobTagsDelete = `DELETE FROM job_tags WHERE (project_id, key, value, job_seq) IN
  (SELECT @projectId, key, value, @seq FROM json_each(@tags))`;
export const JobCountPrunable = `SELECT count(*) AS jobs,
  COALESCE(SUM((SELECT count(*) FROM attempts a WHERE a.job_id = jobs.id)), 0) AS attempts ${PRUNABLE_JOBS}`;
export const IdempotencyKeyPrune = `DELETE FROM idempotency_keys WHERE (project_id, endpoint, key) IN
  (SELECT project_id, endpoint, key FROM idempotency_keys WHERE created_at <= @createdBy ${limitBy('@limit')})`;
export const IdempotencyKeyCountPrunable = 'SELECT count(*) AS n FROM idempotency_keys WHERE created_at <= ?';
export const EventCountPrunable = 'SELECT count(*) AS n FROM events WHERE occurred_at <= ?';
export const UsagePrune = `DELETE FROM usage_daily WHERE (team_id, day) IN
  (SELECT team_id, day FROM usage_daily WHERE day < @beforeDay ${limitBy('@limit')})`;
export const UsageCountPrunable = 'SELECT count(*) AS n FROM usage_daily WHERE day < ?';
