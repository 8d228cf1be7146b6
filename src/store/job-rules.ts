/**
 * The rules both drivers apply to jobs, written once: what a finished attempt does to its job,
 * how an expired lease is rescued, what a dispatch answers and when an Idempotency-Key replays
 * it, how counts are reported, where a list by creation starts.
 * The drivers only say how to store the outcome in their own SQL.
 *
 * Plain functions of their arguments, importing no driver: the embedded store's writes run them on
 * its writer thread (sqlite/*-writes.ts).
 */
import {
  AWAITING_REPORT,
  JOB_STATUSES,
  type AnswerTemplate,
  type ExpiredLease,
  type JobBulkAction,
  type JobBulkCursor,
  type JobBulkFilter,
  type JobCreateResult,
  type JobFilter,
  type JobListParams,
  type JobRow,
  type JobStatus,
  type JobTagPair,
  type NewJob,
  type StartedAtCreation,
  type StartedJob,
  type StoredResponse,
} from './job-store.js';
import type { AttemptFinishParams } from './attempt-store.js';
import type { PruneCounts, PrunedJobs } from './retention-store.js';
import type { ProjectRow } from './tenancy-store.js';
import type { PruneCutoffs } from '../retention.js';

/**
 * Which of a request's jobs may be created with their first attempt STARTED (JobCreateParams.
 * startDueNow), by index, in due order (dueOrder; within the request, its order): its jobs due at
 * once, up to the first that never is (a keyed job, whose key's turn decides, or a debounced one).
 * Those after it wait QUEUED with it, for a claim: none overtakes a job due before it (SPEC
 * section 10). A store starts the first `startDueNow.limit` of them.
 */
export function startableAtCreation(jobs: Pick<NewJob, 'runAt' | 'concurrencyKey' | 'debounce'>[], now: number): number[] {
  const never = (job: (typeof jobs)[number]) => job.concurrencyKey !== undefined || job.debounce !== undefined;
  // A single dispatch, the common case, without the arrays.
  if (jobs.length === 1) return jobs[0]!.runAt <= now && !never(jobs[0]!) ? [0] : [];
  const due = jobs.flatMap((job, index) => (job.runAt <= now ? [index] : []));
  due.sort((a, b) => jobs[a]!.runAt - jobs[b]!.runAt || a - b);
  const blocked = due.findIndex((index) => never(jobs[index]!));
  return blocked === -1 ? due : due.slice(0, blocked);
}

/**
 * The jobs a creation started (JobCreateParams.startDueNow) as the dispatcher takes them: each row
 * as it was inserted, rebuilt from the request's own jobs, so that no payload crosses back from the
 * store, with its first attempt.
 */
export function startedJobs(
  params: { projectId: string; now: number; jobs: NewJob[]; startDueNow: { workerId: string; leaseExpiresAt: number } },
  started: StartedAtCreation[],
): StartedJob[] {
  const byId = new Map(params.jobs.map((job) => [job.id, job]));
  const { now } = params;
  return started.map(({ jobId, seq, attemptId }) => {
    const job = byId.get(jobId)!;
    return {
      job: {
        seq,
        id: job.id,
        projectId: params.projectId,
        status: 'STARTED',
        payload: job.payload,
        scheduledFor: job.scheduledFor,
        runAt: job.runAt,
        queuedAt: now,
        maxRetries: job.maxRetries,
        attemptCount: 1,
        roundStartAttemptCount: 0,
        lastError: null,
        createdAt: now,
        updatedAt: now,
        completedAt: null,
        failedAt: null,
        cancelledAt: null,
        scheduleId: job.schedule?.id ?? null,
        traceparent: job.traceparent ?? null,
        tracestate: job.tracestate ?? null,
        tags: job.tags ?? null,
        concurrencyKey: job.concurrencyKey ?? null,
        leaseExpiresAt: params.startDueNow.leaseExpiresAt,
      },
      attempt: { attemptId, attemptNumber: 1, startedAt: now },
    };
  });
}

