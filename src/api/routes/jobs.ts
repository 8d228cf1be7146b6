import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { Services } from '../../services/services.js';
import { readTraceContext, type TraceContext } from '../../tracing/trace-context.js';
import type { EnqueueSpan, Tracer } from '../../tracing/tracer.js';
import { BULK_DEFAULT_LIMIT, BULK_MAX_LIMIT } from '../../services/input/bulk-input.js';
import type { RenderedAnswer } from '../../services/jobs-service.js';
import { validateIdempotencyKey } from '../../services/input/validate-job-input.js';
import { REPORT_ERROR_MAX, REPORT_OUTCOMES } from '../../services/attempt-reports.js';
import { jobContextOf, reportAuthOf } from '../authentication.js';
import { BATCH_BODY_LIMIT } from '../body-limits.js';
import * as s from '../schemas.js';

const security = [{ apiKey: [] }];
const tags = ['jobs'];
const API = s.API_KEY_ERRORS;

function sendRendered(reply: FastifyReply, answer: RenderedAnswer): FastifyReply {
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(answer.statusCode).type('application/json').send(answer.body);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** An enqueue request's span, when span export is on. */
    enqueueSpan: EnqueueSpan | null;
  }
}

/**
 * With span export on, an enqueue route's span: begun once the request is authenticated (this
 * route hook runs after the global ones, so an unauthenticated request makes none) and ended with
 * whatever answer it gets. With export off, no hook at all.
 */
function enqueueTracing(tracer: Tracer | null): Pick<RouteShorthandOptions, 'onRequest' | 'onResponse'> {
  if (!tracer) return {};
  return {
    onRequest: async (request) => {
      request.enqueueSpan = tracer.startEnqueue(readTraceContext(request.headers), request.routeOptions.url ?? request.url);
    },
    onResponse: async (request, reply) => {
      request.enqueueSpan?.end({ statusCode: reply.statusCode, projectId: request.principal?.project.id ?? null });
    },
  };
}

/**
 * The trace the enqueued jobs continue (SPEC section 4): the enqueue span's when export is on,
 * else the request's own traceparent, if it sent a valid one.
 */
const enqueueTrace = (request: FastifyRequest): TraceContext | null => request.enqueueSpan?.context ?? readTraceContext(request.headers);

/**
 * The dispatch routes' bodies are checked by the jobs service alone (validate-job-input.ts, item by
 * item in a batch); their schemas only describe them, in /openapi.json. So a single dispatch and a
 * batch item answer one mistake in the same words, and a near miss (`{"data": {…}}` meant as
 * payload) is named as such before a schema could call payload missing.
 */
const checkedByTheService = { validatorCompiler: () => () => true } as const;

type JobParams = { Params: { jobId: string } };
type AttemptParams = { Params: { jobId: string; attemptId: string } };

