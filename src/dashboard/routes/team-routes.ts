import type { FastifyPluginAsync } from 'fastify';
import { formError, pageContext, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields } from '../form-body.js';
import { errorPage } from '../views/auth-pages.js';
import { overviewPage } from '../views/overview-page.js';
import { projectsPage, usagePage } from '../views/team-pages.js';

type TeamParams = { Params: { teamId: string } };

/** The team's projects (and creating one) and its usage. */
export const teamRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { access, manage, plans, rateLimits } = deps.services;

  app.get('/', async (request, reply) => {
    const ctx = await pageContext(deps, request);
    const first = ctx.teams[0];
    if (first) return reply.redirect(`/teams/${first.id}`, 303);
    const page = errorPage(ctx, {
      status: 200,
      title: 'No team yet',
      message: 'Your account is not in any team. Ask the operator to add you: punctual users add-team --email <you> --team <teamId>.',
    });
    return sendPage(reply, page);
  });

  app.get<TeamParams>('/teams/:teamId', async (request, reply) => {
    const team = await access.requireTeam(signedIn(request).viewer, request.params.teamId);
    const projects = await manage.projectSummaries(team.id);
    return sendPage(reply, projectsPage(await pageContext(deps, request, team), { team, projects }));
  });

  app.post<TeamParams>('/teams/:teamId/projects', async (request, reply) => {
    const viewer = signedIn(request).viewer;
    const team = await access.requireTeam(viewer, request.params.teamId);
    const form = formFields(request.body);
    const name = form.name ?? '';
    const webhookUrl = form.webhookUrl?.trim() ?? '';
    let created;
    try {
      created = await manage.createProject(team.id, { name, ...(webhookUrl !== '' && { webhookUrl }) });
    } catch (error) {
      const refused = formError(error);
      const projects = await manage.projectSummaries(team.id);
      return sendPage(reply, projectsPage(await pageContext(deps, request, team), { team, projects, error: refused, name, webhookUrl }), refused.statusCode);
    }
    // A new project comes with its first key, shown once on the page that opens next, inside the
    // curl command that dispatches the project's first job: the empty state teaches by example.
    const key = await manage.createKey(created.projectId, { name: 'default' });
    const project = await access.requireProject(viewer, created.projectId);
    const [{ keys }, overview, health] = await Promise.all([manage.listKeys(project.id), manage.overview(project.id), manage.health(project.id)]);
    const page = overviewPage(await pageContext(deps, request, team), {
      project,
      overview,
      health,
      keys,
      publicUrl: deps.publicUrl,
      createdKey: { name: key.name, key: key.key },
      notice: 'Project created, with a first API key.',
    });
    return sendPage(reply, page, 201);
  });

  app.get<TeamParams>('/teams/:teamId/usage', async (request, reply) => {
    const team = await access.requireTeam(signedIn(request).viewer, request.params.teamId);
    const usage = await manage.usage(team.id);
    const rateNow = await rateLimits.current(team.id, plans.planOf(team), deps.clock.now());
    return sendPage(reply, usagePage(await pageContext(deps, request, team), { team, usage, rateNow }));
  });
};
