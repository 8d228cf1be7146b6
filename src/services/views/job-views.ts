import type { AttemptRow, JobRow } from '../../store/store.js';
import { formatNullableTimestamp, formatTimestamp } from '../../timestamp.js';

/** Stored tags (JobRow.tags, ScheduleSettings.tags) as status and schedule bodies show them (SPEC section 14): {} for none. */
export const tagsView = (tags: string | null): Record<string, string> => (tags === null ? {} : (JSON.parse(tags) as Record<string, string>));

/** The contract's job status body (SPEC section 2, GET /api/jobs/:jobId). */
export function jobStatusView(job: JobRow): Record<string, unknown> {
  const view: Record<string, unknown> = {
    jobId: job.id,
    status: job.status,
    scheduledFor: formatNullableTimestamp(job.scheduledFor),
    maxRetries: job.maxRetries,
    attemptCount: job.attemptCount,
    nextAttemptAt: job.status === 'QUEUED' ? formatTimestamp(job.runAt) : null,
    createdAt: formatTimestamp(job.createdAt),
    updatedAt: formatTimestamp(job.updatedAt),
  };
  // The terminal timestamps appear once reached, as in Dispatched's answers.
  if (job.completedAt !== null) view.completedAt = formatTimestamp(job.completedAt);
  if (job.failedAt !== null) view.failedAt = formatTimestamp(job.failedAt);
  if (job.cancelledAt !== null) view.cancelledAt = formatTimestamp(job.cancelledAt);
  view.lastError = job.lastError;
  // SPEC section 2: present only on a job a schedule created.
  if (job.scheduleId !== null) view.scheduleId = job.scheduleId;
  view.tags = tagsView(job.tags);
  // SPEC section 15: present only on a job with a key.
  if (job.concurrencyKey !== null) view.concurrencyKey = job.concurrencyKey;
  view.payload = JSON.parse(job.payload) as unknown;
  return view;
}

export function attemptView(attempt: AttemptRow): Record<string, unknown> {
  return {
    attemptId: attempt.id,
    attemptNumber: attempt.attemptNumber,
    startedAt: formatTimestamp(attempt.startedAt),
    finishedAt: formatNullableTimestamp(attempt.finishedAt),
    outcome: attempt.outcome,
    statusCode: attempt.statusCode,
    durationMs: attempt.durationMs,
    error: attempt.error,
    responseBody: attempt.responseBody,
    acceptedAt: formatNullableTimestamp(attempt.acceptedAt),
    reportedAt: formatNullableTimestamp(attempt.reportedAt),
  };
}
