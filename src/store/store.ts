/**
 * The storage contract. Code outside src/store/ imports this file and never a driver.
 *
 * Methods are named noun-first after what they touch, and a method that changes a job names the
 * state it requires (`jobCancelIfQueued`), so a late or duplicate write changes nothing.
 * Every instant is epoch milliseconds supplied by the caller's clock: a store never reads the time.
 */
import type { PruneCutoffs } from '../retention.js';
import type { ScheduleStore } from './schedule-store.js';
import type { EventStore } from './event-store.js';
import type { OverviewStore } from './overview-store.js';

export const JOB_STATUSES = ['QUEUED', 'DISPATCHED', 'STARTED', 'COMPLETED', 'FAILED', 'CANCELLED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** A job in one of these changes no more (SPEC section 3), except FAILED through a retry. */
export const FINAL_JOB_STATUSES: readonly JobStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED'];

export interface TeamRow {
  id: string;
  name: string;
  plan: string;
  createdAt: number;
}

interface ProjectSettings {
  name: string;
  webhookUrl: string | null;
  /** The project's default retry count; null means "the plan's cap". */
  retryMaxRetries: number | null;
  retryInitialDelayMs: number;
  retryFactor: number;
  retryMaxDelayMs: number;
  deliveryTimeoutMs: number;
  deliveryConcurrency: number;
  acceptAny2xx: boolean;
  /** Days a final job is kept (SPEC section 12); null means "the server's default" (PUNCTUAL_RETENTION_DAYS). */
  retentionDays: number | null;
  /** Nothing is delivered while true (SPEC section 10); jobs wait QUEUED. */
  paused: boolean;
  /** Where events are POSTed (SPEC section 10); null: none are recorded. */
  eventsUrl: string | null;
  eventsFormat: EventsFormat;
  /** At most this many attempts start per second (SPEC section 11); null, no limit. */
  deliveryRatePerSecond: number | null;
  /** A 202 means "accepted, working on it" (SPEC section 11): the attempt waits for the receiver's report. */
  asyncCompletion: boolean;
  /** How long an accepted attempt waits for its report (and a "running" report extends it by). */
  asyncCompletionTimeoutMs: number;
}

export const EVENTS_FORMATS = ['json', 'slack'] as const;
export type EventsFormat = (typeof EVENTS_FORMATS)[number];

export interface ProjectRow extends ProjectSettings {
  id: string;
  teamId: string;
  createdAt: number;
}

export interface ApiKeyRow {
  id: string;
  projectId: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** What authenticating with an API key yields: the key and everything a job request needs. */
export interface ApiKeyPrincipal {
  key: ApiKeyRow & { hash: Buffer };
  project: ProjectRow;
  team: TeamRow;
}

export interface WebhookSecretRow {
  id: string;
  projectId: string;
  /** Sealed by crypto/secret-box.ts; the store never sees a secret in clear. */
  ciphertext: string;
  createdAt: number;
  /** null for the newest secret; set when a rotation replaced it. */
  expiresAt: number | null;
}

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
}

export type AttemptOutcome = 'success' | 'http_error' | 'timeout' | 'network_error' | 'lease_expired';

export interface AttemptRow {
  id: string;
  jobId: string;
  attemptNumber: number;
  startedAt: number;
  finishedAt: number | null;
  outcome: AttemptOutcome | null;
  statusCode: number | null;
  durationMs: number | null;
  error: string | null;
  responseBody: string | null;
  /** When the receiver answered 202 to a project with asyncCompletion (SPEC section 11). */
  acceptedAt: number | null;
  /** When the receiver last reported on it (a "running" report included). */
  reportedAt: number | null;
  /** While the attempt waits for its report: the deadline, after which it ends as `timeout`. */
  reportBy: number | null;
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
  | { kind: 'idempotency_conflict' };

/** A guarded transition either happened or tells why not (null status: no such job). */
export type JobTransitionResult = { ok: true; job: JobRow } | { ok: false; status: JobStatus | null };

/**
 * A page of a project's jobs, newest first. A list by creation window or by schedule
 * (listedByCreation) is ordered by (createdAt, seq) and continues below the cursor's pair, so
 * that it is read from the window's end in an index whatever the window's age; any other list is
 * ordered by seq alone.
 */
export interface JobListParams {
  projectId: string;
  status: JobStatus | null;
  /** Only jobs created in [createdFrom, createdBefore) when given (the dashboard's time range). */
  createdFrom?: number | null;
  createdBefore?: number | null;
  /** Only the jobs this schedule created. */
  scheduleId?: string | null;
  /** The cursor: the seq of the previous page's last job, and its createdAt; null from the newest. */
  beforeSeq: number | null;
  /** Required with beforeSeq in a list by creation; not read by the others. */
  beforeCreatedAt?: number | null;
  limit: number;
}

/** Whether this list is ordered by (createdAt, seq), and so needs a cursor's createdAt as well as its seq. */
export const listedByCreation = (params: Pick<JobListParams, 'createdFrom' | 'createdBefore' | 'scheduleId'>): boolean =>
  params.createdFrom != null || params.createdBefore != null || params.scheduleId != null;

/**
 * A project's FAILED jobs that failed in [failedFrom, failedBefore) and were created in
 * [createdFrom, createdBefore); with a scheduleId, only that schedule's (the dashboard's filter).
 */
export interface FailedJobsFilter {
  projectId: string;
  failedFrom: number;
  failedBefore: number;
  createdFrom: number;
  createdBefore: number;
  scheduleId?: string | null;
}

export type ProjectPatch = Partial<ProjectSettings>;

/** A dashboard user (SPEC section 7). The password hash never leaves the service layer. */
export interface UserRow {
  id: string;
  /** Lower-cased. */
  email: string;
  /** Sees and manages every team, as the admin token does. */
  isOperator: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface UserWithPassword extends UserRow {
  passwordHash: string;
}

export interface SessionRow {
  /** SHA-256 of the cookie's token; the token itself is never stored. */
  tokenHash: Buffer;
  userId: string;
  /** The synchronizer token every state-changing request of this session must carry. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
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

/** What a finished attempt does to its job; decided by the delivery layer, applied atomically by the store. */
export type AttemptNext =
  | { kind: 'complete' }
  | { kind: 'retry'; runAt: number }
  | { kind: 'fail' }
  /** The instance stopped before the answer came: queued again at once, without spending the retry budget. */
  | { kind: 'release' };

export interface AttemptResult {
  outcome: AttemptOutcome;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
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
  /** A claim's lease is the project's timeout plus this (leaseMs in src/delivery/capacity.ts). */
  leaseExtraMs: number;
  /** Projects held back or without room: their jobs stay QUEUED (cancellable) for now. */
  excludeProjectIds: string[];
  /** How many jobs of each project the worker holds already: it claims no more than each one's room. */
  heldByProject: Record<string, number>;
  /**
   * The numbers of claimLimit (src/delivery/capacity.ts), which the claim applies per project in
   * SQL: min(aheadFactor × min(deliveryConcurrency, share), share), and for a rated project no more
   * than ceil(rate / rateWindowsPerSecond), at least one.
   */
  claimRule: { aheadFactor: number; share: number; rateWindowsPerSecond: number };
  /**
   * How many of each project's jobs due by `now` the worker may start at once: those (the earliest
   * of each project) are claimed with their attempt STARTED in the claim itself, with an attempt id
   * of `attemptPrefix` and the job's seq; the rest are DISPATCHED. A store may ignore this (then
   * every job is DISPATCHED and started as usual).
   */
  startable?: { byProject: Record<string, number>; attemptPrefix: string };
}

export interface AttemptStartParams {
  jobId: string;
  attemptId: string;
  workerId: string;
  now: number;
  leaseExpiresAt: number;
}

export interface AttemptFinishParams {
  jobId: string;
  attemptId: string;
  workerId: string;
  now: number;
  result: AttemptResult;
  next: AttemptNext;
  /** The receiver's own report ends the attempt (SPEC section 11): reportedAt is set to `now`. */
  reported?: boolean;
}

/** A 202 to a project with asyncCompletion: the attempt waits for a report until `deadline`. */
export interface AttemptAcceptParams {
  jobId: string;
  attemptId: string;
  workerId: string;
  now: number;
  deadline: number;
  statusCode: number;
  responseBody: string | null;
}

/** A job and one of its attempts, as a report on that attempt needs them. */
export interface AttemptWithJob {
  job: JobRow;
  project: ProjectRow;
  attempt: AttemptRow;
}

/**
 * The receiver's report on an attempt still waiting for it, applied only while it waits (and its
 * deadline is after `now`): `running` moves the deadline; `finish` records the attempt's result
 * and moves the job on as attemptFinish does.
 */
export type AttemptReport =
  | { kind: 'running'; deadline: number }
  | { kind: 'finish'; result: AttemptResult; next: AttemptNext };

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

export interface Store extends ScheduleStore, EventStore, OverviewStore {
  /** Which driver, for messages (the CLI's `migrate` answer); what differs is said by the members below. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * True when this process is the only instance on the database (SQLite: one `punctual serve` per
   * file), so a lease found at start was left by a process that is gone and can be taken over at
   * once. False where other instances may hold live leases (PostgreSQL): only expired ones are.
   */
  readonly soleInstance: boolean;
  /**
   * Where the key that seals webhook secrets is generated and kept when PUNCTUAL_SECRET_KEY is not
   * set (SQLite: beside the database file). Null where the key must be configured (PostgreSQL:
   * every instance needs the same one).
   */
  readonly secretKeyFile: string | null;

  migrate(): Promise<void>;
  /**
   * Hints from other instances that a job became due (PostgreSQL LISTEN/NOTIFY). A store serving
   * a single process (SQLite) has no other instances and does not implement it.
   */
  listenJobDue?(listener: (runAt: number) => void): Promise<void>;
  /** The database server's clock (epoch ms), where there is a server to drift from. */
  databaseNow?(): Promise<number>;
  /** Resolves when the storage answers; used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;

  settingGet(key: string): Promise<string | null>;
  /** Stores value unless the key exists; returns whichever value is stored. */
  settingInsertIfAbsent(key: string, value: string): Promise<string>;

  teamInsert(team: TeamRow): Promise<void>;
  teamGet(teamId: string): Promise<TeamRow | null>;
  teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null>;
  teamCount(): Promise<number>;
  /** Every team, oldest first (the operator's view). */
  teamList(): Promise<TeamRow[]>;
  /** The teams a user belongs to, oldest first. */
  teamListByUser(userId: string): Promise<TeamRow[]>;

  /** False (and nothing written) when the email is taken. */
  userInsert(user: UserWithPassword): Promise<boolean>;
  userGet(userId: string): Promise<UserRow | null>;
  /** With the password hash, for logging in; `email` is matched lower-cased. */
  userGetByEmail(email: string): Promise<UserWithPassword | null>;
  userGetPasswordHash(userId: string): Promise<string | null>;
  userList(): Promise<UserRow[]>;
  userCount(): Promise<number>;
  userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean>;
  /** Adds a membership; adding one that exists changes nothing. */
  teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void>;

  sessionInsert(session: SessionRow): Promise<void>;
  /** The session and its user, unless it expired by `now` or does not exist. */
  sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null>;
  sessionDelete(tokenHash: Buffer): Promise<void>;
  /** Ends every session of a user but `keepTokenHash` (a password change logs the other browsers out). */
  sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void>;
  sessionDeleteExpired(now: number): Promise<number>;

  projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void>;
  projectGet(projectId: string): Promise<ProjectRow | null>;
  projectListByTeam(teamId: string): Promise<ProjectRow[]>;
  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null>;

  apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void>;
  apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null>;
  apiKeyGet(keyId: string): Promise<ApiKeyRow | null>;
  apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]>;
  /** Revokes once: a second call keeps and returns the first revokedAt. */
  apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null>;
  apiKeyTouch(params: { keyId: string; now: number }): Promise<void>;

  /** Secrets still signing at `now`, newest first. */
  webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]>;
  /** Adds `secret` as newest; the previous newest expires at now + overlapMs; older ones are dropped. */
  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void>;

  jobCreate(params: JobCreateParams): Promise<JobCreateResult>;
  jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null>;
  jobList(params: JobListParams): Promise<JobRow[]>;
  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult>;
  /** runAt becomes the later of `scheduledFor ?? queuedAt` and queuedAt. */
  jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult>;
  /** FAILED → QUEUED, due at once, with a fresh retry budget. */
  jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult>;
  /**
   * Bulk replay: up to `limit` of the project's FAILED jobs in the window, oldest failure first,
   * each queued again as jobRetryIfFailed does; hasMore when matching FAILED jobs remain.
   */
  jobRetryFailedMany(params: FailedJobsFilter & { limit: number; now: number }): Promise<{ retried: number; hasMore: boolean }>;
  /** How many of the project's FAILED jobs are in the window (the dashboard's confirmation). */
  jobCountFailed(params: FailedJobsFilter): Promise<number>;

  attemptListByJob(jobId: string): Promise<AttemptRow[]>;

  projectGetMany(projectIds: string[]): Promise<ProjectRow[]>;

  /**
   * Pausing (SPEC section 10): holds the next `limit` of a paused project's QUEUED jobs after seq
   * `afterSeq`, so that claims no longer read them; the seq to go on from, or null when done.
   * Nothing changes once the project is resumed. Jobs entering QUEUED while it is paused are held
   * by the store itself.
   */
  jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }>;
  /**
   * A receiver answered 429/503 with Retry-After (SPEC section 11): the project's deliveries wait
   * until `until` on every instance (claims step over it, starts give its jobs back); a later hold wins.
   */
  projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void>;
  /** Resuming: releases up to `limit` of a project's held jobs, earliest due first, unless it is paused again; how many. */
  jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number>;
  /** Projects not paused that still hold jobs (a resume cut short by a crash). */
  projectListWithHeldJobs(): Promise<string[]>;
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
  /**
   * DISPATCHED → STARTED for the lease holder, recording the attempt before its request leaves.
   * Null when the lease was lost (the job is no longer this worker's to send). Idempotent for one
   * attemptId: a start whose commit may or may not have happened (a connection cut before the
   * answer) is simply asked again, and answers the same attempt without counting it twice.
   */
  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null>;
  /** Records the attempt's result and moves the job on, only if this worker still holds that attempt's lease. */
  attemptFinish(params: AttemptFinishParams): Promise<boolean>;
  /**
   * The receiver answered 202 to a project with asyncCompletion: the lease holder hands the job to
   * AWAITING_REPORT until `deadline`, the attempt stays pending (accepted at `now`). False when the
   * lease was lost.
   */
  attemptAccept(params: AttemptAcceptParams): Promise<boolean>;
  /** The job, its project and the attempt, when the attempt is one of the job's; null otherwise. */
  attemptGetWithJob(params: { jobId: string; attemptId: string }): Promise<AttemptWithJob | null>;
  /**
   * A receiver's report (SPEC section 11) on an attempt waiting for one whose deadline is after
   * `now`; false, changing nothing, when it no longer waits (reported, timed out, never accepted).
   */
  attemptReport(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean>;
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

  /** Jobs created per UTC day in [fromDay, toDay), days as YYYY-MM-DD. */
  usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]>;

  /** Every project's retention setting, for the retention service. */
  projectListRetention(): Promise<{ projectId: string; retentionDays: number | null }[]>;
  /**
   * Deletes up to `limit` of a project's final jobs (COMPLETED, FAILED, CANCELLED) that became
   * final at or before `finalBy`, oldest first, with their attempts. Rows another instance is
   * deleting at the same moment are skipped, not waited for.
   */
  jobPruneFinal(params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs>;
  /** Deletes up to `limit` idempotency keys created at or before `createdBy`. */
  idempotencyKeyPrune(params: { createdBy: number; limit: number }): Promise<number>;
  /** Deletes up to `limit` daily usage rows of days before `beforeDay` (YYYY-MM-DD). */
  usagePrune(params: { beforeDay: string; limit: number }): Promise<number>;
  /** What pruning at these cut-offs would delete now (`punctual prune --dry-run`), off the request path. */
  pruneCount(cutoffs: PruneCutoffs): Promise<PruneCounts>;
  /** Bytes the store occupies: the database, and its write-ahead log where it has one of its own (SQLite). */
  storeSize(): Promise<{ databaseBytes: number; walBytes: number | null }>;
}

export interface PrunedJobs {
  jobs: number;
  attempts: number;
}

export interface PruneCounts extends PrunedJobs {
  idempotencyKeys: number;
  /** Daily usage rows (PostgreSQL keeps a day in up to 16). */
  usageRows: number;
  events: number;
}
