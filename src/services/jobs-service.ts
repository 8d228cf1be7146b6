import type { Clock } from '../clock.js';
import { InvalidRequestError, InvalidScheduleError, JobNotFailedError, JobNotQueuedError, NotFoundError, PunctualError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { Plan } from '../plans.js';
import { JOB_STATUSES, listedByCreation, type JobListParams, type JobStatus, type JobTagPair, type JobTransitionResult, type ProjectRow, type Store, type TeamRow } from '../store/store.js';
import { formatNullableTimestamp } from '../timestamp.js';
import { attemptView, jobStatusView } from './views/job-views.js';
import { isPlainObject, readSchedule, RESCHEDULE_FIELDS } from './input/validate-job-input.js';
import { refuseNearMisses } from './input/known-fields.js';
import { encodeJobCursor, pageOf, readJobCursor, readListLimit, readTimestampParam, singleValues } from './input/list-query.js';
import { readTagParams } from './input/tags-input.js';
import { traceIdOf } from '../tracing/trace-context.js';

/** Who is asking, resolved from the API key, and when the request arrived. */
export interface JobRequestContext {
  project: ProjectRow;
  team: TeamRow;
  plan: Plan;
  receivedAt: number;
}

/** A JSON answer already serialised, so an idempotent replay is byte-identical to the first answer. */
export interface RenderedAnswer {
  statusCode: number;
  body: string;
  replayed: boolean;
}

interface JobsServiceDeps {
  store: Store;
  clock: Clock;
  metrics: Metrics;
  /** Tells the claim loop a job is due at this instant (after a reschedule or a retry). */
  onJobDue: (runAt: number) => void;
}

/** A project's jobs once they exist: read, listed, cancelled, rescheduled, retried (creation: job-creation.ts). */
export class JobsService {
  constructor(private readonly deps: JobsServiceDeps) {}

  async get(ctx: JobRequestContext, jobId: string): Promise<Record<string, unknown>> {
    return (await this.getWithTrace(ctx, jobId)).job;
  }

  /** The status body, and beside it the W3C trace id its deliveries continue (not part of the body), or null. */
  async getWithTrace(ctx: JobRequestContext, jobId: string): Promise<{ job: Record<string, unknown>; traceId: string | null }> {
    const job = await this.deps.store.jobGet({ projectId: ctx.project.id, jobId });
    if (!job) throw jobNotFound(jobId);
    return { job: jobStatusView(job), traceId: job.traceparent === null ? null : traceIdOf(job.traceparent) };
  }

  async list(ctx: JobRequestContext, query: Record<string, unknown>): Promise<{ jobs: Record<string, unknown>[]; nextCursor: string | null }> {
    const params = singleValues(query, ['status', 'scheduleId', 'concurrencyKey', 'createdAfter', 'createdBefore', 'dueAfter', 'dueBefore', 'limit', 'cursor']);
    return this.listPage(ctx, {
      status: readStatusParam(params.status),
      tags: readTagParams(query.tag),
      scheduleId: params.scheduleId ?? null,
      concurrencyKey: params.concurrencyKey ?? null,
      createdFrom: readTimestampParam(params.createdAfter, 'createdAfter'),
      createdBefore: readTimestampParam(params.createdBefore, 'createdBefore'),
      dueFrom: readTimestampParam(params.dueAfter, 'dueAfter'),
      dueBefore: readTimestampParam(params.dueBefore, 'dueBefore'),
      limit: readListLimit(params.limit),
      cursor: params.cursor ?? null,
    });
  }

  /** One page of the project's jobs, newest first (`GET /api/jobs` and the dashboard's list). */
  async listPage(ctx: JobRequestContext, filter: JobListFilter): Promise<{ jobs: Record<string, unknown>[]; nextCursor: string | null }> {
    const cursor = filter.cursor === null ? null : readJobCursor(filter.cursor);
    const params: JobListParams = {
      projectId: ctx.project.id,
      status: filter.status,
      beforeSeq: cursor?.seq ?? null,
      beforeCreatedAt: cursor?.createdAt ?? null,
      limit: filter.limit + 1,
      createdFrom: filter.createdFrom ?? null,
      createdBefore: filter.createdBefore ?? null,
      scheduleId: filter.scheduleId ?? null,
      concurrencyKey: filter.concurrencyKey ?? null,
      tags: filter.tags ?? null,
      dueFrom: filter.dueFrom ?? null,
      dueBefore: filter.dueBefore ?? null,
    };
    // A list by creation window or schedule is ordered by (createdAt, seq) and its cursors carry
    // both; a cursor of seq alone (another list's, or an older version's) cannot say where in that
    // order to continue. Other lists keep cursors of seq alone, which every version reads.
    const byCreation = listedByCreation(params);
    if (byCreation && cursor !== null && cursor.createdAt === null) {
      throw new InvalidRequestError('cursor is not one this list returned: start it again without a cursor', { field: 'cursor' });
    }
    const rows = await this.deps.store.jobList(params);
    const { page, nextCursor } = pageOf(rows, filter.limit, byCreation ? encodeJobCursor : undefined);
    return { jobs: page.map(jobStatusView), nextCursor };
  }

  async cancel(ctx: JobRequestContext, jobId: string): Promise<{ jobId: string; status: 'CANCELLED' }> {
    const result = await this.deps.store.jobCancelIfQueued({ projectId: ctx.project.id, jobId, now: this.deps.clock.now() });
    requireTransition(result, jobId, notQueued);
    this.deps.metrics.jobsCancelled.inc();
    // Its key's next job may go now (SPEC section 15).
    if (result.ok && result.job.concurrencyKey !== null) this.deps.onJobDue(this.deps.clock.now());
    return { jobId, status: 'CANCELLED' };
  }

  async reschedule(ctx: JobRequestContext, jobId: string, body: unknown): Promise<Record<string, unknown>> {
    if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object: {"scheduledFor": <timestamp|null>}');
    refuseNearMisses(body, RESCHEDULE_FIELDS, 'a reschedule');
    const schedule = readSchedule(body, ctx.receivedAt);
    if (!schedule) throw new InvalidScheduleError('scheduledFor is required (null means "run at once")', { field: 'scheduledFor' });
    const result = await this.deps.store.jobRescheduleIfQueued({
      projectId: ctx.project.id,
      jobId,
      scheduledFor: schedule.value,
      now: this.deps.clock.now(),
    });
    requireTransition(result, jobId, notQueued);
    if (result.ok) this.deps.onJobDue(result.job.concurrencyKey === null ? result.job.runAt : this.deps.clock.now());
    return { jobId, scheduledFor: formatNullableTimestamp(schedule.value), status: 'QUEUED' };
  }

  async retry(ctx: JobRequestContext, jobId: string): Promise<{ jobId: string; status: 'QUEUED' }> {
    const result = await this.deps.store.jobRetryIfFailed({ projectId: ctx.project.id, jobId, now: this.deps.clock.now() });
    requireTransition(result, jobId, (status) => new JobNotFailedError(`Only a FAILED job can be retried; this one is ${status}`, { status }));
    if (result.ok) this.deps.onJobDue(result.job.runAt);
    return { jobId, status: 'QUEUED' };
  }

  async attempts(ctx: JobRequestContext, jobId: string): Promise<{ attempts: Record<string, unknown>[] }> {
    const job = await this.deps.store.jobGet({ projectId: ctx.project.id, jobId });
    if (!job) throw jobNotFound(jobId);
    const attempts = await this.deps.store.attemptListByJob(jobId);
    return { attempts: attempts.map(attemptView) };
  }
}

/**
 * A page of the jobs list by the one filter (SPEC section 14): status, tags, schedule, creation
 * time ([createdFrom, createdBefore)) and due time ([dueFrom, dueBefore)), from a cursor.
 */
export interface JobListFilter {
  status: JobStatus | null;
  tags?: JobTagPair[] | null;
  scheduleId?: string | null;
  concurrencyKey?: string | null;
  createdFrom?: number | null;
  createdBefore?: number | null;
  dueFrom?: number | null;
  dueBefore?: number | null;
  limit: number;
  cursor: string | null;
}

/** A status of a list's query or a filter, or null; anything else is INVALID_REQUEST on `field`. */
export function readStatusParam(status: unknown, field = 'status'): JobStatus | null {
  if (status === undefined || status === null) return null;
  if (!JOB_STATUSES.includes(status as JobStatus)) throw new InvalidRequestError(`${field} must be one of ${JOB_STATUSES.join(', ')}`, { field });
  return status as JobStatus;
}

const jobNotFound = (jobId: string) => new NotFoundError(`No job ${jobId} in this project`);
const notQueued = (status: JobStatus) =>
  new JobNotQueuedError(`Only a QUEUED job can be changed or cancelled; this one is ${status}`, { status });

function requireTransition(result: JobTransitionResult, jobId: string, wrongState: (status: JobStatus) => PunctualError): void {
  if (result.ok) return;
  if (result.status === null) throw jobNotFound(jobId);
  throw wrongState(result.status);
}
