/**
 * Jobs in PostgreSQL (../job-store.ts): guarded transitions are single statements, claims pick
 * rows with FOR UPDATE SKIP LOCKED; creation is job-creator.ts's and the lease rescue
 * attempt-recorder.ts's. A change that makes jobs due wakes the other instances (NOTIFY, a hint).
 */
import { countsByStatus, rarestFirst, TAG_COUNT_BOUND } from '../job-rules.js';
import { dueOrder, listedByFilter, type ClaimedJob, type ExpiredLease, type JobBulkChunk, type JobBulkParams, type JobClaimParams, type JobCreateParams, type JobCreateResult, type JobListParams, type JobRescueParams, type JobRow, type JobStatus, type JobStore, type JobTagPair, type JobTransitionResult, type KeyLoad } from '../job-store.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import type { ConnectionPool } from './connection-pool.js';
import type { JobCreator } from './job-creator.js';
import { bulkReadValues, filteredListStatement, JobBulkAct, JobBulkCount, JobTagCounts } from './queries/job-filters.js';
import { JobBusiestKeys, JobCancelIfQueued, JobClaimDue, JobCountByStatus, JobCountKeysWaiting, JobGet, JobHoldBatch, JobLeaseRenew, JobListDispatchedTo, JobNextDueAt, JobReleaseDispatched, JobReleaseHeldBatch, JobRescheduleIfQueued, JobRetryIfFailed, JobStatusGet, jobListStatement } from './queries/jobs.js';
import { argumentsOf } from './queries/named-params.js';

export class PostgresJobs implements JobStore {
  constructor(
    private readonly db: ConnectionPool,
    private readonly creator: JobCreator,
    private readonly recorder: AttemptRecorder,
  ) {}

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    return this.creator.create(params);
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (await this.db.rows<JobRow>(JobGet, [params.jobId, params.projectId]))[0] ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    if (!listedByFilter(params)) return this.db.rows<JobRow>(...jobListStatement(params));
    const [statement, values] = filteredListStatement(params, await this.rarestFirst(params.projectId, params.tags));
    return this.db.rows<JobRow>(statement.text, argumentsOf(statement, values));
  }

  /** A filter's tags, the one with the fewest jobs first (counted up to a bound): the read goes by it. */
  private async rarestFirst(projectId: string, tags: JobTagPair[] | null | undefined): Promise<JobTagPair[]> {
    if (!tags || tags.length < 2) return tags ?? [];
    const counts = await this.db.rows<{ n: number }>(JobTagCounts, [projectId, tags.map(([key]) => key), tags.map(([, value]) => value), TAG_COUNT_BOUND]);
    return rarestFirst(tags, counts.map((row) => row.n));
  }

  async jobBulkAct(params: JobBulkParams): Promise<JobBulkChunk> {
    const [driver, values] = bulkReadValues(params, await this.rarestFirst(params.filter.projectId, params.filter.tags));
    const statement = JobBulkAct[driver][params.action.kind];
    const [row] = await this.db.rows<{ matched: number; changed: number; earliestRunAt: number | null; lastKey: number | null; lastSeq: number | null }>(
      statement.text,
      argumentsOf(statement, values),
    );
    const { matched, changed, earliestRunAt, lastKey, lastSeq } = row!;
    const due = params.action.kind === 'cancel' ? null : earliestRunAt;
    if (due !== null) await this.db.notifyDue(due, params.now);
    return { matched, changed, next: lastSeq === null ? null : { key: lastKey!, seq: lastSeq }, earliestRunAt: due };
  }

  async jobBulkCount(params: Omit<JobBulkParams, 'now'>): Promise<number> {
    const [driver, values] = bulkReadValues(params, await this.rarestFirst(params.filter.projectId, params.filter.tags));
    const statement = JobBulkCount[driver];
    return (await this.db.rows<{ n: number }>(statement.text, argumentsOf(statement, values)))[0]!.n;
  }

  /** Runs a guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
  private async transition(statement: string, params: { projectId: string; jobId: string }, extra: unknown[]): Promise<JobTransitionResult> {
    const job = (await this.db.rows<JobRow>(statement, [params.jobId, params.projectId, ...extra]))[0];
    if (job) return { ok: true, job };
    const current = (await this.db.rows<{ status: JobStatus }>(JobStatusGet, [params.jobId, params.projectId]))[0];
    return { ok: false, status: current?.status ?? null };
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.transition(JobCancelIfQueued, params, [params.now]);
  }

  async jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(JobRescheduleIfQueued, params, [params.now, params.scheduledFor]);
    if (result.ok) await this.db.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(JobRetryIfFailed, params, [params.now]);
    if (result.ok) await this.db.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }> {
    const [end] = await this.db.rows<{ lastSeq: number | null; n: number }>(JobHoldBatch, [params.projectId, params.afterSeq, params.limit]);
    return { nextAfterSeq: end!.n < params.limit ? null : Number(end!.lastSeq) };
  }

  async jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number> {
    const released = (await this.db.query(JobReleaseHeldBatch, [params.projectId, params.limit])).rowCount ?? 0;
    if (released > 0) await this.db.notifyDue(0, 0);
    return released;
  }

  async jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    const { now, dueBy, limit, workerId, leaseExtraMs, excludeProjectIds, heldByProject, claimRule } = params;
    const held = Object.entries(heldByProject);
    const claimed = await this.db.rows<ClaimedJob>(JobClaimDue, [
      now,
      dueBy,
      limit,
      workerId,
      leaseExtraMs,
      excludeProjectIds,
      held.map(([projectId]) => projectId),
      held.map(([, count]) => count),
      claimRule.aheadFactor,
      claimRule.share,
      claimRule.rateWindowsPerSecond,
    ]);
    // RETURNING gives no order; deliveries start earliest-due first.
    return claimed.sort(dueOrder);
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (await this.db.rows<{ runAt: number | null }>(JobNextDueAt, [params.after]))[0]!.runAt;
  }

  async jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    await this.db.query(JobLeaseRenew, [params.workerId, params.leases.map((l) => l.jobId), params.leases.map((l) => l.leaseExpiresAt)]);
  }

  jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    return this.recorder.rescueExpiredLeases(params);
  }

  jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.db.rows<ClaimedJob>(JobListDispatchedTo, [params.workerId]);
  }

  async jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    const released = (await this.db.query(JobReleaseDispatched, [params.workerId, params.now])).rowCount ?? 0;
    if (released > 0) await this.db.notifyDue(params.now, params.now);
    return released;
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    return countsByStatus(await this.db.rows<{ status: JobStatus; n: number }>(JobCountByStatus));
  }

  async jobCountKeysWaiting(): Promise<number> {
    return (await this.db.rows<{ n: number }>(JobCountKeysWaiting))[0]!.n;
  }

  async jobBusiestKeys(params: { projectId: string; limit: number }): Promise<KeyLoad[]> {
    return this.db.rows<KeyLoad>(JobBusiestKeys, [params.projectId, params.limit]);
  }
}
