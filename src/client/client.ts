/**
 * The typed client: `import { createClient } from 'punctual/client'`. Every route of /openapi.json
 * is a typed call (`client.GET('/api/jobs/{jobId}', …)`, openapi-fetch over the types generated
 * into api-types.ts), so a route added to the API is in the client once the types are generated
 * again. Over those calls, the resources a program uses most (jobs, schedules, reports) are methods
 * that answer the body or throw a PunctualApiError with the contract's code.
 */
import createFetchClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './api-types.js';

export type { paths } from './api-types.js';

type Method = 'get' | 'post' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M & keyof paths[P]]>;
type JsonContent<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;

/** A route's JSON request body. */
export type RequestBody<P extends keyof paths, M extends Method> = JsonContent<NonNullable<Operation<P, M> extends { requestBody?: infer Body } ? Body : never>>;
/** A route's query parameters. */
export type QueryOf<P extends keyof paths, M extends Method> = NonNullable<Operation<P, M> extends { parameters: { query?: infer Query } } ? Query : never>;
/** A route's answer for a status. */
export type ResponseBody<P extends keyof paths, M extends Method, Status extends number = 200> = JsonContent<
  Operation<P, M> extends { responses: infer Responses } ? (Status extends keyof Responses ? Responses[Status] : never) : never
>;

/** A job's status body (GET /api/jobs/{jobId}). */
export type Job = ResponseBody<'/api/jobs/{jobId}', 'get'>;
/** A dispatch's answer (201, or 200 for a replayed Idempotency-Key). */
export type DispatchAnswer = ResponseBody<'/api/jobs/dispatch', 'post', 201>;
export type DispatchBody = RequestBody<'/api/jobs/dispatch', 'post'>;
export type Attempt = ResponseBody<'/api/jobs/{jobId}/attempts', 'get'>['attempts'][number];
export type Schedule = ResponseBody<'/api/schedules/{scheduleId}', 'get'>;
export type ScheduleBody = RequestBody<'/api/schedules', 'post'>;
export type ReportBody = RequestBody<'/api/jobs/{jobId}/attempts/{attemptId}/result', 'post'>;

/** An error answer in the contract's shape (SPEC section 5), thrown by the resource methods. */
export class PunctualApiError extends Error {
  /** The contract's code: `JOB_NOT_QUEUED`, `RATE_LIMITED`, … (`HTTP_<status>` for an answer not in its shape). */
  readonly code: string;
  readonly status: number;
  /** The error's `data`: `message`, and `field`, `status`, `quota`… where the code has them. */
  readonly data: { message: string; field?: string } & Record<string, unknown>;
  /** Seconds to wait, from `Retry-After` (429, 503), else null. */
  readonly retryAfter: number | null;

  constructor(status: number, body: unknown, headers: Headers) {
    const shaped = typeof body === 'object' && body !== null && 'error' in body && 'data' in body ? (body as { error: string; data: PunctualApiError['data'] }) : null;
    const data = shaped?.data ?? { message: typeof body === 'string' && body ? body : `HTTP ${status}` };
    super(`${shaped?.error ?? `HTTP_${status}`}: ${data.message}`);
    this.name = 'PunctualApiError';
    this.code = shaped?.error ?? `HTTP_${status}`;
    this.status = status;
    this.data = data;
    const retryAfter = Number(headers.get('retry-after'));
    this.retryAfter = headers.has('retry-after') && Number.isFinite(retryAfter) ? retryAfter : null;
  }
}

/** The body of a successful call, or its error thrown as a PunctualApiError. */
async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new PunctualApiError(response.status, error, response.headers);
  return data as T;
}

