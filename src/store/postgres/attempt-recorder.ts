import { randomInt } from 'node:crypto';
import { UnavailableError } from '../../errors.js';
import { jobAfterAttempt, leaseExpiredFinish, leaseRescuePlan, type ExpiredLeaseRow } from '../job-rules.js';
import {
  AWAITING_REPORT,
  type AttemptAcceptParams,
  type AttemptFinishParams,
  type AttemptReport,
  type AttemptStartParams,
  type ExpiredLease,
  type JobRescueParams,
  type ProjectRow,
} from '../store.js';
import type { ConnectionPool, Queryable } from './connection-pool.js';
import { AttemptAcceptMany, AttemptFinish, AttemptFinishMany, AttemptStartMany } from './queries/attempts.js';
import { JobAwaitingReportLock, JobListExpiredLeases, JobReportRunning, JobRequeueExpired } from './queries/jobs.js';
import { ProjectGet } from './queries/tenancy.js';
import { TickBatcher } from './tick-batcher.js';

/**
 * A batch statement that failed for another reason than the database being unreachable (a value
 * it refused, say) changed nothing and may have failed for one row: its rows run again one at a
 * time. An unreachable database would fail them all alike, so they are not.
 */
const mayBeOneRowsFault = (error: unknown): boolean => !(error instanceof UnavailableError);

/**
 * Rows a project's overview figures of a minute are spread over (0011_project_overview.sql): two
 * instances' statements for one busy project take the same row's lock 1 time in 16.
 */
const OVERVIEW_SHARDS = 16;

/** The order of `ORDER BY … COLLATE "C"` (byte order; ids are ASCII), which the statements lock rows in. */
const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Attempts in PostgreSQL: started and finished by their lease holder, batched per event-loop turn,
 * and recorded as lost by the lease rescue when their worker stopped.
 */
export class AttemptRecorder {
  constructor(private readonly db: ConnectionPool) {}

  start(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.starts.run(params);
  }

  finish(params: AttemptFinishParams): Promise<boolean> {
    return this.finishes.run(params);
  }

  accept(params: AttemptAcceptParams): Promise<boolean> {
    return this.accepts.run(params);
  }

