import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { REPLAY_MAX_LIMIT } from '../../services/jobs-service.js';
import { JOB_STATUSES, type JobStatus } from '../../store/store.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields } from '../form-body.js';
import type { FormError } from '../views/components.js';
import { jobPage, jobsPage, type AttemptView, type JobFilter, type JobView, type RetryFailedOffer } from '../views/job-pages.js';

type ProjectParams = { Params: { projectId: string } };
type JobParams = { Params: { projectId: string; jobId: string } };

const PAGE_SIZE = 25;
const DATETIME_LOCAL = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2}(\.\d+)?)?$/;

/** A datetime-local value read as UTC (the page says so), as an RFC 3339 timestamp; null when empty. */
function utcFromLocalInput(value: string | undefined, field: string): string | null {
  const text = (value ?? '').trim();
  if (text === '') return null;
  const m = DATETIME_LOCAL.exec(text);
  if (!m) throw new InvalidRequestError(`${field} must be a date and time, e.g. 2027-01-05T09:30`, { field });
  return `${m[1]}T${m[2]}${m[3] ?? ':00'}Z`;
}

function epochFromLocalInput(value: string | undefined, field: string): number | null {
  const text = utcFromLocalInput(value, field);
  if (text === null) return null;
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new InvalidRequestError(`${field} is not a real date and time`, { field });
  return ms;
}

/** Bulk replay's window for jobs created in [createdFrom, createdBefore) (null: no bound), of one schedule or any, whenever they failed. */
function failedWindow(createdFrom: number | null, createdBefore: number | null, scheduleId: string) {
  return {
    failedFrom: 0,
    failedBefore: Number.MAX_SAFE_INTEGER,
    createdFrom: createdFrom ?? 0,
    createdBefore: createdBefore ?? Number.MAX_SAFE_INTEGER,
    scheduleId: scheduleId || null,
  };
}

/**
 * The report's deadline of an attempt that waits for one (SPEC section 11): accepted with 202,
 * not ended, its job STARTED; null otherwise. The job API's attempt view does not carry the
 * store's `reportBy`, so it is rebuilt the way the store sets it: asyncCompletionTimeoutMs after
 * the 202 or the last "running" report (exact unless the setting was changed since then).
 */
function reportDeadline(job: JobView, attempt: Omit<AttemptView, 'reportBy'>, timeoutMs: number): number | null {
  if (job.status !== 'STARTED' || attempt.outcome !== null || attempt.acceptedAt === null) return null;
  return Date.parse(attempt.reportedAt ?? attempt.acceptedAt) + timeoutMs;
}

