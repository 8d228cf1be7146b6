import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../../errors.js';
import type { ProjectRow } from '../../store/store.js';
import { formError, noticeFrom, pageContext, redirectWithNotice, sendPage, signedIn, type DashboardDeps } from '../dashboard-context.js';
import { formFields, type FormBody } from '../form-body.js';
import { DURATION_UNITS, durationParts, formDuration, formNumber, type DurationUnit } from '../form-values.js';
import type { FormError } from '../views/components.js';
import { PROJECT_TABS, type ProjectTab } from '../views/layout.js';
import { overviewPage } from '../views/overview-page.js';
import { html } from '../views/html.js';
import { keysPage, webhookPage, type TestDeliveryView } from '../views/project-pages.js';
import {
  durationRefusal,
  DURATION_FIELDS,
  retrySchedule,
  retryWaits,
  settingsPage,
  type DurationField,
  type DurationValue,
  type SettingsValues,
} from '../views/settings-page.js';

type ProjectParams = { Params: { projectId: string } };
type KeyParams = { Params: { projectId: string; keyId: string } };

const durationOf = (ms: number) => durationParts(ms);

function settingsValues(project: ProjectRow): SettingsValues {
  return {
    maxRetries: project.retryMaxRetries === null ? '' : String(project.retryMaxRetries),
    initialDelay: durationOf(project.retryInitialDelayMs),
    factor: String(project.retryFactor),
    maxDelay: durationOf(project.retryMaxDelayMs),
    deliveryTimeout: durationOf(project.deliveryTimeoutMs),
    deliveryConcurrency: String(project.deliveryConcurrency),
    deliveryRatePerSecond: project.deliveryRatePerSecond === null ? '' : String(project.deliveryRatePerSecond),
    acceptAny2xx: project.acceptAny2xx,
    asyncCompletion: project.asyncCompletion,
    asyncCompletionTimeout: durationOf(project.asyncCompletionTimeoutMs),
    holdOnFailure: project.holdOnFailure,
    stopOn: project.retryStopOn.join(', '),
    retentionDays: project.retentionDays === null ? '' : String(project.retentionDays),
    eventsUrl: project.eventsUrl ?? '',
    eventsFormat: project.eventsFormat,
  };
}

/** A duration field as typed (its number and unit), to show it again after a refusal. */
function typedDuration(form: FormBody, name: DurationField, saved: number): DurationValue {
  // Without a unit (a client posting the API's milliseconds), the number is in ms, as formDuration reads it.
  const unit = form[`${name}.unit`] ?? 'ms';
  if (form[name] === undefined || !DURATION_UNITS.some((u) => u.unit === unit)) return durationOf(saved);
  return { value: form[name], unit: unit as DurationUnit };
}

/** The settings as typed, to show them again beside the reason they were refused. */
function typedValues(form: FormBody, row: ProjectRow): SettingsValues {
  return {
    maxRetries: form['retryPolicy.maxRetries'] ?? '',
    initialDelay: typedDuration(form, 'retryPolicy.initialDelayMs', row.retryInitialDelayMs),
    factor: form['retryPolicy.factor'] ?? '',
    maxDelay: typedDuration(form, 'retryPolicy.maxDelayMs', row.retryMaxDelayMs),
    deliveryTimeout: typedDuration(form, 'deliveryTimeoutMs', row.deliveryTimeoutMs),
    deliveryConcurrency: form.deliveryConcurrency ?? '',
    deliveryRatePerSecond: form.deliveryRatePerSecond ?? '',
    acceptAny2xx: form.acceptAny2xx === 'true',
    asyncCompletion: form.asyncCompletion === 'true',
    asyncCompletionTimeout: typedDuration(form, 'asyncCompletionTimeoutMs', row.asyncCompletionTimeoutMs),
    holdOnFailure: form.holdOnFailure === 'true',
    stopOn: form['retryPolicy.stopOn'] ?? row.retryStopOn.join(', '),
    retentionDays: form.retentionDays ?? '',
    eventsUrl: form.eventsUrl ?? row.eventsUrl ?? '',
    eventsFormat: form.eventsFormat ?? row.eventsFormat,
  };
}

/** A duration field of the form in ms: its number times its unit. */
const formMs = (form: FormBody, name: DurationField) => formDuration(form[name], form[`${name}.unit`]);

function settingsPatch(form: FormBody): Record<string, unknown> {
  const maxRetries = (form['retryPolicy.maxRetries'] ?? '').trim();
  const retentionDays = (form.retentionDays ?? '').trim();
  const rate = (form.deliveryRatePerSecond ?? '').trim();
  return {
    retryPolicy: {
      maxRetries: maxRetries === '' ? null : formNumber(maxRetries),
      initialDelayMs: formMs(form, 'retryPolicy.initialDelayMs'),
      factor: formNumber(form['retryPolicy.factor']),
      maxDelayMs: formMs(form, 'retryPolicy.maxDelayMs'),
      // Statuses separated by commas or spaces; changes only when the form has the field.
      ...(form['retryPolicy.stopOn'] !== undefined && {
        stopOn: form['retryPolicy.stopOn'].split(/[\s,]+/).filter((code) => code !== '').map((code) => formNumber(code)),
      }),
    },
    deliveryTimeoutMs: formMs(form, 'deliveryTimeoutMs'),
    deliveryConcurrency: formNumber(form.deliveryConcurrency),
    // Empty: no limit.
    deliveryRatePerSecond: rate === '' ? null : formNumber(rate),
    // An unchecked checkbox sends nothing at all.
    acceptAny2xx: form.acceptAny2xx === 'true',
    asyncCompletion: form.asyncCompletion === 'true',
    holdOnFailure: form.holdOnFailure === 'true',
    // Changes only when the form has it (as the events fields below).
    ...(form.asyncCompletionTimeoutMs !== undefined && { asyncCompletionTimeoutMs: formMs(form, 'asyncCompletionTimeoutMs') }),
    retentionDays: retentionDays === '' ? null : formNumber(retentionDays),
    // The events fields change only when the form has them (an empty URL means none).
    ...(form.eventsUrl !== undefined && { eventsUrl: form.eventsUrl.trim() === '' ? null : form.eventsUrl.trim() }),
    ...(form.eventsFormat !== undefined && { eventsFormat: form.eventsFormat }),
  };
}

