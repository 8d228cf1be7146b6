/**
 * The embedded store's SQL for the project overview's figures and reads, named after the store
 * method that runs it, as in ../../postgres/queries/ under the same file name. Columns are aliased
 * to the camelCase row types of ../../store.ts so rows need little mapping.
 */
import { JOB_STATUSES } from '../../job-store.js';
import { limitBy } from './bound-parameters.js';

// The project overview (../../overview-store.ts, 0011_project_overview.sql).
/**
 * A project's jobs by status, each counted up to @limit rows (jobs_project_status): one arm per
 * status, so that a status of millions of jobs costs no more than the limit.
 */
export const JobCountByStatusOfProject = JOB_STATUSES.map(
  (status) => `SELECT '${status}' AS status, (SELECT count(*) FROM (SELECT 1 FROM jobs INDEXED BY jobs_project_status
    WHERE project_id = @projectId AND status = '${status}' ${limitBy('@limit')})) AS n`,
).join('\n  UNION ALL ');
export const DeliveryMinuteList = `SELECT minute, attempts, failed_attempts AS failedAttempts FROM delivery_minutes
  WHERE project_id = @projectId AND minute >= @from AND minute < @until ORDER BY minute`;
export const LatenessHistogram = `SELECT bucket, SUM(attempts) AS attempts FROM lateness_minutes
  WHERE project_id = @projectId AND minute >= @from AND minute < @until GROUP BY bucket`;
/** The newest failed attempts of the window; an attempt deleted since (retention) drops out. */
export const FailedAttemptListRecent = `SELECT a.job_id AS jobId, a.id AS attemptId, a.attempt_number AS attemptNumber,
  f.finished_at AS finishedAt, a.outcome, a.status_code AS statusCode, a.error
  FROM failed_attempts f JOIN attempts a ON a.id = f.attempt_id
  WHERE f.project_id = @projectId AND f.finished_at >= @from AND f.finished_at < @until
  ORDER BY f.finished_at DESC, f.attempt_id DESC ${limitBy('@limit')}`;
/** A group commit's finished attempts (overview-tally.ts), added to their project's minute. */
export const DeliveryMinuteAdd = `INSERT INTO delivery_minutes (project_id, minute, attempts, failed_attempts)
  VALUES (@projectId, @minute, @attempts, @failedAttempts)
  ON CONFLICT (project_id, minute) DO UPDATE SET attempts = attempts + excluded.attempts,
    failed_attempts = failed_attempts + excluded.failed_attempts`;
export const FailedAttemptInsert = `INSERT INTO failed_attempts (project_id, finished_at, attempt_id) VALUES (@projectId, @now, @attemptId)
  ON CONFLICT DO NOTHING`;
/** A group commit's first attempts (overview-tally.ts), added to their lateness bucket of the minute they started. */
export const LatenessMinuteAdd = `INSERT INTO lateness_minutes (project_id, minute, bucket, attempts) VALUES (@projectId, @minute, @bucket, @attempts)
  ON CONFLICT (project_id, minute, bucket) DO UPDATE SET attempts = attempts + excluded.attempts`;
export const DeliveryMinutePrune = `DELETE FROM delivery_minutes WHERE (project_id, minute) IN
  (SELECT project_id, minute FROM delivery_minutes WHERE minute < @before ${limitBy('@limit')})`;
export const LatenessMinutePrune = `DELETE FROM lateness_minutes WHERE (project_id, minute, bucket) IN
  (SELECT project_id, minute, bucket FROM lateness_minutes WHERE minute < @before ${limitBy('@limit')})`;
export const FailedAttemptPrune = `DELETE FROM failed_attempts WHERE (project_id, finished_at, attempt_id) IN
  (SELECT project_id, finished_at, attempt_id FROM failed_attempts WHERE finished_at < @before ${limitBy('@limit')})`;
