/**
 * The storage contract of jobs, part of Store (store.ts): creation under quota and Idempotency-Key,
 * lists, the guarded transitions a client asks for, holding a paused project's jobs, and the
 * claims and leases of delivery. A method that changes a job names the state it requires
 * (`jobCancelIfQueued`), so a late or duplicate write changes nothing.
 */
import type { ProjectRow } from './tenancy-store.js';
import { methodList } from './forward-methods.js';

export const JOB_STATUSES = ['QUEUED', 'DISPATCHED', 'STARTED', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** A job in one of these changes no more (SPEC section 3), except FAILED through a retry. */
export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED'];

export interface JobRow {
  /** Insertion order; the list cursor. Never shown to clients as such. */
  seq: number;
  id: string;
  projectId: string;
  status: JobStatus;
  /** The payload exactly as JSON.stringify produced it at dispatch. */
  payload: string;
  scheduledFor: number | null;
  /** When the next attempt is due; meaningful while QUEUED (the contract's nextAttemptAt). */
  runAt: number;
  /** When the job entered its current QUEUED state. */
  queuedAt: number;
  maxRetries: number;
  attemptCount: number;
  /** attemptCount when the current retry budget began (the retry endpoint starts a new one). */
  roundStartAttemptCount: number;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  completedAt: number | null;
  failedAt: number | null;
  cancelledAt: number | null;
  /** The schedule that created it (SPEC section 9), else null. */
  scheduleId: string | null;
  /**
   * The W3C traceparent its deliveries continue (SPEC section 4): the dispatch request's, or with
   * OpenTelemetry export on its dispatch span's; null when there was none (a schedule's job).
   */
  traceparent: string | null;
  /** The tracestate that came with it, carried along unchanged; null when none did. */
  tracestate: string | null;
  /**
   * Its tags (SPEC section 14) exactly as JSON.stringify wrote them at dispatch; null when it has
   * none. The tag lookup (job_tags, 0015_tags.sql) holds one row per entry, written with the job:
   * whatever changes a job's tags must rewrite both in one transaction.
   */
  tags: string | null;
  /**
   * Its concurrencyKey (SPEC section 15), null for none: of a project's jobs with one key, at most
   * its keyConcurrency run at once, in their key's order (0016_concurrency_keys.sql).
   */
  concurrencyKey: string | null;
}

/**
 * The lease owner of a job whose attempt was accepted with 202 and waits for the receiver's
 * report: no worker holds it (worker ids start with `wrk_`), and its lease's expiry is the report's
 * deadline, which the lease rescue of any instance enforces.
 */
export const AWAITING_REPORT = 'async';

export interface NewJob {
  id: string;
  payload: string;
  scheduledFor: number | null;
  runAt: number;
  maxRetries: number;
  /**
   * A schedule's job: the schedule, and for a fire of its cron (not a trigger) the fire instant. A
   * fire for an instant after its schedule's pause (schedule-store.ts, scheduleUpdate) creates no
   * job, and is reported as created, as a fire whose job exists already is: the quota refused nothing.
   */
  schedule?: { id: string; fireAt: number | null };
  /** The trace its deliveries continue (JobRow.traceparent); absent or null: none. */
  traceparent?: string | null;
  tracestate?: string | null;
  /**
   * Its tags as JSON.stringify wrote them (JobRow.tags), of an object of 1 to 10 entries; absent
   * for none (an empty object is none), so that a job without tags writes nothing for them.
   */
  tags?: string;
  /** Its concurrencyKey (JobRow.concurrencyKey); absent for none. Never created started: its key's turn decides. */
  concurrencyKey?: string;
  /**
   * A dispatch with a debounceKey (SPEC section 15), alone in its request: when the project has a
   * job of the key QUEUED and never attempted, no job is created; that one takes this one's
   * payload (its tags when given, its maxRetries when `maxRetriesGiven`) and its runAt, but never
   * later than its own deadline, and the dispatch is answered as absorbed (JobCreateResult
   * `debounced`). Otherwise this job is created with the key and `deadline` (its first dispatch +
   * maxWaitMs; null for none).
   */
  debounce?: { key: string; deadline: number | null; maxRetriesGiven: boolean };
}

/** A response kept under an Idempotency-Key, replayed byte for byte. */
export interface StoredResponse {
  statusCode: number;
  body: string;
}

/**
 * The answer to a dispatch, as data, so that a store assembles it inside its transaction (the
 * embedded store's runs on its writer thread) from which jobs the quota let in, and stores it
 * with an Idempotency-Key.
 * - `single`: stored when the job was created; a job refused by the quota stores nothing (its
 *   429 is an error answer).
 * - `batch`: `{"jobs":[…]}` of the items in request order: an invalid item's error, a created
 *   job's answer, or for a job refused by the quota `quotaRefusal[0] + used + quotaRefusal[1]`,
 *   where used is the team's count once the batch's jobs are in.
 */
export type AnswerTemplate =
  | { kind: 'single'; statusCode: number; body: string }
  | { kind: 'batch'; statusCode: number; items: ({ job: string } | { error: string })[]; quotaRefusal: [string, string] };

export interface JobCreateParams {
  projectId: string;
  teamId: string;
  now: number;
  jobs: NewJob[];
  /** Jobs allowed this UTC month, counted in the same transaction; null: no quota. */
  quota: { limit: number; monthStartDay: string; monthEndDay: string } | null;
  idempotency: { endpoint: string; key: string; requestHash: string; validAfter: number } | null;
  /** The answer, assembled inside the transaction so that it is stored with the jobs (job-rules.ts, assembleAnswer). */
  answer: AnswerTemplate;
  /**
   * Jobs due at once may be created with their first attempt already STARTED for this worker (up
   * to `limit`, and none while the project is paused or held back by a Retry-After): the caller
   * sends them at once, with no claim and no separate start. A store may ignore this (then they
   * are created QUEUED and claimed as usual).
   */
  startDueNow?: { workerId: string; leaseExpiresAt: number; limit: number };
}

/** A job created with its first attempt STARTED (JobCreateParams.startDueNow): which, and its attempt. */
export interface StartedAtCreation {
  jobId: string;
  seq: number;
  attemptId: string;
}

export type JobCreateResult =
  | { kind: 'created'; created: boolean[]; usedBefore: number; response: StoredResponse | null; started: StartedAtCreation[] }
  | { kind: 'replayed'; response: StoredResponse }
  /** The dispatch was absorbed by its debounceKey's open job (NewJob.debounce): no job created, none counted; the job is due at `runAt`. */
  | { kind: 'debounced'; response: StoredResponse; runAt: number }
  | { kind: 'idempotency_conflict' };

/** A guarded transition either happened or tells why not (null status: no such job). */
export type JobTransitionResult = { ok: true; job: JobRow } | { ok: false; status: JobStatus | null };

/**
 * The one filter of a project's jobs (SPEC section 14), the same for lists, bulk actions, the
 * dashboard and the CLI: each field given narrows it. A job matches `tags` when it has every one of
 * them; `dueFrom` / `dueBefore` match QUEUED jobs whose next attempt is due in [dueFrom, dueBefore).
 */
export interface JobFilter {
  projectId: string;
  status: JobStatus | null;
  /** (key, value) pairs, each a tag the job must have; null or empty: any. */
  tags?: JobTagPair[] | null;
  /** Only the jobs this schedule created. */
  scheduleId?: string | null;
  /** Only jobs created in [createdFrom, createdBefore) when given. */
  createdFrom?: number | null;
  createdBefore?: number | null;
  dueFrom?: number | null;
  dueBefore?: number | null;
  /** Only the jobs of this concurrencyKey (SPEC section 15). */
  concurrencyKey?: string | null;
}

export type JobTagPair = [key: string, value: string];

/**
 * A page of a project's jobs, newest first. A list by creation window or by schedule
 * (listedByCreation) is ordered by (createdAt, seq) and continues below the cursor's pair, so
 * that it is read from the window's end in an index whatever the window's age; any other list
 * (one by tag or due window included) is ordered by seq alone.
 */
export interface JobListParams extends JobFilter {
  /** The cursor: the seq of the previous page's last job, and its createdAt; null from the newest. */
  beforeSeq: number | null;
  /** Required with beforeSeq in a list by creation; not read by the others. */
  beforeCreatedAt?: number | null;
  limit: number;
}

/** Whether this list reads a tag's, a due window's or a concurrencyKey's jobs (jobsByFilter in each driver), ordered by seq. */
export const listedByFilter = (params: Pick<JobFilter, 'tags' | 'dueFrom' | 'dueBefore' | 'concurrencyKey'>): boolean =>
  (params.tags?.length ?? 0) > 0 || params.dueFrom != null || params.dueBefore != null || params.concurrencyKey != null;

/** Whether this list is ordered by (createdAt, seq), and so needs a cursor's createdAt as well as its seq. */
export const listedByCreation = (params: Pick<JobListParams, 'createdFrom' | 'createdBefore' | 'scheduleId' | 'tags' | 'dueFrom' | 'dueBefore' | 'concurrencyKey'>): boolean =>
  !listedByFilter(params) && (params.createdFrom != null || params.createdBefore != null || params.scheduleId != null);

/**
 * A bulk action (SPEC section 14) on the jobs of a filter, each changed only if it is still in
 * the state the action needs (QUEUED for cancel and reschedule, FAILED for retry), exactly as the
 * single endpoints change it; a reschedule to where a job is already due changes nothing, and so
 * does not match it.
 */
export type JobBulkAction = { kind: 'cancel' } | { kind: 'reschedule'; scheduledFor: number | null } | { kind: 'retry' };

/** The state a bulk action acts on. */
export const bulkActionStatus = (action: JobBulkAction): JobStatus => (action.kind === 'retry' ? 'FAILED' : 'QUEUED');

/** A bulk action's filter: the one filter less its status (the action's), and bulk replay's failure window. */
export interface JobBulkFilter extends Omit<JobFilter, 'status'> {
  /** POST /api/jobs/retry: FAILED jobs that failed in [failedFrom, failedBefore). */
  failedFrom?: number | null;
  failedBefore?: number | null;
}

/**
 * Where a bulk action goes on from: the last job it read, in the order its filter is read in (the
 * jobs' insertion order, or for a window of creation or failure that instant first, then seq).
 */
export interface JobBulkCursor {
  key: number;
  seq: number;
}

export interface JobBulkParams {
  filter: JobBulkFilter;
  action: JobBulkAction;
  /** At most this many jobs are matched (read and decided). */
  limit: number;
  now: number;
  /** Jobs up to this one were read already; null from the first. */
  after: JobBulkCursor | null;
}

/** One transaction of a bulk action. */
export interface JobBulkChunk {
  /** Jobs the filter matched when read; each was then changed, or had left the action's state meanwhile. */
  matched: number;
  changed: number;
  /** The cursor after the last job matched; null when none was. */
  next: JobBulkCursor | null;
  /** The earliest next attempt of a job changed, for a reschedule or a retry (the claim loop's wake-up); else null. */
  earliestRunAt: number | null;
}

/**
 * A job claimed for delivery (DISPATCHED, leased to one worker), or claimed with its attempt
 * STARTED at once (JobClaimParams.startable): then `started` is that attempt.
 */
export interface ClaimedJob extends JobRow {
  leaseExpiresAt: number;
  started?: StartedAttempt;
}

/** An attempt recorded STARTED for a worker, before its request leaves. */
export interface StartedAttempt {
  attemptId: string;
  attemptNumber: number;
  startedAt: number;
}

/**
 * A job created with its first attempt already STARTED for this worker, as the dispatch path
 * hands it to the dispatcher (the job's row as created, rebuilt from what was inserted).
 */
export interface StartedJob {
  job: ClaimedJob;
  attempt: StartedAttempt;
}

/**
 * The order in which a project's jobs start (SPEC section 10: earliest due first), and ties by
 * creation: written once, for the claims of both stores and the dispatcher's queues.
 */
export const dueOrder = (a: Pick<JobRow, 'runAt' | 'seq'>, b: Pick<JobRow, 'runAt' | 'seq'>): number => a.runAt - b.runAt || a.seq - b.seq;

export interface JobClaimParams {
  now: number;
  dueBy: number;
  limit: number;
  workerId: string;
  /** A claim's lease is the project's timeout plus this (leaseMs in src/delivery/capacity-rules.ts). */
  leaseExtraMs: number;
  /** Projects held back or without room: their jobs stay QUEUED (cancellable) for now. */
  excludeProjectIds: string[];
  /** Jobs of each project the worker holds (taken before `startable` was reserved): it claims and starts within each one's room. */
  heldByProject: Record<string, number>;
  /**
   * The numbers of claimLimit (src/delivery/capacity-rules.ts), which the claim applies per project in
   * SQL: aheadFactor × min(deliveryConcurrency, share), and for a rated project no more
   * than ceil(rate / rateWindowsPerSecond), at least one.
   */
  claimRule: { aheadFactor: number; share: number; rateWindowsPerSecond: number };
  /**
   * How many of each project's jobs due by `now` the worker may start at once: those (the earliest
   * of each project) are claimed with their attempt STARTED in the claim itself, with an attempt id
   * of `attemptPrefix` and the job's seq; the rest are DISPATCHED. A store may ignore this (then
   * every job is DISPATCHED and started as usual). Never more than the project's slots, from its
   * row as it is now, less `heldByProject`: the worker reserved by settings it loaded earlier.
   */
  startable?: { byProject: Record<string, number>; attemptPrefix: string };
}

export interface JobRescueParams {
  now: number;
  /** Leases that end before this instant are rescued (now, or later to take over a dead process's leases at start). */
  expiredBefore: number;
  limit: number;
  retryAt: (lease: ExpiredLease, project: ProjectRow) => number | null;
}

/** A lease that ran out, as the rescuer sees it; `attemptNumber` is set when an attempt was STARTED. */
export interface ExpiredLease {
  job: JobRow;
  attemptNumber: number | null;
  /** The attempt was accepted with 202 and no report came by its deadline: it ends as `timeout`. */
  awaitedReport: boolean;
}

export interface JobStore {
  jobCreate(params: JobCreateParams): Promise<JobCreateResult>;
  jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null>;
  jobList(params: JobListParams): Promise<JobRow[]>;
  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult>;
  /** runAt becomes the later of `scheduledFor ?? queuedAt` and queuedAt. */
  jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult>;
  /** FAILED → QUEUED, due at once, with a fresh retry budget. */
  jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult>;
  /**
   * One transaction of a bulk action: the next jobs of the filter after `after` in the action's
   * state, at most `limit`, oldest first, each changed as the single transition would change it,
   * decided against a concurrent claim as that one is (a job that left the state meanwhile is
   * matched, not changed). Once it resolves, no job it cancelled is ever started.
   */
  jobBulkAct(params: JobBulkParams): Promise<JobBulkChunk>;
  /** How many jobs a bulk action would match after `after`, counted up to `limit` (its dry run, and whether more remain). */
  jobBulkCount(params: Omit<JobBulkParams, 'now'>): Promise<number>;
  /**
   * Pausing (SPEC section 10): holds the next `limit` of a paused project's QUEUED jobs after seq
   * `afterSeq`, so that claims no longer read them; the seq to go on from, or null when done.
   * Nothing changes once the project is resumed. Jobs entering QUEUED while it is paused are held
   * by the store itself.
   */
  jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }>;
  /** Resuming: releases up to `limit` of a project's held jobs, earliest due first, unless it is paused again; how many. */
  jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number>;
  /**
   * QUEUED jobs due by `dueBy` (now, or a little ahead) become DISPATCHED, leased to `workerId`
   * until now + the project's delivery timeout + leaseExtraMs; at most `limit`, earliest due first.
   */
  jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]>;
  /**
   * The earliest runAt after `after` of a QUEUED job, or null when none waits. The scheduler asks
   * for the first job beyond what its last claim covered: jobs due before that are either claimed
   * or belong to projects with every slot taken, which a freed slot wakes it for.
   */
  jobNextDueAt(params: { after: number }): Promise<number | null>;
  /** Extends the leases this worker holds on these jobs. */
  jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void>;
  /**
   * Jobs whose lease expired at `now`: a DISPATCHED one returns to QUEUED due at once; a STARTED
   * one has its attempt recorded as lease_expired and is retried (runAt from `retryAt`) or FAILED.
   * A job waiting for its receiver's report is rescued only once its deadline is before `now`,
   * whatever `expiredBefore` says (no dead worker holds it), its attempt ending as `timeout`.
   */
  jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]>;
  /**
   * The jobs claimed by this worker and not yet started. After a claim whose answer was lost (the
   * connection broke after the commit), these include jobs the worker never heard of.
   */
  jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]>;
  /** On shutdown: this worker's DISPATCHED jobs (never sent) return to QUEUED, due at once. */
  jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number>;
  jobCountByStatus(): Promise<Record<JobStatus, number>>;
  /** Concurrency keys (SPEC section 15) with at least one job waiting for its key's turn, all projects (`/metrics`). */
  jobCountKeysWaiting(): Promise<number>;
  /**
   * A project's busiest concurrency keys (SPEC section 15): each key with an unfinished job, its
   * QUEUED jobs (waiting) and its DISPATCHED or STARTED ones (running), most waiting first (then
   * most running, then by key), at most `limit` (the dashboard's overview).
   */
  jobBusiestKeys(params: { projectId: string; limit: number }): Promise<KeyLoad[]>;
}

/** One concurrency key's unfinished jobs (JobStore.jobBusiestKeys). */
export interface KeyLoad {
  key: string;
  waiting: number;
  running: number;
}

/** JobStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const JOB_STORE_METHODS = methodList<JobStore>()(['jobCreate', 'jobGet', 'jobList', 'jobCancelIfQueued', 'jobRescheduleIfQueued', 'jobRetryIfFailed', 'jobBulkAct', 'jobBulkCount', 'jobHoldBatch', 'jobReleaseHeldBatch', 'jobClaimDue', 'jobNextDueAt', 'jobLeaseRenew', 'jobRescueExpiredLeases', 'jobListDispatchedTo', 'jobReleaseDispatched', 'jobCountByStatus', 'jobCountKeysWaiting', 'jobBusiestKeys'] as const);