/**
 * The retry schedule a job gets when its dispatch does not say (SPEC section 4): of the policy
 * typed where its values read as numbers (a refused form), else of the saved one.
 */
function scheduleOf(row: ProjectRow, cap: number, typed: Record<string, unknown> | null): string {
  const policy = (typed?.retryPolicy ?? {}) as Record<string, unknown>;
  const number = (value: unknown, saved: number) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : saved);
  const asked = typed && 'maxRetries' in policy ? policy.maxRetries : row.retryMaxRetries;
  const readable = asked === null || (typeof asked === 'number' && Number.isInteger(asked) && asked >= 0);
  const chosen = readable ? (asked as number | null) : row.retryMaxRetries;
  const retries = chosen === null ? cap : Math.min(chosen, cap);
  const waits = retryWaits(
    {
      initialDelayMs: number(policy.initialDelayMs, row.retryInitialDelayMs),
      factor: Math.max(1, number(policy.factor, row.retryFactor)),
      maxDelayMs: number(policy.maxDelayMs, row.retryMaxDelayMs),
    },
    retries,
  );
  return retrySchedule(waits, `${retries} ${retries === 1 ? 'retry' : 'retries'}${chosen === null ? " (the plan's cap)" : ''}`);
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
    const [{ keys }, overview, health, busiestKeys] = await Promise.all([manage.listKeys(row.id), manage.overview(row.id), manage.health(row.id), manage.busiestKeys(row.id)]);
    const page = overviewPage(await pageContext(deps, request, team), { project: row, overview, health, keys, busiestKeys, publicUrl: deps.publicUrl, notice: noticeFrom(request) });
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

  /** A test delivery or a probe sent now, its result (or its refusal) shown on the webhook tab. */
  const sendNow = (send: (projectId: string) => ReturnType<typeof testDeliveries.send>) => async (request: FastifyRequest<ProjectParams>, reply: FastifyReply) => {
    const row = await project(request);
    const at = deps.clock.now();
    try {
      const result = await send(row.id);
      return sendPage(reply, await webhook(request, { testResult: { ...result, at } }));
    } catch (error) {
      const refused = formError(error);
      return sendPage(reply, await webhook(request, { error: refused }), refused.statusCode);
    }
  };
  app.post<ProjectParams>('/projects/:projectId/webhook/test', sendNow((projectId) => testDeliveries.send(projectId)));
  // "Probe now" on a held project's banner (SPEC section 13): a success ends the hold.
  app.post<ProjectParams>('/projects/:projectId/webhook/probe', sendNow((projectId) => testDeliveries.probe(projectId)));

  async function settings(
    request: FastifyRequest<ProjectParams>,
    extra: { values?: SettingsValues; typed?: Record<string, unknown>; error?: FormError; notice?: string | null },
  ) {
    const row = await project(request);
    const team = await access.requireTeam(signedIn(request).viewer, row.teamId);
    const cap = plans.planOf(team).maxRetriesCap;
    return settingsPage(await pageContext(deps, request, team), {
      project: row,
      values: extra.values ?? settingsValues(row),
      maxRetriesCap: cap,
      defaultRetentionDays: deps.services.retention.defaultRetentionDays,
      retrySchedule: scheduleOf(row, cap, extra.typed ?? null),
      ...(extra.error !== undefined && { error: extra.error }),
      ...(extra.notice !== undefined && { notice: extra.notice }),
    });
  }

  app.get<ProjectParams>('/projects/:projectId/settings', async (request, reply) => sendPage(reply, await settings(request, { notice: noticeFrom(request) })));

  // The retry schedule of the policy being typed, for the settings page's script.
  app.get<ProjectParams>('/projects/:projectId/settings/retry-schedule', async (request, reply) => {
    const row = await project(request);
    const team = await access.requireTeam(signedIn(request).viewer, row.teamId);
    const typed = settingsPatch(formFields(request.query));
    return sendPage(reply, html`${scheduleOf(row, plans.planOf(team).maxRetriesCap, typed)}`);
  });

  app.post<ProjectParams>('/projects/:projectId/settings', async (request, reply) => {
    const row = await project(request);
    const form = formFields(request.body);
    const patch = settingsPatch(form);
    try {
      await manage.updateProject(row.id, patch);
    } catch (error) {
      const refused = formError(error);
      // A duration is typed in a unit: its range is said in words, not in the API's milliseconds.
      const message = refused.field !== undefined && Object.hasOwn(DURATION_FIELDS, refused.field) ? durationRefusal(refused.field as DurationField) : refused.message;
      return sendPage(reply, await settings(request, { values: typedValues(form, row), typed: patch, error: { ...refused, message } }), refused.statusCode);
    }
    return redirectWithNotice(reply, `/projects/${row.id}/settings`, 'settings-saved');
  });
};
