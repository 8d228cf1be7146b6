import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { PunctualError } from '../../errors.js';
import type { SchedulesService } from '../../services/schedules-service.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields, type FormBody } from '../form-body.js';
import { formJson, formNumber, formTags } from '../form-values.js';
import type { FormError } from '../views/components.js';
import { NEW_SCHEDULE, scheduleFormPage, schedulePreview, type ScheduleFormValues, type SchedulePreview } from '../views/schedule-form.js';
import { schedulesPage, type ScheduleView } from '../views/schedule-pages.js';

type ProjectParams = { Params: { projectId: string } };
type ScheduleParams = { Params: { projectId: string; scheduleId: string } };

const NEXT_RUNS = 5;
/** The zones the runtime knows, offered as the form's time zone is typed. */
const ZONES: readonly string[] = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];

/** What an expression and zone typed do, or why they cannot run; null before anything is typed. */
function previewOf(schedules: SchedulesService, cron: string, timezone: string): SchedulePreview {
  if (cron.trim() === '') return null;
  try {
    return schedules.describe(cron, timezone.trim() === '' ? 'UTC' : timezone.trim(), NEXT_RUNS);
  } catch (error) {
    if (error instanceof PunctualError && error.statusCode < 500) return { error: error.data.message };
    throw error;
  }
}

function formValues(form: FormBody): ScheduleFormValues {
  const value = (name: keyof ScheduleFormValues) => form[name] ?? NEW_SCHEDULE[name];
  return {
    name: value('name'),
    cron: value('cron'),
    timezone: value('timezone'),
    payload: value('payload'),
    maxRetries: value('maxRetries'),
    catchUp: value('catchUp'),
    overlap: value('overlap'),
    tags: value('tags'),
  };
}

/** The form as POST /api/schedules takes it: only the fields given (an empty optional one is left out). */
function scheduleBody(v: ScheduleFormValues): Record<string, unknown> {
  const tags = formTags(v.tags);
  return {
    cron: v.cron.trim(),
    timezone: v.timezone.trim() === '' ? 'UTC' : v.timezone.trim(),
    payload: formJson(v.payload, 'payload'),
    catchUp: v.catchUp,
    overlap: v.overlap,
    ...(v.name.trim() !== '' && { name: v.name.trim() }),
    ...(v.maxRetries.trim() !== '' && { maxRetries: formNumber(v.maxRetries) }),
    ...(tags !== undefined && { tags }),
  };
}

/** A project's recurring schedules (SPEC section 9), through the same service as /api/schedules. */
export const scheduleRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { access, schedules } = deps.services;

  async function context(request: FastifyRequest<ProjectParams>) {
    const viewer = signedIn(request).viewer;
    const project = await access.requireProject(viewer, request.params.projectId);
    return { viewer, project, ctx: await access.jobContext(viewer, project.id, request.receivedAt) };
  }

  app.get<ProjectParams>('/projects/:projectId/schedules', async (request, reply) => {
    const { viewer, project, ctx } = await context(request);
    const team = await access.requireTeam(viewer, project.teamId);
    const { schedules: views } = await schedules.list(ctx, { limit: '100' });
    const rows = (views as unknown as ScheduleView[]).map((schedule) => {
      const { runs, words } = schedules.describe(schedule.cron, schedule.timezone, NEXT_RUNS);
      return { schedule, words, nextRuns: schedule.paused ? [] : runs };
    });
    return sendPage(reply, schedulesPage(await pageContext(deps, request, team), { project, schedules: rows, notice: noticeFrom(request) }));
  });

  async function formPage(request: FastifyRequest<ProjectParams>, reply: FastifyReply, values: ScheduleFormValues, error: (FormError & { statusCode: number }) | null) {
    const { viewer, project } = await context(request);
    const team = await access.requireTeam(viewer, project.teamId);
    const page = scheduleFormPage(await pageContext(deps, request, team), {
      project,
      values,
      preview: previewOf(schedules, values.cron, values.timezone),
      zones: ZONES,
      error,
    });
    return sendPage(reply, page, error?.statusCode ?? 200);
  }

  app.get<ProjectParams>('/projects/:projectId/schedules/new', async (request, reply) => formPage(request, reply, NEW_SCHEDULE, null));

  // The preview block alone, for the form's script as the expression is typed.
  app.get<ProjectParams>('/projects/:projectId/schedules/preview', async (request, reply) => {
    await context(request);
    const query = request.query as Record<string, unknown>;
    const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string) : '');
    return sendPage(reply, schedulePreview(previewOf(schedules, text('cron'), text('timezone'))));
  });

  // Preview (the same form again, with what the expression does) or create, through the same service as POST /api/schedules.
  app.post<ProjectParams>('/projects/:projectId/schedules', async (request, reply) => {
    const { project, ctx } = await context(request);
    const form = formFields(request.body);
    const values = formValues(form);
    if (form.intent !== 'create') return formPage(request, reply, values, null);
    try {
      await schedules.create(ctx, scheduleBody(values));
    } catch (error) {
      return formPage(request, reply, values, formError(error));
    }
    return redirectWithNotice(reply, `/projects/${project.id}/schedules`, 'schedule-created');
  });

  const actions = {
    pause: (ctx, id) => schedules.update(ctx, id, { paused: true }),
    resume: (ctx, id) => schedules.update(ctx, id, { paused: false }),
    trigger: (ctx, id) => schedules.trigger(ctx, id),
    delete: (ctx, id) => schedules.delete(ctx, id),
  } satisfies Record<string, (ctx: Awaited<ReturnType<typeof context>>['ctx'], scheduleId: string) => Promise<unknown>>;

  for (const action of Object.keys(actions) as (keyof typeof actions)[]) {
    app.post<ScheduleParams>(`/projects/:projectId/schedules/:scheduleId/${action}`, async (request, reply) => {
      const { project, ctx } = await context(request);
      await actions[action](ctx, request.params.scheduleId);
      return redirectWithNotice(reply, `/projects/${project.id}/schedules`, `schedule-${action}`);
    });
  }
};
