/**
 * The embedded store's SQL for delivery attempts, named after the store method that runs it, as in
 * ../../postgres/queries/ under the same file name. Columns are aliased to the camelCase row types
 * of ../../store.ts so rows need little mapping.
 */
import { AWAITING_REPORT } from '../../job-store.js';

const attemptColumns = (t: string) => `${t}.id, ${t}.job_id AS jobId, ${t}.attempt_number AS attemptNumber,
  ${t}.started_at AS startedAt, ${t}.finished_at AS finishedAt, ${t}.outcome, ${t}.status_code AS statusCode,
  ${t}.duration_ms AS durationMs, ${t}.error, ${t}.response_body AS responseBody, ${t}.accepted_at AS acceptedAt,
  ${t}.reported_at AS reportedAt`;
export const AttemptInsert = `INSERT INTO attempts (id, job_id, attempt_number, started_at) VALUES (@attemptId, @jobId, @attemptNumber, @now)`;
export const AttemptJobGet = 'SELECT job_id AS jobId FROM attempts WHERE id = ?';
/** An attempt accepted with 202 keeps that answer's status and body when its report or deadline ends it. */
export const AttemptFinish = `UPDATE attempts SET finished_at = @now, outcome = @outcome, status_code = COALESCE(@statusCode, status_code),
  duration_ms = @durationMs, error = @error, response_body = COALESCE(@responseBody, response_body),
  reported_at = CASE WHEN @reported = 1 THEN @now ELSE reported_at END
  WHERE id = @attemptId AND outcome IS NULL`;
export const AttemptAccept = `UPDATE attempts SET accepted_at = @now, status_code = @statusCode, response_body = @responseBody
  WHERE id = @attemptId AND outcome IS NULL`;
export const AttemptReported = 'UPDATE attempts SET reported_at = @now WHERE id = @attemptId';
/** reportBy: the deadline of the attempt waiting for its report, read from its job's lease. */
const attemptWithDeadline = (where: string) => `SELECT ${attemptColumns('a')},
  CASE WHEN j.lease_owner = '${AWAITING_REPORT}' AND j.lease_attempt_id = a.id THEN j.lease_expires_at END AS reportBy
  FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE ${where}`;
export const AttemptListByJob = `${attemptWithDeadline('a.job_id = ?')} ORDER BY a.started_at, a.attempt_number`;
export const AttemptGetOfJob = attemptWithDeadline('a.id = @attemptId AND a.job_id = @jobId');