/** The jobs list with its filters, a job's page, and the actions the job API allows in its state. */
export const jobRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { access, jobs } = deps.services;
  const jobContext = (request: FastifyRequest<ProjectParams>) => access.jobContext(signedIn(request).viewer, request.params.projectId, request.receivedAt);

  app.get<ProjectParams>('/projects/:projectId/jobs', async (request, reply) => {
    const ctx = await jobContext(request);
    const query = request.query as Record<string, unknown>;
    const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
    const filter: JobFilter = { status: text('status'), from: text('from'), to: text('to'), scheduleId: text('scheduleId'), jobId: text('jobId') };
    const cursor = text('cursor') || null;
    const page = await pageContext(deps, request, ctx.team);
    let error: FormError | null = null;
    let found: { jobs: Record<string, unknown>[]; nextCursor: string | null } = { jobs: [], nextCursor: null };
    let retryFailed: RetryFailedOffer | null = null;
    try {
      if (filter.jobId) {
        await jobs.get(ctx, filter.jobId);
        return reply.redirect(`/projects/${ctx.project.id}/jobs/${encodeURIComponent(filter.jobId)}`, 303);
      }
      if (filter.status && !JOB_STATUSES.includes(filter.status as JobStatus)) {
        throw new InvalidRequestError(`status must be one of ${JOB_STATUSES.join(', ')}`, { field: 'status' });
      }
      const createdFrom = epochFromLocalInput(filter.from, 'from');
      const createdBefore = epochFromLocalInput(filter.to, 'to');
      found = await jobs.listPage(ctx, {
        status: (filter.status || null) as JobStatus | null,
        scheduleId: filter.scheduleId || null,
        limit: PAGE_SIZE,
        cursor,
        createdFrom,
        createdBefore,
      });
      // "Retry all failed" applies to the FAILED jobs of the current filter: its creation window and schedule.
      if (filter.status === '' || filter.status === 'FAILED') {
        const count = await jobs.countFailed(ctx.project.id, failedWindow(createdFrom, createdBefore, filter.scheduleId));
        retryFailed = { count, limit: REPLAY_MAX_LIMIT, paused: ctx.project.paused };
      }
    } catch (caught) {
      error = caught instanceof NotFoundError ? { message: `No job ${filter.jobId} in this project.`, field: 'jobId' } : formError(caught);
    }
    const view = jobsPage(page, {
      project: ctx.project,
      jobs: found.jobs as unknown as JobView[],
      nextCursor: found.nextCursor,
      paged: cursor !== null,
      filter,
      error,
      retryFailed,
      notice: noticeFrom(request),
    });
    return sendPage(reply, view, error && !(error.field === 'jobId') ? 400 : 200);
  });

  // Every FAILED job created in [from, to), oldest failure first, queued again; back to the same window with the count.
  app.post<ProjectParams>('/projects/:projectId/jobs/retry-failed', async (request, reply) => {
    const ctx = await jobContext(request);
    const form = formFields(request.body);
    const window = { from: (form.from ?? '').trim(), to: (form.to ?? '').trim(), scheduleId: (form.scheduleId ?? '').trim() };
    const createdFrom = epochFromLocalInput(window.from, 'from');
    const createdBefore = epochFromLocalInput(window.to, 'to');
    const { retried, hasMore } = await jobs.replayFailed(ctx.project.id, failedWindow(createdFrom, createdBefore, window.scheduleId), REPLAY_MAX_LIMIT);
    // The window was read as dates and times above, and the schedule id matched as a value: only those go back into the URL.
    const query = Object.fromEntries(Object.entries(window).filter(([, value]) => value !== ''));
    return redirectWithNotice(reply, `/projects/${ctx.project.id}/jobs`, hasMore ? 'failed-retried-more' : 'failed-retried', query, retried);
  });

  async function renderJob(request: FastifyRequest<JobParams>, extra: { error?: FormError; notice?: string | null; rescheduleValue?: string }) {
    const ctx = await jobContext(request);
    const found = await jobs.getWithTrace(ctx, request.params.jobId);
    const job = found.job as unknown as JobView;
    const { attempts } = await jobs.attempts(ctx, request.params.jobId);
    const page = await pageContext(deps, request, ctx.team);
    const views = (attempts as unknown as Omit<AttemptView, 'reportBy'>[]).map((a) => ({ ...a, reportBy: reportDeadline(job, a, ctx.project.asyncCompletionTimeoutMs) }));
    return jobPage(page, { project: ctx.project, job, traceId: found.traceId, attempts: views, now: deps.clock.now(), ...extra });
  }

  app.get<JobParams>('/projects/:projectId/jobs/:jobId', async (request, reply) => sendPage(reply, await renderJob(request, { notice: noticeFrom(request) })));

  /** Runs a job action; a refusal (JOB_NOT_QUEUED, a bad time…) is shown on the job's page, else back to the page with a notice. */
  async function act(
    request: FastifyRequest<JobParams>,
    reply: FastifyReply,
    action: () => Promise<unknown>,
    done: 'cancelled' | 'rescheduled' | 'retried',
    rescheduleValue?: string,
  ) {
    try {
      await action();
    } catch (caught) {
      const refused = formError(caught);
      if (refused.statusCode === 404) throw caught;
      const page = await renderJob(request, { error: refused, ...(rescheduleValue !== undefined && { rescheduleValue }) });
      return sendPage(reply, page, refused.statusCode);
    }
    return redirectWithNotice(reply, `/projects/${request.params.projectId}/jobs/${encodeURIComponent(request.params.jobId)}`, done);
  }

  app.post<JobParams>('/projects/:projectId/jobs/:jobId/cancel', async (request, reply) => {
    const ctx = await jobContext(request);
    return act(request, reply, () => jobs.cancel(ctx, request.params.jobId), 'cancelled');
  });

  app.post<JobParams>('/projects/:projectId/jobs/:jobId/retry', async (request, reply) => {
    const ctx = await jobContext(request);
    return act(request, reply, () => jobs.retry(ctx, request.params.jobId), 'retried');
  });

  app.post<JobParams>('/projects/:projectId/jobs/:jobId/reschedule', async (request, reply) => {
    const ctx = await jobContext(request);
    const typed = formFields(request.body).scheduledFor ?? '';
    const reschedule = async () => jobs.reschedule(ctx, request.params.jobId, { scheduledFor: utcFromLocalInput(typed, 'scheduledFor') });
    return act(request, reply, reschedule, 'rescheduled', typed);
  });
};
