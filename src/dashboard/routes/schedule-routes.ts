import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { schedulesPage, type ScheduleView } from '../views/schedule-pages.js';

type ProjectParams = { Params: { projectId: string } };
type ScheduleParams = { Params: { projectId: string; scheduleId: string } };

const NEXT_RUNS = 5;

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
    const rows = (views as unknown as ScheduleView[]).map((schedule) => ({
      schedule,
      nextRuns: schedule.paused ? [] : schedules.preview({ cron: schedule.cron, timezone: schedule.timezone, count: String(NEXT_RUNS) }).runs,
    }));
    return sendPage(reply, schedulesPage(await pageContext(deps, request, team), { project, schedules: rows, notice: noticeFrom(request) }));
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
