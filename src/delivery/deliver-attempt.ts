import type { Clock } from '../clock.js';
import { formatNullableTimestamp } from '../timestamp.js';
import { newAttemptId } from '../crypto/random-ids.js';
import { UnavailableError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { AttemptNext, ClaimedJob, ProjectRow, StartedAttempt, Store } from '../store/store.js';
import { LEASE_MARGIN_MS, leaseMs } from './capacity-rules.js';
import { acceptedForLater, receiverDownBy, toAttemptResult } from './attempt-result.js';
import { backpressureMs, nextAfterAttempt, parseRetryAfter, stoppedError, stopsJob } from './retry-policy.js';
import type { SendResult, WebhookSender } from './webhook-client.js';
import type { WebhookHealth } from './webhook-health.js';
import type { CallbackTokens } from '../crypto/callback-tokens.js';
import { continueTrace, type TraceContext } from '../tracing/trace-context.js';
import type { AttemptSpan, AttemptSpanResult, Tracer } from '../tracing/tracer.js';


export interface DeliveryDeps {
  store: Store;
  clock: Clock;
  client: WebhookSender;
  metrics: Metrics;
  workerId: string;
  /** A failed attempt queued the job again for `runAt`: the claim loop must wake for it. */
  onRequeued: (runAt: number) => void;
  /**
   * Attempt outcomes of every project: its run of failures is its health (failing after 10 in a
   * row, shown on the dashboard), and webhook.failing and webhook.recovered for one with an
   * eventsUrl. A healthy project's successes cost nothing (WebhookHealth drops them).
   */
  health?: WebhookHealth;
  /** A job reached FAILED or COMPLETED: its job.failed or job.completed event may be waiting to be sent. */
  onJobEvent?: () => void;
  /** A receiver answered 429 or 503 with Retry-After: the project's other deliveries wait until `until` (SPEC section 11). */
  onBackpressure?: (projectId: string, until: number) => void;
  /** Signs the callbackToken of deliveries to projects with asyncCompletion (SPEC section 11). */
  callbackTokens: CallbackTokens;
  /** Span export, when on: each attempt is a span, and its id the delivery's traceparent. */
  tracer?: Tracer | null;
  random?: () => number;
}

const RECORD_RETRY_MS = 500;

async function retryWhileUnavailable<T>(fn: () => Promise<T>, mayRetry: () => boolean): Promise<T> {
  for (let wait = RECORD_RETRY_MS; ; wait = Math.min(wait * 2, 5_000)) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof UnavailableError) || !mayRetry()) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Never send early: waits (on real timers, reading `clock`) until the job's due time, or until shutdown. */
async function untilDue(clock: Clock, runAt: number, shutdown?: AbortSignal): Promise<void> {
  for (let left = runAt - clock.now(); left > 0 && !shutdown?.aborted; left = runAt - clock.now()) {
    await new Promise((resolve) => setTimeout(resolve, left));
  }
}

/**
 * The body of SPEC section 4. The payload is spliced in as stored, so it goes out byte for byte as
 * accepted. A schedule's job also carries its schedule and fire instant (null for a trigger), and
 * a delivery to a project with asyncCompletion its attempt's callbackToken (SPEC section 11). A job
 * with tags carries them as stored (SPEC section 14); one without has no `tags` at all. So with
 * a concurrencyKey (SPEC section 15).
 */
export function webhookBody(
  jobId: string,
  attemptId: string,
  attemptNumber: number,
  payload: string,
  extra: { schedule?: { id: string; scheduledFor: number | null } | null; callbackToken?: string | null; tags?: string | null; concurrencyKey?: string | null; probe?: boolean } = {},
): string {
  const { schedule, callbackToken, tags, concurrencyKey, probe } = extra;
  const fromSchedule = schedule
    ? `"scheduleId":${JSON.stringify(schedule.id)},"scheduledFor":${JSON.stringify(formatNullableTimestamp(schedule.scheduledFor))},`
    : '';
  const token = callbackToken ? `"callbackToken":${JSON.stringify(callbackToken)},` : '';
  const tagged = tags ? `"tags":${tags},` : '';
  const keyed = concurrencyKey ? `"concurrencyKey":${JSON.stringify(concurrencyKey)},` : '';
  // A probe of a held project's receiver says so (SPEC section 13), so the receiver may tell it from a job.
  const probed = probe ? '"probe":true,' : '';
  return `{"jobId":${JSON.stringify(jobId)},"attemptId":${JSON.stringify(attemptId)},"attempt":${attemptNumber},"attemptNumber":${attemptNumber},${fromSchedule}${token}${tagged}${keyed}${probed}"payload":${payload}}`;
}

/**
 * One attempt, in the steps Svix names: prepare (record STARTED, durably, before anything leaves),
 * make the HTTP call, then record the outcome and what the job does next. Every store write is
 * guarded by this worker's lease, so a worker that lost its lease changes nothing.
 */
