/**
 * Async completion's reports (SPEC section 11): `POST /api/jobs/:jobId/attempts/:attemptId/result`.
 * A receiver that answered 202 to a project with asyncCompletion reports success, failure or
 * "still running" on that attempt, with the attempt's callbackToken or an API key of the project.
 */
import type { Clock } from '../clock.js';
import type { CallbackTokens } from '../crypto/callback-tokens.js';
import { nextAfterAttempt } from '../delivery/retry-policy.js';
import { AttemptNotPendingError, InvalidRequestError, NotFoundError, UnauthorizedError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { AttemptOutcome, AttemptReport, AttemptWithJob, Store } from '../store/store.js';
import { jobStatusView } from './views/job-views.js';
import { isPlainObject } from './input/validate-job-input.js';

export const REPORT_OUTCOMES = ['success', 'failure', 'running'] as const;
type ReportOutcome = (typeof REPORT_OUTCOMES)[number];
export const REPORT_ERROR_MAX = 1_000;
const FAILURE_WITHOUT_MESSAGE = 'the receiver reported a failure';

/** A callback token checked against one job and attempt (checkToken): it reports on that attempt only. */
export type CallbackGrant = { kind: 'callbackToken'; jobId: string; attemptId: string };

/** How a report was authenticated: its attempt's callback token, or an API key of a project. */
export type ReportAuth = CallbackGrant | { kind: 'apiKey'; projectId: string };

interface ReportInput {
  outcome: ReportOutcome;
  /** Only with failure; the attempt's error. */
  error: string | null;
}

/**
 * A receiver may report as soon as it has answered 202, before this side has recorded that
 * answer (the report can overtake it). A report on an attempt still in flight waits this long
 * for its 202 to be recorded, polling the store (the answer may land on another instance).
 */
const ACCEPT_WAIT_MS = 5_000;
const ACCEPT_POLL_FIRST_MS = 2;
const ACCEPT_POLL_MAX_MS = 100;

function readReport(body: unknown): ReportInput {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object: {"outcome": "success" | "failure" | "running", "error"?: string}');
  const { outcome, error } = body;
  if (typeof outcome !== 'string' || !(REPORT_OUTCOMES as readonly string[]).includes(outcome)) {
    throw new InvalidRequestError(`outcome must be one of ${REPORT_OUTCOMES.join(', ')}`, { field: 'outcome' });
  }
  if (error === undefined || error === null) return { outcome: outcome as ReportOutcome, error: null };
  if (outcome !== 'failure') throw new InvalidRequestError('error is only read with outcome "failure"', { field: 'error' });
  if (typeof error !== 'string' || error.length > REPORT_ERROR_MAX) {
    throw new InvalidRequestError(`error must be a string of at most ${REPORT_ERROR_MAX} characters`, { field: 'error' });
  }
  return { outcome: 'failure', error };
}

/** The attempt waits for a report at `now`: accepted with 202, not ended, its deadline still ahead. */
const waiting = (found: AttemptWithJob, now: number): boolean => found.attempt.reportBy !== null && found.attempt.reportBy > now;

/** Sent, not yet answered (or its answer not yet recorded): a report may have overtaken the 202. */
const inFlight = (found: AttemptWithJob): boolean =>
  found.attempt.outcome === null && found.attempt.acceptedAt === null && found.job.status === 'STARTED' && found.project.asyncCompletion;

/** The stored outcome a final report gives its attempt. */
const storedOutcome = (input: ReportInput): AttemptOutcome => (input.outcome === 'success' ? 'success' : 'http_error');

export class AttemptReports {
  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      metrics: Metrics;
      tokens: CallbackTokens;
      /** A failure report queued the job again for `runAt`. */
      onJobDue: (runAt: number) => void;
      random?: () => number;
    },
  ) {}

  /** Authentication of a report by callback token, before its body is read: the token must be this attempt's. */
  checkToken(token: string, jobId: string, attemptId: string): CallbackGrant {
    if (!this.deps.tokens.verify(token, jobId, attemptId)) throw new UnauthorizedError('That callback token is not valid for this job and attempt');
    return { kind: 'callbackToken', jobId, attemptId };
  }

  /** Applies a report, authenticated as `auth` says; the job's status body, or the contract's error. */
  async report(auth: ReportAuth, jobId: string, attemptId: string, body: unknown): Promise<Record<string, unknown>> {
    const input = readReport(body);
    let found = await this.find(auth, jobId, attemptId);
    if (inFlight(found)) found = await this.untilAnswered(auth, found);
    const now = this.deps.clock.now();
    if (waiting(found, now)) {
      const report = this.storeReport(found, input, now);
      if (await this.deps.store.attemptReport({ jobId, attemptId, now, report })) {
        this.reported(report);
        return this.jobStatus(found);
      }
      // Another report, or the deadline, ended it in between: answer as for a report that came after.
      found = await this.find(auth, jobId, attemptId);
    }
    return this.afterTheFact(found, input, now);
  }

  private async find(auth: ReportAuth, jobId: string, attemptId: string): Promise<AttemptWithJob> {
    if (auth.kind === 'callbackToken' && (auth.jobId !== jobId || auth.attemptId !== attemptId)) {
      throw new UnauthorizedError('That callback token is not valid for this job and attempt');
    }
    const found = await this.deps.store.attemptGetWithJob({ jobId, attemptId });
    // Another project's job is answered as an unknown one, as everywhere in the job API.
    if (!found || (auth.kind === 'apiKey' && found.job.projectId !== auth.projectId)) {
      throw new NotFoundError(`No attempt ${attemptId} of a job ${jobId} in this project`);
    }
    return found;
  }

  private async untilAnswered(auth: ReportAuth, found: AttemptWithJob): Promise<AttemptWithJob> {
    const giveUpAt = Date.now() + ACCEPT_WAIT_MS;
    for (let wait = ACCEPT_POLL_FIRST_MS; inFlight(found) && Date.now() < giveUpAt; wait = Math.min(wait * 2, ACCEPT_POLL_MAX_MS)) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      found = await this.find(auth, found.job.id, found.attempt.id);
    }
    return found;
  }

  private storeReport(found: AttemptWithJob, input: ReportInput, now: number): AttemptReport {
    const { project, attempt, job } = found;
    if (input.outcome === 'running') return { kind: 'running', deadline: now + project.asyncCompletionTimeoutMs };
    const outcome = storedOutcome(input);
    const error = input.outcome === 'failure' ? (input.error ?? FAILURE_WITHOUT_MESSAGE) : null;
    const next = nextAfterAttempt(
      project,
      { outcome, statusCode: null, retryAfterMs: null, attemptNumber: attempt.attemptNumber, maxRetries: job.maxRetries },
      now,
      this.deps.random,
    );
    // statusCode and responseBody null: the attempt keeps its 202's.
    return { kind: 'finish', result: { outcome, statusCode: null, durationMs: now - attempt.startedAt, error, responseBody: null }, next };
  }

  private reported(report: AttemptReport): void {
    if (report.kind === 'running') return;
    const { metrics } = this.deps;
    metrics.attempts.inc({ outcome: report.result.outcome });
    if (report.next.kind === 'complete') metrics.jobsCompleted.inc();
    if (report.next.kind === 'fail') metrics.jobsFailed.inc();
    if (report.next.kind === 'retry') this.deps.onJobDue(report.next.runAt);
  }

  /**
   * A report on an attempt that no longer waits: the same final report again changes nothing and
   * answers 200; anything else is ATTEMPT_NOT_PENDING with how the attempt ended.
   */
  private async afterTheFact(found: AttemptWithJob, input: ReportInput, now: number): Promise<Record<string, unknown>> {
    const { attempt } = found;
    const again =
      input.outcome !== 'running' &&
      attempt.reportedAt !== null &&
      attempt.outcome === storedOutcome(input) &&
      (input.outcome === 'success' || attempt.error === (input.error ?? FAILURE_WITHOUT_MESSAGE));
    if (again) return this.jobStatus(found);
    // Past its deadline, not yet ended by the lease rescue (which will end it so).
    const outcome = attempt.outcome ?? (attempt.reportBy !== null && attempt.reportBy <= now ? 'timeout' : null);
    const why =
      outcome === 'timeout'
        ? 'its deadline passed without a report'
        : attempt.acceptedAt === null
          ? 'it was never accepted with 202'
          : 'it was already reported';
    throw new AttemptNotPendingError(`Attempt ${attempt.id} is not waiting for a report: ${why}`, { outcome });
  }

  private async jobStatus(found: AttemptWithJob): Promise<Record<string, unknown>> {
    const job = await this.deps.store.jobGet({ projectId: found.job.projectId, jobId: found.job.id });
    return jobStatusView(job ?? found.job);
  }
}
