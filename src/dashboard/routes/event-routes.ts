import type { FastifyPluginAsync } from 'fastify';
import { pageContext, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { eventsPage, type EventView } from '../views/event-pages.js';

type ProjectParams = { Params: { projectId: string } };

const PAGE_SIZE = 25;

/** A project's events (SPEC section 10), through the same service as GET /manage/v1/projects/:id/events. */
export const eventRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { access, manage } = deps.services;

  app.get<ProjectParams>('/projects/:projectId/events', async (request, reply) => {
    const viewer = signedIn(request).viewer;
    const project = await access.requireProject(viewer, request.params.projectId);
    const team = await access.requireTeam(viewer, project.teamId);
    const cursor = (request.query as Record<string, unknown>).cursor;
    const paged = typeof cursor === 'string' && cursor !== '';
    const { events, nextCursor } = await manage.listEvents(project.id, { limit: String(PAGE_SIZE), ...(paged && { cursor }) });
    const page = await pageContext(deps, request, team);
    return sendPage(reply, eventsPage(page, { project, events: events as EventView[], nextCursor, paged }));
  });
};
