import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { NotFoundError } from '../../errors.js';
import type { ProjectRow } from '../../store/store.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields, type FormBody } from '../form-body.js';
import type { FormError } from '../views/components.js';
import { PROJECT_TABS, type ProjectTab } from '../views/layout.js';
import { overviewPage } from '../views/overview-page.js';
import { keysPage, settingsPage, webhookPage, type SettingsValues, type TestDeliveryView } from '../views/project-pages.js';

type ProjectParams = { Params: { projectId: string } };
type KeyParams = { Params: { projectId: string; keyId: string } };

/** A number typed in a form, as a number; anything else is passed on as typed, for the service to refuse with its own message. */
function formNumber(text: string | undefined): unknown {
  const value = (text ?? '').trim();
  return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
}

function settingsValues(project: ProjectRow): SettingsValues {
  return {
    maxRetries: project.retryMaxRetries === null ? '' : String(project.retryMaxRetries),
    initialDelayMs: String(project.retryInitialDelayMs),
    factor: String(project.retryFactor),
    maxDelayMs: String(project.retryMaxDelayMs),
    deliveryTimeoutMs: String(project.deliveryTimeoutMs),
    deliveryConcurrency: String(project.deliveryConcurrency),
    deliveryRatePerSecond: project.deliveryRatePerSecond === null ? '' : String(project.deliveryRatePerSecond),
    acceptAny2xx: project.acceptAny2xx,
    asyncCompletion: project.asyncCompletion,
    asyncCompletionTimeoutMs: String(project.asyncCompletionTimeoutMs),
    retentionDays: project.retentionDays === null ? '' : String(project.retentionDays),
    eventsUrl: project.eventsUrl ?? '',
    eventsFormat: project.eventsFormat,
  };
}

function settingsPatch(form: FormBody): Record<string, unknown> {
  const maxRetries = (form['retryPolicy.maxRetries'] ?? '').trim();
  const retentionDays = (form.retentionDays ?? '').trim();
  const rate = (form.deliveryRatePerSecond ?? '').trim();
  return {
    retryPolicy: {
      maxRetries: maxRetries === '' ? null : formNumber(maxRetries),
      initialDelayMs: formNumber(form['retryPolicy.initialDelayMs']),
      factor: formNumber(form['retryPolicy.factor']),
      maxDelayMs: formNumber(form['retryPolicy.maxDelayMs']),
    },
    deliveryTimeoutMs: formNumber(form.deliveryTimeoutMs),
    deliveryConcurrency: formNumber(form.deliveryConcurrency),
    // Empty: no limit.
    deliveryRatePerSecond: rate === '' ? null : formNumber(rate),
    // An unchecked checkbox sends nothing at all.
    acceptAny2xx: form.acceptAny2xx === 'true',
    asyncCompletion: form.asyncCompletion === 'true',
    // Changes only when the form has it (as the events fields below).
    ...(form.asyncCompletionTimeoutMs !== undefined && { asyncCompletionTimeoutMs: formNumber(form.asyncCompletionTimeoutMs) }),
    retentionDays: retentionDays === '' ? null : formNumber(retentionDays),
    // The events fields change only when the form has them (an empty URL means none).
    ...(form.eventsUrl !== undefined && { eventsUrl: form.eventsUrl.trim() === '' ? null : form.eventsUrl.trim() }),
    ...(form.eventsFormat !== undefined && { eventsFormat: form.eventsFormat }),
  };
}