/** What a finished attempt writes to its job (only if the worker still holds the attempt's lease). */
interface JobAfterAttempt {
  status: 'COMPLETED' | 'FAILED' | 'QUEUED';
  /** The next attempt's due time when queued again; null leaves runAt as it was. */
  runAt: number | null;
  /**
   * 1 when the attempt is given back (the instance stopped before its answer came): the round's
   * start moves up by one, so the attempt does not count against the retry budget.
   */
  releasedAttempts: 0 | 1;
  /** The attempt's error (or its outcome when it has no message); null after a success keeps the last one. */
  lastError: string | null;
}

export function jobAfterAttempt(params: Pick<AttemptFinishParams, 'now' | 'next' | 'result'>): JobAfterAttempt {
  const { next, result } = params;
  return {
    status: next.kind === 'complete' ? 'COMPLETED' : next.kind === 'fail' ? 'FAILED' : 'QUEUED',
    runAt: next.kind === 'retry' ? next.runAt : next.kind === 'release' ? params.now : null,
    releasedAttempts: next.kind === 'release' ? 1 : 0,
    lastError: result.outcome === 'success' ? null : (result.error ?? result.outcome),
  };
}

/** An expired lease as both drivers read it (JobListExpiredLeases): the job and who held it for which attempt. */
export type ExpiredLeaseRow = JobRow & { leaseOwner: string; leaseAttemptId: string | null };

/**
 * What the rescue does with one expired lease. A job claimed but never started (DISPATCHED) was
 * never sent: it returns to QUEUED, due at once, and spends nothing. A STARTED one may have
 * reached the receiver: its attempt is recorded as lost and counts, like any failed attempt.
 */
type LeaseRescuePlan =
  | { kind: 'requeue'; lease: ExpiredLease }
  | { kind: 'finish'; lease: ExpiredLease; leaseOwner: string; attemptId: string };

export function leaseRescuePlan(row: ExpiredLeaseRow): LeaseRescuePlan {
  const { leaseOwner, leaseAttemptId, ...job } = row;
  if (job.status === 'DISPATCHED' || leaseAttemptId === null) return { kind: 'requeue', lease: { job, attemptNumber: null, awaitedReport: false } };
  return {
    kind: 'finish',
    lease: { job, attemptNumber: job.attemptCount - job.roundStartAttemptCount, awaitedReport: leaseOwner === AWAITING_REPORT },
    leaseOwner,
    attemptId: leaseAttemptId,
  };
}

const LEASE_EXPIRED_ERROR = 'lease expired: the worker stopped before the attempt finished';

/**
 * The finish that records a started attempt whose lease ran out, on behalf of the worker that
 * held it: lease_expired, timed from the start (the job's updatedAt), then retried at the time
 * `retryAt` gave for this lease and its project, or FAILED when it gave none. An attempt accepted
 * with 202 whose report never came ends as `timeout` instead (SPEC section 11).
 */
export function leaseExpiredFinish(
  plan: Extract<LeaseRescuePlan, { kind: 'finish' }>,
  params: { now: number; project: ProjectRow; retryAt: (lease: ExpiredLease, project: ProjectRow) => number | null },
): AttemptFinishParams {
  const runAt = params.retryAt(plan.lease, params.project);
  return {
    jobId: plan.lease.job.id,
    attemptId: plan.attemptId,
    workerId: plan.leaseOwner,
    now: params.now,
    result: plan.lease.awaitedReport
      ? {
          outcome: 'timeout',
          statusCode: null,
          durationMs: params.now - plan.lease.job.updatedAt,
          error: `no report within asyncCompletionTimeoutMs (${params.project.asyncCompletionTimeoutMs} ms) of the 202 or the last "running" report`,
          responseBody: null,
        }
      : { outcome: 'lease_expired', statusCode: null, durationMs: params.now - plan.lease.job.updatedAt, error: LEASE_EXPIRED_ERROR, responseBody: null },
    next: runAt === null ? { kind: 'fail' } : { kind: 'retry', runAt },
  };
}

