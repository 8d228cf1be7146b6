import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { BULK_ACTIONS, BULK_MAX_LIMIT, filterIsEmpty, type BulkFilter } from '../../services/input/bulk-input.js';
import { readTagParams } from '../../services/input/tags-input.js';
import { readSchedule } from '../../services/input/validate-job-input.js';
import type { JobBulkActions } from '../../services/job-bulk-actions.js';
import { readStatusParam } from '../../services/jobs-service.js';
import type { JobBulkAction } from '../../store/store.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields } from '../form-body.js';
import { formJson, formUtcTime } from '../form-values.js';
import { SEND_JOB_FIELDS, type SendJobValues } from '../views/job-send-box.js';
import type { JobRequestContext } from '../../services/jobs-service.js';
import type { FormError } from '../views/components.js';
import { filterQuery } from '../views/job-bulk-box.js';
import { jobPage, jobsPage, type AttemptView, type BulkOffer, type JobFilter, type JobView, type ScheduleChoice } from '../views/job-pages.js';

type ProjectParams = { Params: { projectId: string } };
type JobParams = { Params: { projectId: string; jobId: string } };

const PAGE_SIZE = 25;
/** A UTC time typed in a form, as the RFC 3339 timestamp a job body takes; null when empty. */
const utcTimestamp = (value: string | undefined, field: string): string | null => {
  const ms = formUtcTime(value, field);
  return ms === null ? null : new Date(ms).toISOString();
};

/** The list's filter as given in its query (or a bulk form's copy of it): each field trimmed, tags as given. */
function filterOf(query: Record<string, unknown>): JobFilter {
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).trim() : '');
  const given = query.tag === undefined ? [] : Array.isArray(query.tag) ? (query.tag as unknown[]) : [query.tag];
  const tags = given.flatMap((tag) => (typeof tag === 'string' && tag.trim() !== '' ? [tag.trim()] : []));
  return { status: text('status'), tags, from: text('from'), to: text('to'), dueFrom: text('dueFrom'), dueTo: text('dueTo'), scheduleId: text('scheduleId'), concurrencyKey: text('concurrencyKey'), jobId: text('jobId') };
}

/** The filter read as the API reads it (the one filter of SPEC section 14); a bad field is INVALID_REQUEST naming it. */
function criteriaOf(filter: JobFilter): BulkFilter {
  return {
    status: readStatusParam(filter.status || undefined),
    tags: readTagParams(filter.tags),
    scheduleId: filter.scheduleId || null,
    concurrencyKey: filter.concurrencyKey || null,
    createdFrom: formUtcTime(filter.from, 'from'),
    createdBefore: formUtcTime(filter.to, 'to'),
    dueFrom: formUtcTime(filter.dueFrom, 'dueFrom'),
    dueBefore: formUtcTime(filter.dueTo, 'dueTo'),
  };
}

/**
 * The bulk actions a filter allows, each with its dry run: cancel and reschedule for the QUEUED
 * jobs of a filter that names something (never "every job"), retry for its FAILED ones (with no
 * filter: every failed job of the project, as "retry all failed" always did).
 */
async function bulkOffers(bulk: JobBulkActions, projectId: string, criteria: BulkFilter): Promise<BulkOffer[]> {
  const dryRun = async (action: JobBulkAction, filter: BulkFilter) => bulk.act(projectId, { action, filter, dryRun: true, limit: BULK_MAX_LIMIT });
  const offers: BulkOffer[] = [];
  if (!filterIsEmpty(criteria) && (criteria.status === null || criteria.status === 'QUEUED')) {
    const { matched, hasMore } = await dryRun({ kind: 'cancel' }, criteria);
    offers.push({ action: 'cancel', matched, hasMore, limit: BULK_MAX_LIMIT }, { action: 'reschedule', matched, hasMore, limit: BULK_MAX_LIMIT });
  }
  if (criteria.status === null || criteria.status === 'FAILED') {
    const { matched, hasMore } = await dryRun({ kind: 'retry' }, { ...criteria, status: 'FAILED' });
    offers.push({ action: 'retry', matched, hasMore, limit: BULK_MAX_LIMIT });
  }
  return offers;
}

