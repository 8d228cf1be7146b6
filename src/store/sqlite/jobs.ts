/**
 * Jobs in the embedded store (../job-store.ts): reads on the reader connection, counts over every
 * job on the background connection, writes on the writer thread (job-writes.ts), where a claim
 * needs no SKIP LOCKED: the single writer runs it alone.
 */
import { countsByStatus, leaseExpiredFinish, leaseRescuePlan, rarestFirst, TAG_COUNT_BOUND, type ExpiredLeaseRow } from '../job-rules.js';
import { listedByFilter, type ClaimedJob, type ExpiredLease, type JobBulkChunk, type JobBulkParams, type JobClaimParams, type JobCreateParams, type JobCreateResult, type JobListParams, type JobRescueParams, type JobRow, type JobStatus, type JobStore, type JobTagPair, type JobTransitionResult, type KeyLoad } from '../job-store.js';
import type { BackgroundConnection } from './background-connection.js';
import type { CachedReads } from './cached-reads.js';
import * as jobBulkWrites from './job-bulk-writes.js';
import * as jobWrites from './job-writes.js';
import { bulkReadStatement, filteredListStatement, JobBulkCount, JobTagCount } from './queries/job-filters.js';
import { JobBusiestKeys, JobCountByStatus, JobCountKeysWaiting, JobGet, JobListDispatchedTo, JobListExpiredLeases, JobNextDueAt, jobListStatement } from './queries/jobs.js';
import type { Sql } from './sql.js';
import type { SqliteWriter } from './writer.js';

export class SqliteJobs implements JobStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
    private readonly cached: CachedReads,
    /** Counts over every job, off the main thread. */
    private readonly background: BackgroundConnection,
  ) {}

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    return this.writer.run(jobWrites.jobCreate, params);
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (this.sql(JobGet).get(params.jobId, params.projectId) as JobRow | undefined) ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    const [sql, values] = listedByFilter(params) ? filteredListStatement(params, this.rarestFirst(params.projectId, params.tags)) : jobListStatement(params);
    return this.sql(sql).all(values) as JobRow[];
  }

  /** A filter's tags, the one with the fewest jobs first (counted up to a bound): the read goes by it. */
  private rarestFirst(projectId: string, tags: JobTagPair[] | null | undefined): JobTagPair[] {
    if (!tags || tags.length < 2) return tags ?? [];
    const count = this.sql(JobTagCount);
    return rarestFirst(tags, tags.map(([key, value]) => (count.get({ projectId, key, value, bound: TAG_COUNT_BOUND }) as { n: number }).n));
  }

  /** The read runs on the writer with the change, so that no claim comes between them; only the tags' counts are read here. */
  jobBulkAct(params: JobBulkParams): Promise<JobBulkChunk> {
    const [driver, values] = bulkReadStatement(params, this.rarestFirst(params.filter.projectId, params.filter.tags));
    return this.writer.run(jobBulkWrites.jobBulkAct, { driver, values, action: params.action, now: params.now });
  }

  async jobBulkCount(params: Omit<JobBulkParams, 'now'>): Promise<number> {
    const [driver, values] = bulkReadStatement(params, this.rarestFirst(params.filter.projectId, params.filter.tags));
    return (this.sql(JobBulkCount[driver]).get(values) as { n: number }).n;
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.writer.run(jobWrites.jobCancelIfQueued, params);
  }

  jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    return this.writer.run(jobWrites.jobRescheduleIfQueued, params);
  }

  jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.writer.run(jobWrites.jobRetryIfFailed, params);
  }

  jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }> {
    return this.writer.run(jobWrites.jobHoldBatch, params);
  }

  jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number> {
    return this.writer.run(jobWrites.jobReleaseHeldBatch, params);
  }

  jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    return this.writer.run(jobWrites.jobClaimDue, params);
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (this.sql(JobNextDueAt).get(params) as { runAt: number | null }).runAt;
  }

  jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    return this.writer.run(jobWrites.jobLeaseRenew, params);
  }

  /**
   * Reads the expired leases here, decides each (retryAt needs the project, and is the caller's),
   * then has the writer apply the decisions, each guarded on the lease as read: one renewed or
   * finished in between is left alone and not reported.
   */
  async jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    const expired = this.sql(JobListExpiredLeases).all({ expiredBefore: params.expiredBefore, now: params.now, limit: params.limit }) as ExpiredLeaseRow[];
    if (expired.length === 0) return [];
    const plans = expired.map(leaseRescuePlan);
    const rescues = plans.map((plan): jobWrites.LeaseRescue => {
      if (plan.kind === 'requeue') return { kind: 'requeue', jobId: plan.lease.job.id };
      const project = this.cached.project(plan.lease.job.projectId)!;
      return { kind: 'finish', finish: leaseExpiredFinish(plan, { now: params.now, project, retryAt: params.retryAt }) };
    });
    const rescued = await this.writer.run(jobWrites.jobRescueLeases, { now: params.now, expiredBefore: params.expiredBefore, rescues });
    return plans.filter((_, i) => rescued[i]).map((plan) => plan.lease);
  }

  async jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.sql(JobListDispatchedTo).all(params.workerId) as ClaimedJob[];
  }

  jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    return this.writer.run(jobWrites.jobReleaseDispatched, params);
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    return countsByStatus(await this.background.all<{ status: JobStatus; n: number }>(JobCountByStatus));
  }

  async jobCountKeysWaiting(): Promise<number> {
    return (await this.background.all<{ n: number }>(JobCountKeysWaiting))[0]!.n;
  }

  /** On the background connection, as the other counts: a key's backlog of thousands is read off the event loop. */
  jobBusiestKeys(params: { projectId: string; limit: number }): Promise<KeyLoad[]> {
    return this.background.all<KeyLoad>(JobBusiestKeys, [params]);
  }
}
