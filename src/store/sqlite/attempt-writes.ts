/**
 * The embedded store's writes of delivery attempts (the attempts add the overview's figures to the
 * group's tally, overview-tally.ts), each a function of its parameters run on the writer thread
 * inside the group's transaction, in its own savepoint (write-registry.ts says how a call reaches
 * it). The store passes the function itself: `writer.run(attemptWrites.attemptStart, params)`.
 */
import type { AttemptAcceptParams, AttemptFinishParams, AttemptReport, AttemptStartParams } from '../attempt-store.js';
import { jobFailedEventId } from '../event-store.js';
import { jobAfterAttempt } from '../job-rules.js';
import { AWAITING_REPORT } from '../job-store.js';
import { latenessBucket, minuteOf } from '../overview-store.js';
import type { OverviewTally } from './overview-tally.js';
import { AttemptAccept, AttemptFinish, AttemptInsert, AttemptJobGet, AttemptReported } from './queries/attempts.js';
import { EventInsertJobCompleted, EventInsertJobFailed } from './queries/events.js';
import { JobAccept, JobAwaitingReportCheck, JobFinishAttempt, JobReleaseHeldBack, JobReportRunning, JobStart } from './queries/jobs.js';
import { FailedAttemptInsert } from './queries/overview.js';
import type { Sql } from './sql.js';

export function attemptStart(sql: Sql, params: AttemptStartParams, tally: OverviewTally): { attemptNumber: number } | null {
  const started = sql(JobStart).get(params) as { attemptNumber: number; projectId: string; runAt: number } | undefined;
  if (!started) {
    sql(JobReleaseHeldBack).run({ jobId: params.jobId, workerId: params.workerId, now: params.now });
    return null;
  }
  const { attemptNumber } = started;
  // Asked again for an attempt already recorded: nothing more to record.
  const recorded = sql(AttemptJobGet).get(params.attemptId) as { jobId: string } | undefined;
  if (recorded?.jobId === params.jobId) return { attemptNumber };
  sql(AttemptInsert).run({ attemptId: params.attemptId, jobId: params.jobId, attemptNumber, now: params.now });
  // A first attempt's lateness, for the overview: started now, due at the job's runAt.
  if (attemptNumber === 1) tally.started(started.projectId, minuteOf(params.now), latenessBucket(params.now - started.runAt));
  return { attemptNumber };
}

/** Records the attempt's result and moves the job on, only if this worker still holds that attempt's lease. */
export function attemptFinish(sql: Sql, params: AttemptFinishParams, tally: OverviewTally): boolean {
  const job = sql(JobFinishAttempt).get({
    jobId: params.jobId,
    workerId: params.workerId,
    attemptId: params.attemptId,
    now: params.now,
    ...jobAfterAttempt(params),
  }) as { projectId: string } | undefined;
  if (!job) return false;
  const { now, attemptId } = params;
  if (sql(AttemptFinish).run({ attemptId, now, ...params.result, reported: params.reported ? 1 : 0 }).changes === 1) {
    // The overview's figures (0011_project_overview.sql), in the same transaction as the attempt.
    const failed = params.result.outcome !== 'success';
    tally.finished(job.projectId, minuteOf(now), failed);
    if (failed) sql(FailedAttemptInsert).run({ projectId: job.projectId, now, attemptId });
  }
  if (params.next.kind === 'fail') sql(EventInsertJobFailed).run({ eventId: jobFailedEventId(params.attemptId), jobId: params.jobId, now: params.now });
  if (params.next.kind === 'complete') {
    sql(EventInsertJobCompleted).run({ eventId: jobFailedEventId(params.attemptId), jobId: params.jobId, now: params.now, durationMs: params.result.durationMs });
  }
  return true;
}

export function attemptAccept(sql: Sql, p: AttemptAcceptParams): boolean {
  if (sql(JobAccept).run(p).changes === 0) return false;
  sql(AttemptAccept).run(p);
  return true;
}

export function attemptReport(sql: Sql, p: { jobId: string; attemptId: string; now: number; report: AttemptReport }, tally: OverviewTally): boolean {
  const guard = { jobId: p.jobId, attemptId: p.attemptId, now: p.now };
  if (p.report.kind === 'running') {
    if (sql(JobReportRunning).run({ ...guard, deadline: p.report.deadline }).changes === 0) return false;
    sql(AttemptReported).run(guard);
    return true;
  }
  if (sql(JobAwaitingReportCheck).get(guard) === undefined) return false;
  return attemptFinish(sql, { ...guard, workerId: AWAITING_REPORT, result: p.report.result, next: p.report.next, reported: true }, tally);
}