export async function deliverAttempt(
  deps: DeliveryDeps,
  job: ClaimedJob,
  project: ProjectRow,
  secrets: string[],
  shutdown?: AbortSignal,
  /**
   * Called once the request is answered (or never sent), before the outcome is recorded, with
   * whether the answer counts toward the receiver's health as a failure (`receiverDownBy`); returns
   * whether the project is held back until that failure's health write answers, which the returned
   * promise then waits for.
   */
  onAnswered: (receiverDown: boolean) => boolean = () => false,
  /** The attempt when its STARTED is recorded already (a job created started when it was enqueued). */
  started?: StartedAttempt,
): Promise<void> {
  const attempt = started ?? (await prepareAttempt(deps, job, project, shutdown));
  if (!attempt) return;
  const span = deps.tracer ? startAttemptSpan(deps.tracer, deps.clock, job, project, attempt) : null;
  // Each attempt has a span id of its own in the job's trace (SPEC section 4): its span's with
  // export on, else a fresh one; a job without a trace sends none.
  const trace = span ? span.context : job.traceparent === null ? null : { traceparent: continueTrace(job.traceparent), tracestate: job.tracestate };
  const sent = await callWebhook(deps, job, project, secrets, attempt, trace, shutdown);
  const receiverDown = receiverDownBy(project, sent);
  const heldBack = onAnswered(receiverDown);
  span?.end(attemptSpanResult(sent, project));
  const { healthWritten } = await recordOutcome(deps, job, project, attempt, sent, receiverDown);
  if (heldBack) await healthWritten;
}

/** The attempt's span, from the moment its request leaves (the due time, when that is ahead). */
function startAttemptSpan(tracer: Tracer, clock: Clock, job: ClaimedJob, project: ProjectRow, attempt: StartedAttempt): AttemptSpan {
  const startTime = Date.now() + Math.max(0, job.runAt - clock.now());
  return tracer.startAttempt(job, { attemptId: attempt.attemptId, attemptNumber: attempt.attemptNumber, url: project.webhookUrl, startTime });
}

function attemptSpanResult(sent: SendResult, project: ProjectRow): AttemptSpanResult {
  if (sent.kind === 'aborted') return { outcome: 'aborted', statusCode: null, error: sent.error };
  if (acceptedForLater(project, sent)) return { outcome: 'accepted', statusCode: 202, error: null };
  const { outcome, statusCode, error } = toAttemptResult(sent, project.acceptAny2xx);
  return { outcome, statusCode, error };
}


/** Records the attempt as STARTED under this worker's lease; null when the lease is no longer ours. */
async function prepareAttempt(deps: DeliveryDeps, job: ClaimedJob, project: ProjectRow, shutdown?: AbortSignal): Promise<StartedAttempt | null> {
  const { store, clock, workerId } = deps;
  const attemptId = newAttemptId(clock.now());
  // A held job is started a little ahead of its time (START_AHEAD_MS, ahead-timer.ts); its attempt
  // starts at the due time, when its request leaves.
  let startedAt = 0;
  // Nothing has been sent yet, so a start refused while the database is away is simply tried
  // again, within the claim's lease: the job goes out once the database is back, instead of
  // waiting for its lease to expire and be rescued.
  const started = await retryWhileUnavailable(
    () => {
      startedAt = Math.max(clock.now(), job.runAt);
      return store.attemptStart({
        jobId: job.id,
        attemptId,
        workerId,
        now: startedAt,
        leaseExpiresAt: startedAt + leaseMs(project),
      });
    },
    () => clock.now() < job.leaseExpiresAt - LEASE_MARGIN_MS / 2 && !shutdown?.aborted,
  );
  return started && { attemptId, attemptNumber: started.attemptNumber, startedAt };
}

/** The signed POST of SPEC section 4, leaving at the job's due time and never before. */
async function callWebhook(
  deps: DeliveryDeps,
  job: ClaimedJob,
  project: ProjectRow,
  secrets: string[],
  attempt: StartedAttempt,
  trace: TraceContext | null,
  shutdown?: AbortSignal,
): Promise<SendResult> {
  const { clock, metrics } = deps;
  if (!project.webhookUrl || secrets.length === 0) {
    await untilDue(clock, job.runAt, shutdown);
    metrics.deliveryLateness.observe(Math.max(0, clock.now() - job.runAt) / 1000);
    const error = project.webhookUrl ? 'the project has no active webhook secret' : 'the project has no webhook URL';
    return { kind: 'network_error', error, durationMs: 0 };
  }
  // Handed to the sender at once, to leave at the due time by its own timer (WebhookRequest.sendAt):
  // on the webhook thread that moment does not wait for whatever the event loop is doing then.
  // The due time on the wall clock: with the system clock the offset is never negative (read
  // second), so the request never leaves early; a clock running at real time from an offset maps
  // onto it too. A manual clock does not: its due time comes when it is set there, so wait for that.
  if (clock.manual) await untilDue(clock, job.runAt, shutdown);
  const appNow = clock.now();
  const sendAt = Math.max(job.runAt, appNow) + (Date.now() - appNow);
  const delivered = await deps.client.deliver(
    {
      url: project.webhookUrl,
      webhookId: job.id,
      secrets,
      bearer: true,
      timestampMs: Math.max(clock.now(), job.runAt),
      body: webhookBody(job.id, attempt.attemptId, attempt.attemptNumber, job.payload, {
        schedule: job.scheduleId === null ? null : { id: job.scheduleId, scheduledFor: job.scheduledFor },
        callbackToken: project.asyncCompletion ? deps.callbackTokens.issue(job.id, attempt.attemptId) : null,
        tags: job.tags,
        concurrencyKey: job.concurrencyKey,
      }),
      timeoutMs: project.deliveryTimeoutMs,
      sendAt,
      trace,
    },
    shutdown,
  );
  if (delivered.kind !== 'aborted') metrics.deliveryLateness.observe(Math.max(0, delivered.lateMs) / 1000);
  return delivered;
}