  /** A receiver's report, guarded on the attempt still waiting for it (locked until the commit). */
  report(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean> {
    const { jobId, attemptId, now, report } = params;
    if (report.kind === 'running') {
      return this.db.rows<{ n: number }>(JobReportRunning, [jobId, attemptId, now, report.deadline]).then((rows) => rows[0]!.n === 1);
    }
    return this.db.transaction(async (client) => {
      const waiting = await this.db.rows(JobAwaitingReportLock, [jobId, attemptId, now], client);
      if (waiting.length === 0) return false;
      const finish = { jobId, attemptId, workerId: AWAITING_REPORT, now, result: report.result, next: report.next, reported: true };
      const applied = await this.finishIn(client, finish, randomInt(OVERVIEW_SHARDS));
      if (applied && report.next.kind === 'retry') await this.db.notifyDue(report.next.runAt, now, client);
      return applied;
    });
  }

  /** 202s answered in the same event-loop turn share one statement. */
  private readonly accepts = new TickBatcher<AttemptAcceptParams, boolean>(async (batch) => {
    const rows = await this.db.rows<{ jobId: string }>(AttemptAcceptMany, [
      batch.map((b) => b.jobId),
      batch.map((b) => b.attemptId),
      batch.map((b) => b.workerId),
      batch.map((b) => b.now),
      batch.map((b) => b.deadline),
      batch.map((b) => b.statusCode),
      batch.map((b) => b.responseBody),
    ]);
    const applied = new Set(rows.map((row) => row.jobId));
    return batch.map((b) => applied.has(b.jobId));
  }, mayBeOneRowsFault);

  /** Attempts starting in the same event-loop turn (jobs due at the same moment) share one statement. */
  private readonly starts = new TickBatcher<AttemptStartParams, { attemptNumber: number } | null>(async (batch) => {
    const rows = await this.db.rows<{ jobId: string; attemptNumber: number }>(AttemptStartMany, [
      batch.map((b) => b.jobId),
      batch.map((b) => b.attemptId),
      batch.map((b) => b.workerId),
      batch.map((b) => b.now),
      batch.map((b) => b.leaseExpiresAt),
      randomInt(OVERVIEW_SHARDS),
    ]);
    const started = new Map(rows.map((row) => [row.jobId, row.attemptNumber]));
    return batch.map((b) => (started.has(b.jobId) ? { attemptNumber: started.get(b.jobId)! } : null));
  }, mayBeOneRowsFault);

  /** Results arriving in the same event-loop turn share one statement (and one commit). */
  private readonly finishes = new TickBatcher<AttemptFinishParams, boolean>(async (batch) => {
    const jobs = batch.map(jobAfterAttempt);
    const rows = await this.db.rows<{ jobId: string }>(AttemptFinishMany, [
      batch.map((b) => b.jobId),
      batch.map((b) => b.attemptId),
      batch.map((b) => b.workerId),
      batch.map((b) => b.now),
      jobs.map((j) => j.status),
      jobs.map((j) => j.runAt),
      jobs.map((j) => j.releasedAttempts),
      jobs.map((j) => j.lastError),
      batch.map((b) => b.result.outcome),
      batch.map((b) => b.result.statusCode),
      batch.map((b) => b.result.durationMs),
      batch.map((b) => b.result.error),
      batch.map((b) => b.result.responseBody),
      randomInt(OVERVIEW_SHARDS),
    ]);
    const applied = new Set(rows.map((row) => row.jobId));
    // Retried or released: queued again, due at runAt.
    const requeuedAt = batch.flatMap((b, i) => {
      const { runAt } = jobs[i]!;
      return applied.has(b.jobId) && runAt !== null ? [runAt] : [];
    });
    if (requeuedAt.length > 0) {
      // After the commit, and only a hint (other instances' timers find the jobs anyway): a failed
      // hint must not fail results that are already stored, or a retry of them would find them
      // applied and report the lease lost.
      await this.db.notifyDue(Math.min(...requeuedAt), Math.min(...batch.map((b) => b.now)));
    }
    return batch.map((b) => applied.has(b.jobId));
  }, mayBeOneRowsFault);

  /** One finish inside the rescue's transaction, so that it commits with the rest of the rescue. */
  private async finishIn(client: Queryable, params: AttemptFinishParams, shard: number): Promise<boolean> {
    const job = jobAfterAttempt(params);
    const { result } = params;
    const rows = await this.db.rows<{ n: number }>(
      AttemptFinish,
      [
        params.jobId,
        params.attemptId,
        params.workerId,
        params.now,
        job.status,
        job.runAt,
        job.releasedAttempts,
        job.lastError,
        result.outcome,
        result.statusCode,
        result.durationMs,
        result.error,
        result.responseBody,
        params.reported === true,
        shard,
      ],
      client,
    );
    return rows[0]!.n === 1;
  }

  /**
   * The expired leases, locked with SKIP LOCKED (two instances' rescuers never take the same one),
   * each requeued or its attempt recorded as lost in one transaction.
   */
  rescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    return this.db.transaction(async (client) => {
      const expired = await this.db.rows<ExpiredLeaseRow>(JobListExpiredLeases, [params.expiredBefore, params.limit, params.now], client);
      const rescued: ExpiredLease[] = [];
      // Each finish adds to its project's overview row of the minute: one transaction taking several
      // such rows takes them in one shard and in project order, as the batched finishes do.
      const shard = randomInt(OVERVIEW_SHARDS);
      const byProject = (a: { lease: ExpiredLease }, b: { lease: ExpiredLease }) => compareCodeUnits(a.lease.job.projectId, b.lease.job.projectId);
      for (const plan of expired.map(leaseRescuePlan).sort(byProject)) {
        const { job } = plan.lease;
        if (plan.kind === 'requeue') {
          await this.db.query(JobRequeueExpired, [job.id, params.now, params.expiredBefore], client);
        } else {
          const project = (await this.db.rows<ProjectRow>(ProjectGet, [job.projectId], client))[0]!;
          await this.finishIn(client, leaseExpiredFinish(plan, { now: params.now, project, retryAt: params.retryAt }), shard);
        }
        rescued.push(plan.lease);
      }
      if (rescued.length > 0) await this.db.notifyDue(params.now, params.now, client);
      return rescued;
    });
  }
}
