import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { FieldSet } from '../../services/input/known-fields.js';
import { refuseUnknownFields } from '../../services/input/known-fields.js';
import { KEY_FIELDS, PROJECT_FIELDS, TEAM_FIELDS } from '../../services/input/validate-manage-input.js';
import { isPlainObject } from '../../services/input/validate-job-input.js';
import { ASYNC_COMPLETION_TIMEOUT_RANGE, DELIVERY_CONCURRENCY_RANGE, DELIVERY_TIMEOUT_RANGE, KEY_CONCURRENCY_RANGE } from '../../services/project-settings.js';
import type { Services } from '../../services/services.js';
import { viewerOf } from '../authentication.js';
import * as s from '../schemas.js';
import { JOB_STATUSES } from '../../store/store.js';
import { RETENTION_DAYS_RANGE } from '../../retention.js';

const security: Record<string, string[]>[] = [{ adminToken: [] }, { dashboardSession: [] }];
const MANAGE = s.MANAGE_ERRORS;

const idParams = (name: string) => ({ type: 'object', properties: { [name]: { type: 'string' } }, required: [name] }) as const;
const secretsAnswer = {
  type: 'object',
  required: ['webhookSecrets'],
  properties: {
    webhookSecrets: {
      type: 'array',
      items: {
        type: 'object',
        required: ['webhookSecret', 'createdAt', 'expiresAt'],
        properties: { webhookSecret: { type: 'string' }, createdAt: { type: 'string' }, expiresAt: { type: ['string', 'null'] } },
      },
    },
  },
} as const;
const usageAnswer = {
  type: 'object',
  required: ['plan', 'period', 'jobsCreated', 'quota', 'rateLimit', 'daily'],
  properties: {
    plan: { type: 'string' },
    period: { type: 'object', required: ['start', 'end'], properties: { start: { type: 'string' }, end: { type: 'string', description: 'exclusive: the first instant of next month, UTC' } } },
    jobsCreated: { type: 'integer' },
    quota: { type: ['integer', 'null'] },
    rateLimit: { type: ['object', 'null'], required: ['requestsPerSecond', 'burst'], properties: { requestsPerSecond: { type: 'number' }, burst: { type: 'number' } } },
    daily: { type: 'array', items: { type: 'object', required: ['date', 'jobsCreated'], properties: { date: { type: 'string' }, jobsCreated: { type: 'integer' } } } },
  },
} as const;

