/**
 * The storage contract of delivery attempts, part of Store (store.ts): an attempt starts for the
 * lease holder, finishes (or is accepted with 202 and waits for its receiver's report), and moves
 * its job on in the same transaction.
 */
import type { JobRow } from './job-store.js';
import type { ProjectRow } from './tenancy-store.js';
import { methodList } from './forward-methods.js';

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

export interface AttemptStore {
  attemptListByJob(jobId: string): Promise<AttemptRow[]>;
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
}

/** AttemptStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const ATTEMPT_STORE_METHODS = methodList<AttemptStore>()(['attemptListByJob', 'attemptStart', 'attemptFinish', 'attemptAccept', 'attemptGetWithJob', 'attemptReport'] as const);
