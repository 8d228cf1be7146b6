import type { Clock } from '../clock.js';
import { newJobId } from '../crypto/random-ids.js';
import { IdempotencyKeyReusedError, InvalidRequestError, PunctualError, QuotaExceededError, WebhookNotConfiguredError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { effectiveMaxRetries } from '../plans.js';
import type { AnswerTemplate, StartedJob, JobCreateParams, JobCreateResult, NewJob, Store } from '../store/store.js';
import { startableAtCreation, startedJobs } from '../store/job-rules.js';
import { formatNullableTimestamp, formatTimestamp, utcDay, utcMonth } from '../timestamp.js';
import { requestHash } from './input/request-hash.js';
import type { ImmediateDelivery } from './immediate-delivery.js';
import { isPlainObject, validateEnqueueInput, type EnqueueInput } from './input/validate-job-input.js';
import { IDEMPOTENCY_KEY_TTL_MS } from '../retention.js';
import type { TraceContext } from '../tracing/trace-context.js';
import type { Tracer } from '../tracing/tracer.js';
import type { JobRequestContext, RenderedAnswer } from './jobs-service.js';

const BATCH_MAX_JOBS = 100;

interface JobCreationDeps {
  store: Store;
  clock: Clock;
  metrics: Metrics;
  /** Span export, when on: jobs created already claimed get their claim span here. */
  tracer: Tracer | null;
  /** Tells the claim loop a job is due at this instant (a job created QUEUED). */
  onJobDue: (runAt: number) => void;
  /** This instance's attempt runner, when it delivers: jobs due at once go to it without a claim. */
  immediateDelivery: () => ImmediateDelivery | null;
}

/**
 * Jobs coming into being: an enqueue, a batch, a schedule's fires (SPEC sections 2, 6 and 9). Each
 * is validated, counted against the team's quota and stored in one write; those due at once are
 * created already started when this instance has room for them (ImmediateDelivery), the rest wait
 * for the claim loop, which is told when they are due.
 */
export class JobCreation {
  constructor(private readonly deps: JobCreationDeps) {}


  private created(jobs: NewJob[], created: boolean[], started: StartedJob[]): void {
    const handed = new Set(started.map(({ job }) => job.id));
    let earliest = Number.POSITIVE_INFINITY;
    let count = 0;
    jobs.forEach((job, i) => {
      if (!created[i]) return;
      count += 1;
      if (!handed.has(job.id)) earliest = Math.min(earliest, job.runAt);
    });
    if (count === 0) return;
    this.deps.metrics.jobsCreated.inc(count);
    if (Number.isFinite(earliest)) this.deps.onJobDue(earliest);
  }

  private newJob(input: EnqueueInput, ctx: JobRequestContext, now: number, trace: TraceContext | null): NewJob {
    const job: NewJob = {
      id: newJobId(now),
      payload: input.payload,
      scheduledFor: input.scheduledFor,
      // A time in the past means "at once"; the asked time is still kept as scheduledFor.
      runAt: Math.max(input.scheduledFor ?? now, now),
      maxRetries: effectiveMaxRetries(input.maxRetries, ctx.project.retryMaxRetries, ctx.plan),
      traceparent: trace?.traceparent ?? null,
      tracestate: trace?.tracestate ?? null,
    };
    if (input.tags !== undefined) job.tags = input.tags;
    if (input.concurrencyKey !== undefined) job.concurrencyKey = input.concurrencyKey;
    if (input.debounce !== undefined) {
      // Due debounceMs from now (SPEC section 15); a dispatch the key's open job absorbs moves that job here.
      job.runAt = now + input.debounce.debounceMs;
      const { key, maxWaitMs } = input.debounce;
      job.debounce = { key, deadline: maxWaitMs === null ? null : now + maxWaitMs, maxRetriesGiven: input.maxRetries !== null };
    }
    return job;
  }

  private quotaFor(ctx: JobRequestContext, now: number): JobCreateParams['quota'] {
    if (ctx.plan.jobsPerMonth === null) return null;
    const month = utcMonth(now);
    return { limit: ctx.plan.jobsPerMonth, monthStartDay: utcDay(month.start), monthEndDay: utcDay(month.end) };
  }

  /** The quota's refusal (SPEC section 6), as an enqueue or a schedule's trigger gets it. */
  quotaError(ctx: JobRequestContext, used: number, now: number): QuotaExceededError {
    const resetsAt = utcMonth(now).end;
    return new QuotaExceededError(
      `This team's plan allows ${ctx.plan.jobsPerMonth} jobs per month; the quota resets at ${formatTimestamp(resetsAt)}`,
      { quota: ctx.plan.jobsPerMonth, used, resetsAt: formatTimestamp(resetsAt) },
      { 'retry-after': String(Math.max(1, Math.ceil((resetsAt - now) / 1000))) },
    );
  }

  private async create(
    ctx: JobRequestContext,
    endpoint: string,
    body: unknown,
    idempotencyKey: string | null,
    jobs: NewJob[],
    now: number,
    answer: AnswerTemplate,
  ) {
    const immediate = this.deps.immediateDelivery();
    const dueNow = jobs.filter((job) => job.runAt <= now).length;
    const startDueNow = immediate && dueNow > 0 ? immediate.reserve(ctx.project, startableAtCreation(jobs, now).length, dueNow) : null;
    // Jobs created started are claimed by this very statement: their claim span covers it.
    const claimSpans = startDueNow && this.deps.tracer ? this.deps.tracer.startClaim() : null;
    let result: JobCreateResult;
    // A reservation is always settled: with the jobs created started, or with none if creation failed.
    let started: StartedJob[] = [];
    try {
      const params = {
        projectId: ctx.project.id,
        teamId: ctx.team.id,
        now,
        jobs,
        quota: this.quotaFor(ctx, now),
        idempotency: idempotencyKey
          ? { endpoint, key: idempotencyKey, requestHash: requestHash(body), validAfter: now - IDEMPOTENCY_KEY_TTL_MS }
          : null,
        answer,
        ...(startDueNow && { startDueNow }),
      };
      result = await this.deps.store.jobCreate(params);
      if (result.kind === 'created' && startDueNow) started = startedJobs({ ...params, startDueNow }, result.started);
    } finally {
      if (startDueNow) immediate!.submit(startDueNow, started);
    }
    if (result.kind === 'idempotency_conflict') {
      throw new IdempotencyKeyReusedError('This Idempotency-Key was used with a different request body in the last 24 hours', {
        field: 'Idempotency-Key',
      });
    }
    if (result.kind === 'debounced') this.deps.onJobDue(result.runAt);
    if (result.kind === 'created') {
      if (claimSpans && started.length > 0) claimSpans.end(started.map(({ job }) => job), { workerId: startDueNow!.workerId, atEnqueue: true });
      this.created(jobs, result.created, started);
    }
    return result;
  }

  /**
   * `trace`: the W3C trace the job's deliveries continue (SPEC section 4), or null. It is not part
   * of the request's identity: an Idempotency-Key replay answers as before, whatever it carries.
   */
  async enqueue(ctx: JobRequestContext, body: unknown, idempotencyKey: string | null, trace: TraceContext | null): Promise<RenderedAnswer> {
    const input = validateEnqueueInput(body, ctx.receivedAt);
    if (!ctx.project.webhookUrl) throw webhookNotConfigured();
    const now = this.deps.clock.now();
    const job = this.newJob(input, ctx, now, trace);
    const answer = JSON.stringify({
      jobId: job.id,
      status: 'QUEUED',
      scheduledFor: formatNullableTimestamp(job.scheduledFor),
      maxRetries: job.maxRetries,
    });
    const result = await this.create(ctx, 'dispatch', body, idempotencyKey, [job], now, { kind: 'single', statusCode: 201, body: answer });
    if (result.kind === 'replayed') return { statusCode: 200, body: result.response.body, replayed: true };
    // Absorbed by its debounceKey's open job: no job created, none counted (SPEC section 15).
    if (result.kind === 'debounced') return { statusCode: 200, body: result.response.body, replayed: false };
    if (!result.created[0]) {
      this.deps.metrics.quotaRejections.inc();
      throw this.quotaError(ctx, result.usedBefore, now);
    }
    return { statusCode: 201, body: answer, replayed: false };
  }

  /** Every job of the batch continues the one `trace`, as `enqueue`. */
  async enqueueBatch(ctx: JobRequestContext, body: unknown, idempotencyKey: string | null, trace: TraceContext | null): Promise<RenderedAnswer> {
    if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object: {"jobs": [...]}');
    const items = body.jobs;
    if (!Array.isArray(items) || items.length < 1 || items.length > BATCH_MAX_JOBS) {
      throw new InvalidRequestError(`jobs must be an array of 1 to ${BATCH_MAX_JOBS} dispatch bodies`, { field: 'jobs' });
    }
    if (!ctx.project.webhookUrl) throw webhookNotConfigured();
    const now = this.deps.clock.now();
    const checked = items.map((item): { job: NewJob } | { error: PunctualError } => {
      try {
        return { job: this.newJob(validateEnqueueInput(item, ctx.receivedAt, false), ctx, now, trace) };
      } catch (error) {
        if (error instanceof PunctualError) return { error };
        throw error;
      }
    });
    const jobs = checked.flatMap((c) => ('job' in c ? [c.job] : []));
    // The refusal's body with a mark where the team's count goes (a count is never negative).
    const refusal = JSON.stringify(this.quotaError(ctx, -1, now).toBody()).split('"used":-1');
    const answer: AnswerTemplate = {
      kind: 'batch',
      statusCode: 200,
      items: checked.map((c) => {
        if ('error' in c) return { error: JSON.stringify(c.error.toBody()) };
        const job = c.job;
        return { job: JSON.stringify({ jobId: job.id, status: 'QUEUED', scheduledFor: formatNullableTimestamp(job.scheduledFor), maxRetries: job.maxRetries }) };
      }),
      quotaRefusal: [`${refusal[0]}"used":`, refusal[1] ?? ''],
    };
    const result = await this.create(ctx, 'dispatch/batch', body, idempotencyKey, jobs, now, answer);
    if (result.kind === 'replayed' || result.kind === 'debounced') return { statusCode: 200, body: result.response.body, replayed: result.kind === 'replayed' };
    const refused = result.created.filter((created) => !created).length;
    if (refused > 0) this.deps.metrics.quotaRejections.inc(refused);
    return { statusCode: 200, body: result.response!.body, replayed: false };
  }

  /**
   * A schedule's jobs (SPEC section 9): fires of its cron (`fireAt` set; a fire's job exists once
   * however often it is tried) or a trigger (`fireAt` null), created as an enqueue of the
   * schedule's payload would be and counted in the quota. Which were created (false: refused by
   * the quota), in order.
   */
  async createForSchedule(
    ctx: JobRequestContext,
    schedule: { id: string; payload: string; maxRetries: number | null; tags: string | null; concurrencyKey: string | null },
    fires: { fireAt: number | null; runAt: number }[],
    now: number,
  ): Promise<{ jobs: NewJob[]; created: boolean[]; usedBefore: number }> {
    const maxRetries = effectiveMaxRetries(schedule.maxRetries, ctx.project.retryMaxRetries, ctx.plan);
    const jobs = fires.map((fire): NewJob => ({
      id: newJobId(now),
      payload: schedule.payload,
      scheduledFor: fire.fireAt,
      runAt: Math.max(fire.runAt, now),
      maxRetries,
      schedule: { id: schedule.id, fireAt: fire.fireAt },
      // A schedule's jobs carry its tags (SPEC section 14).
      ...(schedule.tags !== null && { tags: schedule.tags }),
      // And its concurrencyKey (SPEC section 15).
      ...(schedule.concurrencyKey !== null && { concurrencyKey: schedule.concurrencyKey }),
    }));
    const result = await this.create(ctx, 'schedule', null, null, jobs, now, { kind: 'single', statusCode: 201, body: '' });
    if (result.kind !== 'created') throw new Error('a schedule fire has no Idempotency-Key to replay');
    const refused = result.created.filter((created) => !created).length;
    if (refused > 0) this.deps.metrics.quotaRejections.inc(refused);
    return { jobs, created: result.created, usedBefore: result.usedBefore };
  }
}

const webhookNotConfigured = () =>
  new WebhookNotConfiguredError("This project has no webhook URL; set one with PATCH /manage/v1/projects/:projectId {\"webhookUrl\": ...}");