const count = { type: 'integer' } as const;
const window = { windowStart: { type: 'string' }, windowEnd: { type: 'string', description: 'exclusive: the start of the minute after the current one' } } as const;
const overviewAnswer = {
  type: 'object',
  required: ['at', 'health', 'jobsByStatus', 'jobCountLimit', 'deliveries', 'lateness', 'recentFailures'],
  properties: {
    at: { type: 'string' },
    health: s.health,
    jobsByStatus: {
      type: 'object',
      description: 'each counted up to jobCountLimit; a count above it is answered as jobCountLimit + 1',
      required: [...JOB_STATUSES],
      properties: Object.fromEntries(JOB_STATUSES.map((status) => [status, count])),
    },
    jobCountLimit: count,
    deliveries: {
      type: 'object',
      description: 'attempts that finished in the window (the 1,440 minutes up to the current one), whatever their outcome, and those that did not succeed',
      required: ['windowStart', 'windowEnd', 'attempts', 'failedAttempts', 'perMinute'],
      properties: {
        ...window,
        attempts: count,
        failedAttempts: count,
        perMinute: {
          type: 'array',
          description: 'minutes with at least one attempt, oldest first',
          items: { type: 'object', required: ['minute', 'attempts', 'failedAttempts'], properties: { minute: { type: 'string' }, attempts: count, failedAttempts: count } },
        },
      },
    },
    lateness: {
      type: 'object',
      description: "first attempts started in the window (60 minutes): their start minus the job's due time; percentiles are upper bounds, at most a fifth above",
      required: ['windowStart', 'windowEnd', 'firstAttempts', 'p50Ms', 'p99Ms'],
      properties: { ...window, firstAttempts: count, p50Ms: { type: ['integer', 'null'] }, p99Ms: { type: ['integer', 'null'] } },
    },
    recentFailures: {
      type: 'array',
      description: 'the latest attempts of the 24-hour window that did not succeed, newest first, at most 10',
      items: {
        type: 'object',
        required: ['jobId', 'attemptId', 'attemptNumber', 'finishedAt', 'outcome', 'statusCode', 'error'],
        properties: {
          jobId: { type: 'string' },
          attemptId: { type: 'string' },
          attemptNumber: count,
          finishedAt: { type: 'string' },
          outcome: { type: 'string' },
          statusCode: { type: ['integer', 'null'] },
          error: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;

/**
 * A project's settings, as its creation and its update take them (SPEC section 7: the same
 * fields). The bodies are strict: the manage service refuses an unknown field, naming it
 * (services/input/validate-manage-input.ts lists the fields).
 */
const projectSettings = {
  name: { type: 'string' },
  webhookUrl: { type: ['string', 'null'] },
  retryPolicy: s.retryPolicy,
  deliveryTimeoutMs: { type: 'integer', minimum: DELIVERY_TIMEOUT_RANGE[0], maximum: DELIVERY_TIMEOUT_RANGE[1] },
  deliveryConcurrency: { type: 'integer', minimum: DELIVERY_CONCURRENCY_RANGE[0], maximum: DELIVERY_CONCURRENCY_RANGE[1] },
  acceptAny2xx: { type: 'boolean' },
  retentionDays: { type: ['integer', 'null'], minimum: RETENTION_DAYS_RANGE[0], maximum: RETENTION_DAYS_RANGE[1] },
  paused: { type: 'boolean' },
  deliveryRatePerSecond: { type: ['number', 'null'] },
  asyncCompletion: { type: 'boolean' },
  asyncCompletionTimeoutMs: { type: 'integer', minimum: ASYNC_COMPLETION_TIMEOUT_RANGE[0], maximum: ASYNC_COMPLETION_TIMEOUT_RANGE[1] },
  keyConcurrency: { type: 'integer', minimum: KEY_CONCURRENCY_RANGE[0], maximum: KEY_CONCURRENCY_RANGE[1] },
  eventsUrl: { type: ['string', 'null'] },
  eventsFormat: { type: 'string' },
  holdOnFailure: { type: 'boolean' },
  eventTypes: { type: ['array', 'null'], items: { type: 'string' } },
} as const;

/** The answer of a test delivery and of a probe. */
const testDeliveryAnswer = {
  type: 'object',
  required: ['outcome', 'statusCode', 'durationMs', 'responseBody', 'error'],
  properties: {
    outcome: { type: 'string', enum: ['success', 'http_error', 'timeout', 'network_error'] },
    statusCode: { type: ['integer', 'null'] },
    durationMs: { type: 'integer' },
    responseBody: { type: ['string', 'null'] },
    error: { type: ['string', 'null'] },
  },
} as const;

type TeamParams = { Params: { teamId: string } };
type ProjectParams = { Params: { projectId: string } };
type KeyParams = { Params: { keyId: string } };

export const manageRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const manage = services.manage;
  const access = services.access;
  // Another team's team, project or key answers 404 exactly as an absent one, before any handler runs.
  app.addHook('preHandler', async (request) => {
    const viewer = viewerOf(request);
    if (viewer.kind === 'admin') return;
    const params = (request.params ?? {}) as Record<string, string | undefined>;
    if (params.teamId !== undefined) await access.requireTeam(viewer, params.teamId);
    if (params.projectId !== undefined) await access.requireProject(viewer, params.projectId);
    if (params.keyId !== undefined) await access.requireKey(viewer, params.keyId);
  });
  const opts = (summary: string, extra: Record<string, unknown>, more: object = {}) => ({ ...more, schema: { summary, tags: ['manage'], security, ...extra } });
  /**
   * A strict body's unknown fields are refused before its schema is checked, so `{"nmae": …}` is
   * named as the near miss it is rather than as "name is required" (the service checks them again
   * for the CLI and the dashboard).
   */
  const strict = (fields: FieldSet, where: string) => ({
    preValidation: async (request: FastifyRequest) => {
      if (isPlainObject(request.body)) refuseUnknownFields(request.body, fields, where);
    },
  });

  app.post(
    '/v1/teams',
    opts('Create a team', {
      body: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, plan: { type: 'string' } } },
      response: { 201: s.team, ...s.errors(...MANAGE, ...s.BODY_ERRORS) },
    }, strict(TEAM_FIELDS, 'a team')),
    async (request, reply) => {
      access.requireOperator(viewerOf(request), 'Creating a team');
      return reply.code(201).send(await manage.createTeam(request.body));
    },
  );
  app.get<TeamParams>(
    '/v1/teams/:teamId',
    opts('A team', { params: idParams('teamId'), response: { 200: s.team, ...s.errors(...MANAGE, 'NOT_FOUND') } }),
    async (request) => manage.getTeam(request.params.teamId),
  );
  app.patch<TeamParams>(
    '/v1/teams/:teamId',
    opts("Rename a team or change its plan (effective at once)", {
      params: idParams('teamId'),
      body: { type: 'object', properties: { name: { type: 'string' }, plan: { type: 'string' } } },
      response: { 200: s.team, ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND') },
    }, strict(TEAM_FIELDS, 'a team')),
    async (request) => {
      if (request.body && typeof request.body === 'object' && 'plan' in request.body) access.requireOperator(viewerOf(request), "Changing a team's plan");
      return manage.updateTeam(request.params.teamId, request.body);
    },
  );
  app.get<TeamParams>(
    '/v1/teams/:teamId/projects',
    opts("A team's projects", {
      params: idParams('teamId'),
      response: { 200: { type: 'object', required: ['projects'], properties: { projects: { type: 'array', items: s.project } } }, ...s.errors(...MANAGE, 'NOT_FOUND') },
    }),
    async (request) => manage.listProjects(request.params.teamId),
  );
  app.post<TeamParams>(
    '/v1/teams/:teamId/projects',
    opts('Create a project, with any of the settings an update takes; its webhook secret is in the answer', {
      params: idParams('teamId'),
      body: { type: 'object', required: ['name'], properties: projectSettings },
      response: { 201: s.createdProject, ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'INVALID_WEBHOOK_URL', 'NOT_FOUND') },
    }, strict(PROJECT_FIELDS, 'a project')),
    async (request, reply) => reply.code(201).send(await manage.createProject(request.params.teamId, request.body)),
  );
  app.get<TeamParams>(
    '/v1/teams/:teamId/usage',
    opts("This month's usage against the plan", { params: idParams('teamId'), response: { 200: usageAnswer, ...s.errors(...MANAGE, 'NOT_FOUND') } }),
    async (request) => manage.usage(request.params.teamId),
  );

  app.get<ProjectParams>(
    '/v1/projects/:projectId',
    opts('A project (without its secret)', { params: idParams('projectId'), response: { 200: s.project, ...s.errors(...MANAGE, 'NOT_FOUND') } }),
    async (request) => manage.getProject(request.params.projectId),
  );
  app.patch<ProjectParams>(
    '/v1/projects/:projectId',
    opts("Change a project's webhook URL, retry policy, timeout, concurrency, accepted statuses, retention, pause, events, rate or async completion", {
      params: idParams('projectId'),
      body: { type: 'object', properties: projectSettings },
      response: { 200: s.project, ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'INVALID_WEBHOOK_URL', 'NOT_FOUND') },
    }, strict(PROJECT_FIELDS, 'a project')),
    async (request) => manage.updateProject(request.params.projectId, request.body),
  );
  app.get<ProjectParams>(
    '/v1/projects/:projectId/keys',
    opts("A project's API keys (never the key itself)", {
      params: idParams('projectId'),
      response: { 200: { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: s.apiKey } } }, ...s.errors(...MANAGE, 'NOT_FOUND') },
    }),
    async (request) => manage.listKeys(request.params.projectId),
  );
  app.post<ProjectParams>(
    '/v1/projects/:projectId/keys',
    opts('Create an API key; the key is shown once, here', {
      params: idParams('projectId'),
      body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      response: {
        201: {
          type: 'object',
          required: ['keyId', 'name', 'key', 'createdAt'],
          properties: { keyId: { type: 'string' }, name: { type: 'string' }, key: { type: 'string', description: 'pk_…: shown this once' }, createdAt: { type: 'string' } },
        },
        ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND'),
      },
    }, strict(KEY_FIELDS, 'a key')),
    async (request, reply) => reply.code(201).send(await manage.createKey(request.params.projectId, request.body)),
  );
  app.get<ProjectParams>(
    '/v1/projects/:projectId/webhook-secrets',
    opts('The webhook secrets signing now, newest first', { params: idParams('projectId'), response: { 200: secretsAnswer, ...s.errors(...MANAGE, 'NOT_FOUND') } }),
    async (request) => manage.listWebhookSecrets(request.params.projectId),
  );
  app.post<ProjectParams>(
    '/v1/projects/:projectId/webhook-secret/rotate',
    opts('Rotate the webhook secret; the previous one keeps signing for 24 hours', {
      params: idParams('projectId'),
      response: { 200: { type: 'object', required: ['webhookSecret'], properties: { webhookSecret: { type: 'string' } } }, ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND') },
    }),
    async (request) => manage.rotateWebhookSecret(request.params.projectId),
  );
  app.post<ProjectParams>(
    '/v1/projects/:projectId/test-delivery',
    opts('Send a real, signed sample delivery (payload {"test": true}) and report the answer; no job is created', {
      params: idParams('projectId'),
      response: {
        200: testDeliveryAnswer,
        ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED'),
      },
    }),
    async (request) => services.testDeliveries.send(request.params.projectId),
  );
  app.post<ProjectParams>(
    '/v1/projects/:projectId/probe',
    opts('Probe the receiver now (SPEC section 13): a test delivery with "probe": true; a success ends a hold and the waiting jobs go out', {
      params: idParams('projectId'),
      response: {
        200: testDeliveryAnswer,
        ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED'),
      },
    }),
    async (request) => services.testDeliveries.probe(request.params.projectId),
  );
  app.get<ProjectParams>(
    '/v1/projects/:projectId/events',
    opts("The project's recent events (SPEC section 10) with their delivery state, newest first", {
      params: idParams('projectId'),
      querystring: {
        type: 'object',
        properties: { limit: { type: 'string', description: '1..100, default 50' }, cursor: { type: 'string' } },
      },
      response: {
        200: { type: 'object', required: ['events', 'nextCursor'], properties: { events: { type: 'array', items: s.event }, nextCursor: s.nextCursor } },
        ...s.errors(...MANAGE, 'INVALID_REQUEST', 'NOT_FOUND'),
      },
    }),
    async (request) => manage.listEvents(request.params.projectId, request.query as Record<string, unknown>),
  );
  app.get<ProjectParams>(
    '/v1/projects/:projectId/overview',
    opts("The project's overview, as the dashboard's first tab shows it: jobs by status now, attempts finished and failed per minute over 24 hours, first attempts' lateness over the last hour, the latest failed attempts", {
      params: idParams('projectId'),
      response: { 200: overviewAnswer, ...s.errors(...MANAGE, 'NOT_FOUND') },
    }),
    async (request) => manage.getOverview(request.params.projectId),
  );
  app.delete<KeyParams>(
    '/v1/keys/:keyId',
    opts('Revoke an API key', {
      params: idParams('keyId'),
      response: { 200: { type: 'object', required: ['keyId', 'revokedAt'], properties: { keyId: { type: 'string' }, revokedAt: { type: 'string' } } }, ...s.errors(...MANAGE, ...s.BODY_ERRORS, 'NOT_FOUND') },
    }),
    async (request) => manage.revokeKey(request.params.keyId),
  );
};