/**
 * A 202 to a project with asyncCompletion (SPEC section 11): the attempt stays pending and the job
 * STARTED, its lease handed from this worker to the report's deadline, kept in the store (any
 * instance's lease rescue ends it as `timeout` if no report comes).
 */
async function recordAccepted(deps: DeliveryDeps, job: ClaimedJob, project: ProjectRow, attempt: StartedAttempt, sent: Extract<SendResult, { kind: 'answered' }>): Promise<void> {
  const { store, clock, metrics, workerId } = deps;
  const now = clock.now();
  const recordBy = attempt.startedAt + leaseMs(project);
  const applied = await retryWhileUnavailable(
    () =>
      store.attemptAccept({
        jobId: job.id,
        attemptId: attempt.attemptId,
        workerId,
        now,
        deadline: now + project.asyncCompletionTimeoutMs,
        statusCode: sent.statusCode,
        responseBody: sent.responseBody,
      }),
    () => clock.now() < recordBy,
  );
  metrics.deliveryDuration.observe(sent.durationMs / 1000);
  if (!applied) metrics.lateResultsIgnored.inc();
  // The receiver answered, and took the job: its endpoint works, whatever the report says later.
  if (applied) deps.health?.success(project.id);
}

/**
 * Stores the attempt's result and the job's next state (done, retry at a time, failed, or released),
 * and hands a failure that counts to the receiver's health: `healthWritten` settles once that is written.
 */
async function recordOutcome(
  deps: DeliveryDeps,
  job: ClaimedJob,
  project: ProjectRow,
  attempt: StartedAttempt,
  sent: SendResult,
  receiverDown: boolean,
): Promise<{ healthWritten?: Promise<void> }> {
  if (acceptedForLater(project, sent)) {
    await recordAccepted(deps, job, project, attempt, sent);
    return {};
  }
  const { store, clock, metrics, workerId } = deps;
  const answered = toAttemptResult(sent, project.acceptAny2xx);
  // A status in retryPolicy.stopOn ends the job at once, and its error says why (SPEC section 13).
  const stopped = stopsJob(project, answered);
  const result = stopped ? { ...answered, error: stoppedError(answered.statusCode!) } : answered;
  const finishedAt = clock.now();
  const retryAfterMs = sent.kind === 'answered' ? parseRetryAfter(sent.retryAfter, finishedAt) : null;
  const held = backpressureMs(project, result.statusCode, retryAfterMs);
  if (held !== null) deps.onBackpressure?.(project.id, finishedAt + held);
  const next: AttemptNext = sent.kind === 'aborted' ? { kind: 'release' } : nextAfterAttempt(
    project,
    {
      outcome: result.outcome,
      statusCode: result.statusCode,
      retryAfterMs,
      attemptNumber: attempt.attemptNumber,
      maxRetries: job.maxRetries,
    },
    finishedAt,
    deps.random,
  );
  // The answer is in hand: keep trying to record it while the database is briefly away, rather than
  // let the lease expire and deliver the job again. Past the lease the rescuer takes over.
  const recordBy = attempt.startedAt + leaseMs(project);
  const applied = await retryWhileUnavailable(
    () => store.attemptFinish({ jobId: job.id, attemptId: attempt.attemptId, workerId, now: finishedAt, result, next }),
    () => clock.now() < recordBy,
  );
  metrics.deliveryDuration.observe(result.durationMs / 1000);
  // An attempt whose lease was lost is counted once, by the rescuer, as lease_expired.
  if (applied) metrics.attempts.inc({ outcome: result.outcome });
  else metrics.lateResultsIgnored.inc();
  if (applied && next.kind === 'retry') deps.onRequeued(next.runAt);
  if (applied && next.kind === 'complete') {
    metrics.jobsCompleted.inc();
    if (project.eventsUrl && project.eventTypes?.includes('job.completed')) deps.onJobEvent?.();
  }
  if (applied && next.kind === 'fail') {
    metrics.jobsFailed.inc();
    if (project.eventsUrl) deps.onJobEvent?.();
  }
  // Outcomes of the receiver, not of this instance.
  if (applied && result.outcome === 'success') deps.health?.success(project.id);
  else if (applied && receiverDown) return { healthWritten: deps.health?.failure(project.id, result.error ?? result.outcome) };
  return {};
}