export interface ClientOptions {
  /** Where Punctual answers, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** A project API key (`pk_…`), sent on /api/ routes. */
  apiKey?: string;
  /** The admin token (`PUNCTUAL_ADMIN_TOKEN` or the first start's `adm_…`), sent on /manage/v1 routes. */
  adminToken?: string;
  /** Another fetch (a test's, a proxy's); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
}

/**
 * The credentials each route needs, from the path it calls: the API key under /api/, the admin
 * token under /manage/. A request that carries its own Authorization (a report with its callback
 * token) keeps it.
 */
function credentials(options: ClientOptions): Middleware {
  return {
    onRequest({ request }) {
      if (request.headers.has('authorization')) return request;
      const path = new URL(request.url).pathname;
      const secret = path.startsWith('/api/') ? options.apiKey : path.startsWith('/manage/') ? options.adminToken : undefined;
      if (secret) request.headers.set('authorization', `Bearer ${secret}`);
      return request;
    },
  };
}

type Path<Id extends string> = { params: { path: Record<Id, string> } };
const path = <Id extends string>(name: Id, value: string): Path<Id> => ({ params: { path: { [name]: value } as Record<Id, string> } });

/** Creates a client of one Punctual service. */
export function createClient(options: ClientOptions) {
  const client: Client<paths> = createFetchClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), ...(options.fetch && { fetch: options.fetch }) });
  client.use(credentials(options));

  const jobs = {
    /** Queues a job (SPEC section 2); with `idempotencyKey`, a retried request creates nothing twice. */
    dispatch: (body: DispatchBody, opts: { idempotencyKey?: string } = {}) =>
      unwrap(client.POST('/api/jobs/dispatch', { body, headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {} })),
    /** Up to 100 jobs in one transaction: each item's answer or error, in request order. */
    dispatchBatch: (items: DispatchBody[], opts: { idempotencyKey?: string } = {}) =>
      unwrap(client.POST('/api/jobs/dispatch/batch', { body: { jobs: items }, headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {} })),
    get: (jobId: string) => unwrap(client.GET('/api/jobs/{jobId}', path('jobId', jobId))),
    /** One page, newest first; pass `nextCursor` back as `cursor` for the next. */
    list: (query: QueryOf<'/api/jobs', 'get'> = {}) => unwrap(client.GET('/api/jobs', { params: { query } })),
    cancel: (jobId: string) => unwrap(client.DELETE('/api/jobs/{jobId}', path('jobId', jobId))),
    /** `null` runs it at once. */
    reschedule: (jobId: string, scheduledFor: string | null) =>
      unwrap(client.PATCH('/api/jobs/{jobId}', { ...path('jobId', jobId), body: { scheduledFor } })),
    attempts: (jobId: string) => unwrap(client.GET('/api/jobs/{jobId}/attempts', path('jobId', jobId))),
    /** Queues a FAILED job again with a fresh retry budget. */
    retry: (jobId: string) => unwrap(client.POST('/api/jobs/{jobId}/retry', path('jobId', jobId))),
    /** Bulk replay of FAILED jobs, oldest failure first: `{ retried, hasMore }`. */
    retryFailed: (body: RequestBody<'/api/jobs/retry', 'post'> = { status: 'FAILED' }) => unwrap(client.POST('/api/jobs/retry', { body })),
    /**
     * Cancel, reschedule or retry every job a filter matches (SPEC section 14), oldest first, up to
     * `limit`: `{ matched, changed, hasMore }`; with `dryRun` nothing changes.
     */
    bulk: (body: RequestBody<'/api/jobs/bulk', 'post'>) => unwrap(client.POST('/api/jobs/bulk', { body })),
  };

  const schedules = {
    create: (body: ScheduleBody) => unwrap(client.POST('/api/schedules', { body })),
    list: (query: QueryOf<'/api/schedules', 'get'> = {}) => unwrap(client.GET('/api/schedules', { params: { query } })),
    get: (scheduleId: string) => unwrap(client.GET('/api/schedules/{scheduleId}', path('scheduleId', scheduleId))),
    update: (scheduleId: string, body: RequestBody<'/api/schedules/{scheduleId}', 'patch'>) =>
      unwrap(client.PATCH('/api/schedules/{scheduleId}', { ...path('scheduleId', scheduleId), body })),
    pause: (scheduleId: string) => unwrap(client.PATCH('/api/schedules/{scheduleId}', { ...path('scheduleId', scheduleId), body: { paused: true } })),
    resume: (scheduleId: string) => unwrap(client.PATCH('/api/schedules/{scheduleId}', { ...path('scheduleId', scheduleId), body: { paused: false } })),
    delete: (scheduleId: string) => unwrap(client.DELETE('/api/schedules/{scheduleId}', path('scheduleId', scheduleId))),
    /** One extra job now, outside the cron rhythm. */
    trigger: (scheduleId: string) => unwrap(client.POST('/api/schedules/{scheduleId}/trigger', path('scheduleId', scheduleId))),
    /** The next fire instants of an expression, before saving it. */
    preview: (query: QueryOf<'/api/schedules/preview', 'get'>) => unwrap(client.GET('/api/schedules/preview', { params: { query } })),
  };

  const reports = {
    /**
     * Reports an attempt accepted with 202 (async completion, SPEC section 11), with the delivery's
     * `callbackToken`, or with the client's API key when none is given.
     */
    report: (jobId: string, attemptId: string, body: ReportBody, opts: { callbackToken?: string } = {}) =>
      unwrap(
        client.POST('/api/jobs/{jobId}/attempts/{attemptId}/result', {
          params: { path: { jobId, attemptId } },
          body,
          headers: opts.callbackToken ? { authorization: `Bearer ${opts.callbackToken}` } : {},
        }),
      ),
  };

  return Object.assign(client, { jobs, schedules, reports });
}

export type PunctualClient = ReturnType<typeof createClient>;