export const jobRoutes = (tracer: Tracer | null): FastifyPluginAsync<{ services: Services }> => async (app, { services }) => {
  const { jobs, jobCreation } = services;
  app.decorateRequest('enqueueSpan', null);
  const traced = enqueueTracing(tracer);
  const traceDescription =
    'A W3C `traceparent` header (and its `tracestate`) is continued onto every delivery of the job, each attempt with a span id of its own; an invalid one is ignored.';

  app.post(
    '/jobs/dispatch',
    {
      ...traced,
      ...checkedByTheService,
      schema: {
        summary: 'Queue a job',
        description: traceDescription,
        tags,
        security,
        body: s.dispatchBody,
        response: {
          201: s.dispatchAnswer,
          200: { ...s.dispatchAnswer, description: 'The first answer again, for a replayed Idempotency-Key (header Idempotent-Replayed: true); or, for a dispatch its debounceKey\'s job absorbed, that job\'s answer with debounced' },
          ...s.errors(...API, ...s.BODY_ERRORS, 'INVALID_PAYLOAD', 'INVALID_SCHEDULE', 'INVALID_MAX_RETRIES', 'IDEMPOTENCY_KEY_REUSED', 'WEBHOOK_NOT_CONFIGURED', 'QUOTA_EXCEEDED'),
        },
      },
    },
    async (request, reply) =>
      sendRendered(
        reply,
        await jobCreation.enqueue(jobContextOf(request), request.body, validateIdempotencyKey(request.headers['idempotency-key']), enqueueTrace(request)),
      ),
  );

  app.post(
    '/jobs/dispatch/batch',
    {
      bodyLimit: BATCH_BODY_LIMIT,
      ...traced,
      ...checkedByTheService,
      schema: {
        summary: 'Queue up to 100 jobs in one transaction',
        description: `Items are validated one by one; the answer lists, in request order, each job or its error. ${traceDescription}`,
        tags,
        security,
        body: { type: 'object', required: ['jobs'], properties: { jobs: { type: 'array', items: {} } } },
        response: { 200: s.batchAnswer, ...s.errors(...API, ...s.BODY_ERRORS, 'IDEMPOTENCY_KEY_REUSED', 'WEBHOOK_NOT_CONFIGURED') },
      },
    },
    async (request, reply) =>
      sendRendered(
        reply,
        await jobCreation.enqueueBatch(jobContextOf(request), request.body, validateIdempotencyKey(request.headers['idempotency-key']), enqueueTrace(request)),
      ),
  );

  app.get(
    '/jobs',
    {
      schema: {
        summary: "List the project's jobs, newest first",
        tags,
        security,
        querystring: {
          type: 'object',
          properties: {
            status: { type: 'string' },
            tag: {
              anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
              description: '<key>:<value> (the key ends at the first colon); repeatable: a job matches when it has every tag given',
            },
            scheduleId: { type: 'string' },
            concurrencyKey: { type: 'string', description: 'Only the jobs of this concurrencyKey' },
            createdAfter: { type: 'string', description: 'timestamp, inclusive' },
            createdBefore: { type: 'string', description: 'timestamp, exclusive' },
            dueAfter: { type: 'string', description: "timestamp, inclusive, against a QUEUED job's nextAttemptAt (other jobs do not match)" },
            dueBefore: { type: 'string', description: 'timestamp, exclusive' },
            limit: { type: 'string', description: '1..100, default 50' },
            cursor: { type: 'string' },
          },
        },
        response: { 200: s.jobList, ...s.errors(...API, 'INVALID_REQUEST') },
      },
    },
    async (request) => jobs.list(jobContextOf(request), request.query as Record<string, unknown>),
  );

  app.post(
    '/jobs/retry',
    {
      schema: {
        summary: 'Bulk replay: queue FAILED jobs again, oldest failure first',
        description: 'The same action as POST /api/jobs/bulk with "retry", over a window of failure times.',
        tags,
        security,
        body: {
          type: 'object',
          properties: {
            status: { type: 'string', description: 'FAILED, the only status replayed' },
            failedAfter: { type: ['string', 'null'], description: 'timestamp, inclusive' },
            failedBefore: { type: ['string', 'null'], description: 'timestamp, exclusive' },
            limit: { type: 'integer', minimum: 1, maximum: BULK_MAX_LIMIT, description: `default ${BULK_DEFAULT_LIMIT}` },
          },
        },
        response: {
          200: { type: 'object', required: ['retried', 'hasMore'], properties: { retried: { type: 'integer' }, hasMore: { type: 'boolean' } } },
          ...s.errors(...API, ...s.BODY_ERRORS),
        },
      },
    },
    async (request) => services.bulk.retryFailed(jobContextOf(request), request.body),
  );

  app.post(
    '/jobs/bulk',
    {
      schema: {
        summary: 'Cancel, reschedule or retry every job a filter matches',
        description:
          'cancel and reschedule act on the matching QUEUED jobs, retry on the FAILED ones, oldest first, at most `limit` per request ' +
          '(`hasMore` says whether more match: send the same request again). Each job is decided against a concurrent claim: once the ' +
          'answer is sent, no job it cancelled is ever delivered; a job that left its state meanwhile is matched, not changed. ' +
          'With dryRun, nothing changes and matched says how many would be.',
        tags,
        security,
        body: s.bulkBody,
        response: { 200: s.bulkAnswer, ...s.errors(...API, ...s.BODY_ERRORS, 'INVALID_SCHEDULE') },
      },
    },
    async (request) => services.bulk.bulk(jobContextOf(request), request.body),
  );

  app.get<JobParams>(
    '/jobs/:jobId',
    { schema: { summary: "A job's status", tags, security, params: s.jobIdParams, response: { 200: s.jobStatus, ...s.errors(...API, 'NOT_FOUND') } } },
    async (request) => jobs.get(jobContextOf(request), request.params.jobId),
  );

  app.delete<JobParams>(
    '/jobs/:jobId',
    {
      schema: {
        summary: 'Cancel a QUEUED job',
        tags,
        security,
        params: s.jobIdParams,
        response: { 200: s.jobStatusChange('CANCELLED'), ...s.errors(...API, ...s.BODY_ERRORS, 'NOT_FOUND', 'JOB_NOT_QUEUED') },
      },
    },
    async (request) => jobs.cancel(jobContextOf(request), request.params.jobId),
  );

  app.patch<JobParams>(
    '/jobs/:jobId',
    {
      schema: {
        summary: 'Reschedule a QUEUED job',
        tags,
        security,
        params: s.jobIdParams,
        body: { type: 'object', properties: { scheduledFor: s.dispatchBody.properties.scheduledFor, scheduleFor: s.dispatchBody.properties.scheduleFor } },
        response: {
          200: s.rescheduleAnswer,
          ...s.errors(...API, ...s.BODY_ERRORS, 'INVALID_SCHEDULE', 'NOT_FOUND', 'JOB_NOT_QUEUED'),
        },
      },
    },
    async (request) => jobs.reschedule(jobContextOf(request), request.params.jobId, request.body),
  );

  app.get<JobParams>(
    '/jobs/:jobId/attempts',
    {
      schema: {
        summary: "A job's delivery attempts, oldest first",
        tags,
        security,
        params: s.jobIdParams,
        response: { 200: s.attemptList, ...s.errors(...API, 'NOT_FOUND') },
      },
    },
    async (request) => jobs.attempts(jobContextOf(request), request.params.jobId),
  );

  app.post<AttemptParams>(
    '/jobs/:jobId/attempts/:attemptId/result',
    {
      config: { acceptsCallbackToken: true },
      schema: {
        summary: 'Report the result of an attempt accepted with 202 (async completion)',
        description:
          'Authenticated by the callbackToken the delivery carried ("Authorization: Bearer pcb_…"), or by an API key of the project. ' +
          '"running" extends the deadline by asyncCompletionTimeoutMs from now.',
        tags,
        security: [{ apiKey: [] }, { callbackToken: [] }],
        params: {
          type: 'object',
          properties: { jobId: { type: 'string' }, attemptId: { type: 'string' } },
          required: ['jobId', 'attemptId'],
        },
        body: {
          type: 'object',
          properties: {
            outcome: { type: 'string', enum: [...REPORT_OUTCOMES] },
            error: { type: ['string', 'null'], maxLength: REPORT_ERROR_MAX, description: 'with "failure" only' },
          },
        },
        response: { 200: s.jobStatus, ...s.errors(...API, ...s.BODY_ERRORS, 'NOT_FOUND', 'ATTEMPT_NOT_PENDING') },
      },
    },
    async (request) => {
      return services.reports.report(reportAuthOf(request), request.params.jobId, request.params.attemptId, request.body);
    },
  );

  app.post<JobParams>(
    '/jobs/:jobId/retry',
    {
      schema: {
        summary: 'Queue a FAILED job again with a fresh retry budget',
        tags,
        security,
        params: s.jobIdParams,
        response: { 200: s.jobStatusChange('QUEUED'), ...s.errors(...API, ...s.BODY_ERRORS, 'NOT_FOUND', 'JOB_NOT_FAILED') },
      },
    },
    async (request) => jobs.retry(jobContextOf(request), request.params.jobId),
  );
};