/** The stored answer to a dispatch, from its template and which of its jobs the quota let in (AnswerTemplate). */
export function assembleAnswer(answer: AnswerTemplate, created: boolean[], usedBefore: number): StoredResponse | null {
  if (answer.kind === 'single') return created[0] ? { statusCode: answer.statusCode, body: answer.body } : null;
  const usedAfter = usedBefore + created.filter(Boolean).length;
  let index = 0;
  const items = answer.items.map((item) => {
    if ('error' in item) return item.error;
    // Quota refusals are a suffix of the batch: items count in request order.
    return created[index++] ? item.job : `${answer.quotaRefusal[0]}${usedAfter}${answer.quotaRefusal[1]}`;
  });
  return { statusCode: answer.statusCode, body: `{"jobs":[${items.join(',')}]}` };
}

/** The open job of a debounceKey as a dispatch it absorbs reads it back (NewJob.debounce). */
export interface DebouncedJob {
  id: string;
  scheduledFor: number | null;
  maxRetries: number;
  runAt: number;
  debouncedCount: number;
}

/**
 * The answer to a dispatch its debounceKey's open job absorbed (SPEC section 15): 200 with that
 * job's dispatch answer, `debounced` and the dispatches it absorbed so far.
 */
export function debouncedAnswer(job: DebouncedJob): StoredResponse {
  const scheduledFor = job.scheduledFor === null ? null : new Date(job.scheduledFor).toISOString();
  return {
    statusCode: 200,
    body: JSON.stringify({ jobId: job.id, status: 'QUEUED', scheduledFor, maxRetries: job.maxRetries, debounced: true, debouncedCount: job.debouncedCount }),
  };
}

/**
 * A dispatch whose Idempotency-Key already holds an answer still valid: the same request (by its
 * hash) gets that answer again, byte for byte; a different request under the key is a conflict.
 */
export function idempotentAnswer(stored: { requestHash: string; statusCode: number; body: string }, requestHash: string): JobCreateResult {
  if (stored.requestHash !== requestHash) return { kind: 'idempotency_conflict' };
  return { kind: 'replayed', response: { statusCode: stored.statusCode, body: stored.body } };
}

