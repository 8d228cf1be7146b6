/**
 * The PostgreSQL store's SQL for the project overview's figures and reads, named as in
 * ../../sqlite/queries/ under the same file name, so a diff shows both dialects side by side.
 * Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */
import { JOB_STATUSES } from '../../job-store.js';

// The project overview (../../overview-store.ts, 0011_project_overview.sql): a minute's figures are
// the sum of its shards.
/**
 * A project's jobs by status, each counted up to $2 rows (jobs_project_status): one arm per
 * status, so that a status of millions of jobs costs no more than the limit.
 */
export const JobCountByStatusOfProject = JOB_STATUSES.map(
  (status) => `SELECT '${status}' AS status, (SELECT count(*)::int FROM (SELECT 1 FROM jobs
    WHERE project_id = $1 AND status = '${status}' LIMIT $2) AS capped) AS n`,
).join('\n  UNION ALL ');
export const DeliveryMinuteList = `SELECT minute, SUM(attempts)::bigint AS attempts, SUM(failed_attempts)::bigint AS "failedAttempts"
  FROM delivery_minutes WHERE project_id = $1 AND minute >= $2 AND minute < $3 GROUP BY minute ORDER BY minute`;
export const LatenessHistogram = `SELECT bucket, SUM(attempts)::bigint AS attempts FROM lateness_minutes
  WHERE project_id = $1 AND minute >= $2 AND minute < $3 GROUP BY bucket`;
/** The newest failed attempts of the window; an attempt deleted since (retention) drops out. */
export const FailedAttemptListRecent = `SELECT a.job_id AS "jobId", a.id AS "attemptId", a.attempt_number AS "attemptNumber",
  f.finished_at AS "finishedAt", a.outcome, a.status_code AS "statusCode", a.error
  FROM failed_attempts f JOIN attempts a ON a.id = f.attempt_id
  WHERE f.project_id = $1 AND f.finished_at >= $2 AND f.finished_at < $3
  ORDER BY f.finished_at DESC, f.attempt_id DESC LIMIT $4`;
/** Rows another instance is deleting are skipped, not waited for. */
const overviewPrune = (table: string, time: string) => `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM ${table} WHERE ${time} < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;
export const DeliveryMinutePrune = overviewPrune('delivery_minutes', 'minute');
export const LatenessMinutePrune = overviewPrune('lateness_minutes', 'minute');
export const FailedAttemptPrune = overviewPrune('failed_attempts', 'finished_at');
/**
 * Folds the shards (> 0) of minutes before $1 into shard 0, up to $2 rows, in one statement: the
 * sums move, never change. Rows a finish is adding to are skipped, not waited for; shard 0's rows
 * are taken in (project, minute) order, as the finishes take theirs.
 */
const overviewCompact = (table: string, key: string, sums: string[]) => `WITH moved AS (
    DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM ${table} WHERE minute < $1 AND shard > 0 LIMIT $2 FOR UPDATE SKIP LOCKED))
    RETURNING project_id, ${key}, ${sums.join(', ')}
  ), folded AS (
    INSERT INTO ${table} (project_id, ${key}, shard, ${sums.join(', ')})
    SELECT project_id, ${key}, 0, ${sums.map((c) => `sum(${c})`).join(', ')} FROM moved
    GROUP BY project_id, ${key} ORDER BY project_id COLLATE "C", ${key}
    ON CONFLICT (project_id, ${key}, shard) DO UPDATE SET ${sums.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(', ')}
  )
  SELECT count(*)::int AS n FROM moved`;
export const DeliveryMinuteCompact = overviewCompact('delivery_minutes', 'minute', ['attempts', 'failed_attempts']);
export const LatenessMinuteCompact = overviewCompact('lateness_minutes', 'minute, bucket', ['attempts']);
