import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services/services.js';
import * as s from '../schemas.js';
import { jobContextOf } from '../authentication.js';

const security = [{ apiKey: [] }];
const tags = ['schedules'];
const API = s.API_KEY_ERRORS;
const FIELDS = ['INVALID_PAYLOAD', 'INVALID_MAX_RETRIES', 'INVALID_CRON', 'INVALID_TIMEZONE'] as const;

type ScheduleParams = { Params: { scheduleId: string } };

/** /api/schedules (SPEC section 9), authenticated and rate limited as the job API (routes/jobs.ts). */
export const scheduleRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  const schedules = services.schedules;

  app.post(
    '/schedules',
    {
      schema: {
        summary: 'Create a recurring schedule',
        tags,
        security,
        body: s.scheduleBody,
        response: { 201: s.schedule, ...s.errors(...API, ...s.BODY_ERRORS, ...FIELDS, 'WEBHOOK_NOT_CONFIGURED') },
      },
    },
    async (request, reply) => reply.code(201).send(await schedules.create(jobContextOf(request), request.body)),
  );

  app.get(
    '/schedules',
    {
      schema: {
        summary: "List the project's schedules, newest first",
        tags,
        security,
        querystring: { type: 'object', properties: { limit: { type: 'string', description: '1..100, default 50' }, cursor: { type: 'string' } } },
        response: {
          200: { type: 'object', required: ['schedules', 'nextCursor'], properties: { schedules: { type: 'array', items: s.schedule }, nextCursor: s.nextCursor } },
          ...s.errors(...API, 'INVALID_REQUEST'),
        },
      },
    },
    async (request) => schedules.list(jobContextOf(request), request.query as Record<string, unknown>),
  );

  app.get(
    '/schedules/preview',
    {
      schema: {
        summary: 'The next fire instants of a cron expression in a zone',
        description: 'count (1..100, default 5) instants strictly after from (default now), daylight-saving rules applied.',
        tags,
        security,
        querystring: {
          type: 'object',
          properties: { cron: { type: 'string' }, timezone: { type: 'string' }, from: { type: 'string' }, count: { type: 'string' } },
        },
        response: {
          200: { type: 'object', required: ['runs'], properties: { runs: { type: 'array', items: { type: 'string', format: 'date-time' } } } },
          ...s.errors(...API, 'INVALID_REQUEST', 'INVALID_CRON', 'INVALID_TIMEZONE'),
        },
      },
    },
    async (request) => schedules.preview(request.query as Record<string, unknown>),
  );

  app.get<ScheduleParams>(
    '/schedules/:scheduleId',
    { schema: { summary: 'A schedule', tags, security, params: s.scheduleIdParams, response: { 200: s.schedule, ...s.errors(...API, 'NOT_FOUND', 'SCHEDULE_NOT_FOUND') } } },
    async (request) => schedules.get(jobContextOf(request), request.params.scheduleId),
  );

  app.patch<ScheduleParams>(
    '/schedules/:scheduleId',
    {
      schema: {
        summary: 'Change a schedule (its next run is computed again from now; a resume keeps the fire it was waiting for)',
        tags,
        security,
        params: s.scheduleIdParams,
        body: s.scheduleBody,
        response: { 200: s.schedule, ...s.errors(...API, ...s.BODY_ERRORS, ...FIELDS, 'NOT_FOUND', 'SCHEDULE_NOT_FOUND') },
      },
    },
    async (request) => schedules.update(jobContextOf(request), request.params.scheduleId, request.body),
  );

  app.delete<ScheduleParams>(
    '/schedules/:scheduleId',
    {
      schema: {
        summary: 'Delete a schedule; its jobs still QUEUED are cancelled',
        tags,
        security,
        params: s.scheduleIdParams,
        response: { 200: s.schedule, ...s.errors(...API, ...s.BODY_ERRORS, 'NOT_FOUND', 'SCHEDULE_NOT_FOUND') },
      },
    },
    async (request) => schedules.delete(jobContextOf(request), request.params.scheduleId),
  );

  app.post<ScheduleParams>(
    '/schedules/:scheduleId/trigger',
    {
      schema: {
        summary: 'One extra job now, outside the cron rhythm',
        tags,
        security,
        params: s.scheduleIdParams,
        response: { 201: s.dispatchAnswer, ...s.errors(...API, ...s.BODY_ERRORS, 'NOT_FOUND', 'SCHEDULE_NOT_FOUND', 'WEBHOOK_NOT_CONFIGURED', 'QUOTA_EXCEEDED') },
      },
    },
    async (request, reply) => reply.code(201).send(await schedules.trigger(jobContextOf(request), request.params.scheduleId)),
  );
};