/** Every status, with 0 for those no job is in (GROUP BY only returns the others). */
export function countsByStatus(rows: { status: JobStatus; n: number }[]): Record<JobStatus, number> {
  const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

/** What a prune at these cut-offs would delete (`punctual prune --dry-run`), from a driver's counts. */
export async function countPrunable(
  cutoffs: PruneCutoffs,
  count: {
    jobs: (project: { projectId: string; finalBy: number }) => Promise<PrunedJobs>;
    idempotencyKeys: (createdBy: number) => Promise<number>;
    usageRows: (beforeDay: string) => Promise<number>;
    events: (occurredBy: number) => Promise<number>;
  },
): Promise<PruneCounts> {
  const total: PruneCounts = { jobs: 0, attempts: 0, idempotencyKeys: 0, usageRows: 0, events: 0 };
  for (const project of cutoffs.projects) {
    const counted = await count.jobs(project);
    total.jobs += counted.jobs;
    total.attempts += counted.attempts;
  }
  total.idempotencyKeys = await count.idempotencyKeys(cutoffs.idempotencyCreatedBy);
  total.usageRows = await count.usageRows(cutoffs.usageBeforeDay);
  total.events = await count.events(cutoffs.eventsOccurredBy);
  return total;
}

/**
 * Where a list by creation time (listedByCreation) starts reading, newest first: below this
 * (createdAt, seq), the window's end or the cursor's position, whichever comes first. seq 0 is
 * below every job's, so the window's end is `createdAt < createdBefore`.
 */
export function creationListStart(params: JobListParams): { createdAt: number; seq: number } {
  const windowEnd = { createdAt: params.createdBefore ?? Number.MAX_SAFE_INTEGER, seq: 0 };
  if (params.beforeSeq === null) return windowEnd;
  if (params.beforeCreatedAt == null) throw new Error('A list by creation time continues from a cursor with its createdAt');
  return params.beforeCreatedAt < windowEnd.createdAt ? { createdAt: params.beforeCreatedAt, seq: params.beforeSeq } : windowEnd;
}

/**
 * The index a filtered read of jobs is driven by, the same in both drivers (their
 * queries/job-filters.ts), and so the order it reads in; the filter's other fields are checked on
 * each job it reads:
 * - `tag`: job_tags, the rows of one tag (the rarest of those given: the store puts it first), by seq;
 * - `key`: jobs_by_key, the jobs of one concurrencyKey (every status), by seq;
 * - `failed`: jobs_failed, by failure time, then seq (bulk replay's window);
 * - `schedule`: jobs_schedule, by creation time, then seq;
 * - `created`: jobs_project_created, by creation time, then seq;
 * - `status`: jobs_project_status, the project's jobs of one status, by seq.
 */
export type FilterDriver = 'tag' | 'key' | 'failed' | 'schedule' | 'created' | 'status';

export function filterDriver(filter: JobBulkFilter): FilterDriver {
  if ((filter.tags?.length ?? 0) > 0) return 'tag';
  if (filter.concurrencyKey != null) return 'key';
  if (filter.failedFrom != null || filter.failedBefore != null) return 'failed';
  if (filter.scheduleId != null) return 'schedule';
  if (filter.createdFrom != null || filter.createdBefore != null) return 'created';
  return 'status';
}

/**
 * A filter's parameters as both drivers' filter SQL reads them (their queries/job-filters.ts,
 * REST_OF_FILTER): open bounds as the widest values, the first of `tags` (the one read by) apart
 * from the others, which each driver encodes as its SQL reads them.
 */
export function filterParameters(
  filter: Omit<JobFilter, 'status'> & { failedFrom?: number | null; failedBefore?: number | null },
  status: string | null,
  tags: JobTagPair[],
  action: JobBulkAction | null,
) {
  const [first, ...moreTags] = tags;
  return {
    projectId: filter.projectId,
    status,
    scheduleId: filter.scheduleId ?? null,
    concurrencyKey: filter.concurrencyKey ?? null,
    createdFrom: filter.createdFrom ?? 0,
    createdBefore: filter.createdBefore ?? Number.MAX_SAFE_INTEGER,
    dueFrom: filter.dueFrom ?? null,
    dueBefore: filter.dueBefore ?? null,
    failedFrom: filter.failedFrom ?? null,
    failedBefore: filter.failedBefore ?? null,
    reschedule: action?.kind === 'reschedule',
    scheduledFor: action?.kind === 'reschedule' ? action.scheduledFor : null,
    tagKey: first?.[0] ?? null,
    tagValue: first?.[1] ?? null,
    moreTags,
  };
}

/**
 * Where a bulk read by `driver` starts: past the cursor, and for a driver by an instant (creation
 * or failure) at the window's start if that is later. `keyFrom` bounds the instant; a row at the
 * cursor's instant itself must also be past its seq.
 */
export function bulkReadStart(filter: JobBulkFilter, driver: FilterDriver, after: JobBulkCursor | null): { keyFrom: number; afterKey: number; afterSeq: number } {
  const windowStart = driver === 'failed' ? (filter.failedFrom ?? 0) : driver === 'tag' || driver === 'key' || driver === 'status' ? 0 : (filter.createdFrom ?? 0);
  if (after === null) return { keyFrom: windowStart, afterKey: -1, afterSeq: 0 };
  return { keyFrom: Math.max(windowStart, after.key), afterKey: after.key, afterSeq: after.seq };
}

/** A job's tags as the store's rows hold them (JobRow.tags), one (key, value) pair each; none for null. */
export const tagPairs = (tags: string | null | undefined): [string, string][] => (tags ? Object.entries(JSON.parse(tags) as Record<string, string>) : []);

/** How many of a tag's rows a store counts, at most, to find the rarest of several tags (the one a filtered read goes by). */
export const TAG_COUNT_BOUND = 1_000;

/** The tags of a filter, the rarest first by the counts a store read (each up to TAG_COUNT_BOUND); ties keep the order given. */
export const rarestFirst = <T>(tags: T[], counts: number[]): T[] =>
  tags.map((tag, i) => ({ tag, n: counts[i]!, i })).sort((a, b) => a.n - b.n || a.i - b.i).map(({ tag }) => tag);