/** A project's overview, its API keys, its webhook (URL, secrets, test delivery) and its delivery settings. */
export const projectRoutes: FastifyPluginAsync<DashboardDeps> = async (app, deps) => {
  const { access, manage, jobs, plans, testDeliveries } = deps.services;
  const project = (request: FastifyRequest<ProjectParams>) => access.requireProject(signedIn(request).viewer, request.params.projectId);

  // The overview is the project's page (/projects/:projectId, as it always was); its keys, which
  // that page used to hold, have a tab of their own.
  app.get<ProjectParams>('/projects/:projectId', async (request, reply) => {
    const row = await project(request);
    const team = await access.requireTeam(signedIn(request).viewer, row.teamId);
    const [{ keys }, overview] = await Promise.all([manage.listKeys(row.id), manage.overview(row.id)]);
    const page = overviewPage(await pageContext(deps, request, team), { project: row, overview, keys, publicUrl: deps.publicUrl, notice: noticeFrom(request) });
    return sendPage(reply, page);
  });

  async function keysTab(request: FastifyRequest<ProjectParams>, extra: { createdKey?: { name: string; key: string }; error?: FormError; notice?: string | null }) {
    const viewer = signedIn(request).viewer;
    const row = await project(request);
    const team = await access.requireTeam(viewer, row.teamId);
    const { keys } = await manage.listKeys(row.id);
    const ctx = await access.jobContext(viewer, row.id, request.receivedAt);
    const hasJobs = (await jobs.listPage(ctx, { status: null, limit: 1, cursor: null })).jobs.length > 0;
    return keysPage(await pageContext(deps, request, team), { project: row, keys, hasJobs, publicUrl: deps.publicUrl, ...extra });
  }

  app.get<ProjectParams>('/projects/:projectId/keys', async (request, reply) => sendPage(reply, await keysTab(request, { notice: noticeFrom(request) })));

  // Pause and resume deliveries (SPEC section 10); back to the tab the form was on (a fixed list, never a typed path).
  for (const [action, paused] of [['pause', true], ['resume', false]] as const) {
    app.post<ProjectParams>(`/projects/:projectId/${action}`, async (request, reply) => {
      const row = await project(request);
      await manage.updateProject(row.id, { paused });
      const back = formFields(request.body).back;
      const tab = back !== undefined && Object.hasOwn(PROJECT_TABS, back) ? PROJECT_TABS[back as ProjectTab] : '';
      return redirectWithNotice(reply, `/projects/${row.id}${tab}`, paused ? 'project-paused' : 'project-resumed');
    });
  }

  app.post<ProjectParams>('/projects/:projectId/keys', async (request, reply) => {
    const row = await project(request);
    try {
      const key = await manage.createKey(row.id, { name: formFields(request.body).name ?? '' });
      // Rendered straight from the POST: the key exists in clear only in this response.
      return sendPage(reply, await keysTab(request, { createdKey: { name: key.name, key: key.key } }), 201);
    } catch (error) {
      const refused = formError(error);
      return sendPage(reply, await keysTab(request, { error: refused }), refused.statusCode);
    }
  });

  app.post<KeyParams>('/projects/:projectId/keys/:keyId/revoke', async (request, reply) => {
    const row = await project(request);
    const key = await access.requireKey(signedIn(request).viewer, request.params.keyId);
    if (key.projectId !== row.id) throw new NotFoundError(`No key ${request.params.keyId}`);
    await manage.revokeKey(key.id);
    return redirectWithNotice(reply, `/projects/${row.id}/keys`, 'key-revoked');
  });

  async function webhook(
    request: FastifyRequest<ProjectParams>,
    extra: { revealed?: boolean; testResult?: TestDeliveryView; error?: FormError; webhookUrl?: string; notice?: string | null },
  ) {
    const row = await project(request);
    const team = await access.requireTeam(signedIn(request).viewer, row.teamId);
    const { webhookSecrets } = await manage.listWebhookSecrets(row.id);
    return webhookPage(await pageContext(deps, request, team), { project: row, secrets: webhookSecrets, revealed: extra.revealed ?? false, ...extra });
  }

  app.get<ProjectParams>('/projects/:projectId/webhook', async (request, reply) => sendPage(reply, await webhook(request, { notice: noticeFrom(request) })));

  app.post<ProjectParams>('/projects/:projectId/webhook', async (request, reply) => {
    const row = await project(request);
    const typed = (formFields(request.body).webhookUrl ?? '').trim();
    try {
      await manage.updateProject(row.id, { webhookUrl: typed === '' ? null : typed });
    } catch (error) {
      const refused = formError(error);
      return sendPage(reply, await webhook(request, { error: refused, webhookUrl: typed }), refused.statusCode);
    }
    return redirectWithNotice(reply, `/projects/${row.id}/webhook`, 'url-saved');
  });

  // A POST, so secrets are fetched only on purpose and never sit in a cached or bookmarked GET.
  app.post<ProjectParams>('/projects/:projectId/webhook/reveal', async (request, reply) => sendPage(reply, await webhook(request, { revealed: true })));

  app.post<ProjectParams>('/projects/:projectId/webhook/rotate', async (request, reply) => {
    const row = await project(request);
    await manage.rotateWebhookSecret(row.id);
    return redirectWithNotice(reply, `/projects/${row.id}/webhook`, 'rotated');
  });

  app.post<ProjectParams>('/projects/:projectId/webhook/test', async (request, reply) => {
    const row = await project(request);
    const at = deps.clock.now();
    try {
      const result = await testDeliveries.send(row.id);
      return sendPage(reply, await webhook(request, { testResult: { ...result, at } }));
    } catch (error) {
      const refused = formError(error);
      return sendPage(reply, await webhook(request, { error: refused }), refused.statusCode);
    }
  });

  async function settings(request: FastifyRequest<ProjectParams>, extra: { values?: SettingsValues; error?: FormError; notice?: string | null }) {
    const row = await project(request);
    const team = await access.requireTeam(signedIn(request).viewer, row.teamId);
    const cap = plans.planOf(team).maxRetriesCap;
    return settingsPage(await pageContext(deps, request, team), { project: row, values: extra.values ?? settingsValues(row), maxRetriesCap: cap, defaultRetentionDays: deps.services.retention.defaultRetentionDays, ...extra });
  }

  app.get<ProjectParams>('/projects/:projectId/settings', async (request, reply) => sendPage(reply, await settings(request, { notice: noticeFrom(request) })));

  app.post<ProjectParams>('/projects/:projectId/settings', async (request, reply) => {
    const row = await project(request);
    const form = formFields(request.body);
    try {
      await manage.updateProject(row.id, settingsPatch(form));
    } catch (error) {
      const refused = formError(error);
      const values: SettingsValues = {
        maxRetries: form['retryPolicy.maxRetries'] ?? '',
        initialDelayMs: form['retryPolicy.initialDelayMs'] ?? '',
        factor: form['retryPolicy.factor'] ?? '',
        maxDelayMs: form['retryPolicy.maxDelayMs'] ?? '',
        deliveryTimeoutMs: form.deliveryTimeoutMs ?? '',
        deliveryConcurrency: form.deliveryConcurrency ?? '',
        deliveryRatePerSecond: form.deliveryRatePerSecond ?? '',
        acceptAny2xx: form.acceptAny2xx === 'true',
        asyncCompletion: form.asyncCompletion === 'true',
        asyncCompletionTimeoutMs: form.asyncCompletionTimeoutMs ?? String(row.asyncCompletionTimeoutMs),
        retentionDays: form.retentionDays ?? '',
        eventsUrl: form.eventsUrl ?? row.eventsUrl ?? '',
        eventsFormat: form.eventsFormat ?? row.eventsFormat,
      };
      return sendPage(reply, await settings(request, { values, error: refused }), refused.statusCode);
    }
    return redirectWithNotice(reply, `/projects/${row.id}/settings`, 'settings-saved');
  });
};