/** A query string (a bulk form's copy of the list's) as the record Fastify gives a GET: a name given twice is an array. */
function queryRecord(query: string): Record<string, string | string[]> {
  const record: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(query)) {
    const before = record[name];
    record[name] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value];
  }
  return record;
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
  const { access, jobs, jobCreation, bulk, schedules } = deps.services;
  const jobContext = (request: FastifyRequest<ProjectParams>) => access.jobContext(signedIn(request).viewer, request.params.projectId, request.receivedAt);

  /** The project's schedules, for the list's filter by name (at most the 1,000 a project may have). */
  async function scheduleChoices(ctx: JobRequestContext): Promise<ScheduleChoice[]> {
    const choices: ScheduleChoice[] = [];
    let cursor: string | undefined;
    do {
      const page = await schedules.list(ctx, { limit: '100', ...(cursor !== undefined && { cursor }) });
      for (const s of page.schedules as unknown as ScheduleChoice[]) choices.push({ scheduleId: s.scheduleId, name: s.name, cron: s.cron });
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    return choices.sort((a, b) => (a.name ?? '\uffff').localeCompare(b.name ?? '\uffff') || a.scheduleId.localeCompare(b.scheduleId));
  }

  async function listPage(request: FastifyRequest<ProjectParams>, reply: FastifyReply, send: { values: SendJobValues; error: FormError & { statusCode: number } } | null = null) {
    const ctx = await jobContext(request);
    const query = request.query as Record<string, unknown>;
    const filter = filterOf(query);
    const cursor = typeof query.cursor === 'string' && query.cursor.trim() !== '' ? query.cursor.trim() : null;
    const page = await pageContext(deps, request, ctx.team);
    let error: FormError | null = null;
    let found: { jobs: Record<string, unknown>[]; nextCursor: string | null } = { jobs: [], nextCursor: null };
    let offers: BulkOffer[] = [];
    try {
      if (filter.jobId) {
        await jobs.get(ctx, filter.jobId);
        return reply.redirect(`/projects/${ctx.project.id}/jobs/${encodeURIComponent(filter.jobId)}`, 303);
      }
      const criteria = criteriaOf(filter);
      found = await jobs.listPage(ctx, { ...criteria, limit: PAGE_SIZE, cursor });
      // The same filter, for the actions on everything it matches, each with its dry run.
      offers = await bulkOffers(bulk, ctx.project.id, criteria);
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
      offers,
      schedules: await scheduleChoices(ctx),
      send,
      notice: noticeFrom(request),
    });
    if (send) return sendPage(reply, view, send.error.statusCode);
    return sendPage(reply, view, error && !(error.field === 'jobId') ? 400 : 200);
  }

  app.get<ProjectParams>('/projects/:projectId/jobs', async (request, reply) => listPage(request, reply));

  /**
   * "Send a test job": a real dispatch of the payload typed, as POST /api/jobs/dispatch makes it
   * (validated, counted, delivered); its page opens next. A refusal is shown in the form, with
   * what was typed.
   */
  app.post<ProjectParams>('/projects/:projectId/jobs/send', async (request, reply) => {
    const ctx = await jobContext(request);
    const form = formFields(request.body);
    const values: SendJobValues = { payload: form.payload ?? '', scheduledFor: form.scheduledFor ?? '' };
    let jobId: string;
    try {
      const body = { payload: formJson(values.payload, 'payload'), scheduledFor: utcTimestamp(values.scheduledFor, 'scheduledFor') };
      const answer = await jobCreation.enqueue(ctx, body, null, null);
      jobId = (JSON.parse(answer.body) as { jobId: string }).jobId;
    } catch (caught) {
      const refused = formError(caught);
      const field = refused.field !== undefined && SEND_JOB_FIELDS.includes(refused.field) ? refused.field : 'send';
      return listPage(request, reply, { values, error: { ...refused, field } });
    }
    return redirectWithNotice(reply, `/projects/${ctx.project.id}/jobs/${jobId}`, 'test-job-sent');
  });

  /**
   * Cancel, reschedule or retry every job of the list's filter (carried as the list's query), as
   * POST /api/jobs/bulk does, up to 10,000 at a time, oldest first; back to the same list with how
   * many changed. Retry with no filter is every failed job (the filter's status is the action's).
   */
  app.post<ProjectParams>('/projects/:projectId/jobs/bulk', async (request, reply) => {
    const ctx = await jobContext(request);
    const form = formFields(request.body);
    const filter = filterOf(queryRecord(form.filter ?? ''));
    const criteria = criteriaOf(filter);
    const kind = form.action as JobBulkAction['kind'];
    if (!BULK_ACTIONS.includes(kind)) throw new InvalidRequestError(`action must be one of ${BULK_ACTIONS.join(', ')}`, { field: 'action' });
    if (kind !== 'retry' && filterIsEmpty(criteria)) {
      throw new InvalidRequestError('Filter the list first: a bulk action never applies to every job', { field: 'filter' });
    }
    const action: JobBulkAction =
      kind === 'reschedule'
        ? { kind, scheduledFor: readSchedule({ scheduledFor: utcTimestamp(form.scheduledFor, 'scheduledFor') }, request.receivedAt)!.value }
        : { kind };
    const { changed, hasMore } = await bulk.act(ctx.project.id, {
      action,
      filter: kind === 'retry' && criteria.status === null ? { ...criteria, status: 'FAILED' } : criteria,
      dryRun: false,
      limit: BULK_MAX_LIMIT,
    });
    const done = ({ cancel: 'bulk-cancelled', reschedule: 'bulk-rescheduled', retry: 'failed-retried' } as const)[kind];
    // The filter was read above (dates and times, tags, a status): only what it kept goes back into the URL.
    return redirectWithNotice(reply, `/projects/${ctx.project.id}/jobs`, hasMore ? `${done}-more` : done, filterQuery({ ...filter, jobId: '' }), changed);
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
    const reschedule = async () => jobs.reschedule(ctx, request.params.jobId, { scheduledFor: utcTimestamp(typed, 'scheduledFor') });
    return act(request, reply, reschedule, 'rescheduled', typed);
  });
};
