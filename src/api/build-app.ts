import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { writeSync } from 'node:fs';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { pino } from 'pino';
import { randomBase62 } from '../crypto/random-ids.js';
import type { Clock } from '../clock.js';
import type { Config, LogFormat, TrustProxy } from '../config.js';
import { InvalidRequestError, NotFoundError, UnavailableError } from '../errors.js';
import { SESSION_COOKIE } from '../services/auth/session-service.js';
import type { Metrics } from '../metrics.js';
import type { Services } from '../services/services.js';
import type { Store } from '../store/store.js';
import type { Tracer } from '../tracing/tracer.js';
import { fromFrameworkError, installErrorHandler, sendError } from './error-handler.js';
import { installJsonBodyParser } from './json-body.js';
import { BODY_LIMIT } from './body-limits.js';
import { devReceiverRoutes } from './routes/dev-receiver.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { jobRoutes } from './routes/jobs.js';
import { scheduleRoutes } from './routes/schedules.js';
import { manageRoutes } from './routes/manage.js';
import { ACCESS_PREFIX, apiScope, checkRouteAccess, manageScope, type RouteEntry } from './authentication.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** When the request arrived, by the application clock (the 366-day limit counts from here). */
    receivedAt: number;
  }
}

export interface AppDeps {
  config: Pick<Config, 'devReceiver' | 'logLevel' | 'logFormat' | 'publicUrl' | 'trustProxy' | 'requestTimeoutMs' | 'maxConnections'>;
  store: Store;
  clock: Clock;
  services: Services;
  metrics: Metrics;
  /** Span export (src/tracing/); absent or null: off. */
  tracer?: Tracer | null;
  logger?: FastifyServerOptions['logger'];
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Request ids: this process's random prefix and a counter, unique across instances and restarts
 * without a random UUID per request.
 */
function requestIds(): () => string {
  const prefix = randomBase62(8);
  let next = 0;
  return () => `${prefix}-${(next++).toString(36)}`;
}

/**
 * What a person at a terminal reads (LOG_FORMAT=pretty): pino-pretty in pino's transport thread,
 * so the event loop only writes the JSON line it writes anyway. A request line reads
 * `request POST /api/jobs/dispatch → 201 1.2 ms (reqId)`; other fields follow on lines of their own.
 */
const PRETTY_OPTIONS = {
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,reqId,method,url,statusCode,ms',
  messageFormat: '{msg}{if method} {method} {url} → {statusCode} {ms} ms{end}{if reqId} ({reqId}){end}',
  singleLine: false,
};

/** Log lines wait in memory until this much has gathered (in characters), or LOG_FLUSH_MS has passed. */
const LOG_BLOCK_CHARS = 64 * 1024;
const LOG_FLUSH_MS = 100;

/** What the JSON loggers still hold, written synchronously as the process exits (one listener for them all). */
const exitWrites = new Set<() => void>();
function writeAtExit(write: () => void): void {
  if (exitWrites.size === 0) process.once('exit', () => exitWrites.forEach((each) => each()));
  exitWrites.add(write);
}

/** A logger's options, and what its app's close lets go of. */
interface DefaultLogger {
  options: FastifyServerOptions['logger'];
  close(): void;
}

/**
 * JSON lines (the default off a terminal) are written to stdout asynchronously and in blocks of
 * about 64 KB: lines are gathered in an array and joined once a block is full or LOG_FLUSH_MS has
 * passed. Each write hands the block to a libuv thread, and waking a thread cost the event loop
 * 25-100 µs on this project's 2-vCPU machines (a write per 4 KB was 2 % of the main thread at 6,000
 * requests a second); sonic-boom's own buffer appends each line to one string and measures it
 * again, a copy of the buffer per line. Lines reach stdout within LOG_FLUSH_MS; what is gathered
 * is written when the process exits, and a kill -9 can lose the last lines, never a job. When the
 * app closes, its flush timer stops, what is gathered goes to stdout, and the few lines that follow
 * (a shutdown's) go one by one, in order behind it. The exit hook stays with the destination: a
 * process that exits right after (serve) still writes what sonic-boom holds.
 */
function defaultLogger(level: string, format: LogFormat): DefaultLogger {
  // Credentials never reach the logs.
  const redact = ['req.headers.authorization', 'req.headers.cookie'];
  if (format === 'pretty') return { options: { level, redact, transport: { target: 'pino-pretty', options: PRETTY_OPTIONS } }, close: () => {} };
  const destination = pino.destination({ dest: 1, sync: false });
  let gathered: string[] = [];
  let gatheredChars = 0;
  let closed = false;
  const writeGathered = () => {
    if (gathered.length === 0) return;
    const block = gathered.join('');
    gathered = [];
    gatheredChars = 0;
    try {
      destination.write(block);
    } catch {
      // Ended already (the process is exiting).
    }
  };
  const flushTimer = setInterval(writeGathered, LOG_FLUSH_MS);
  flushTimer.unref();
  writeAtExit(() => {
    // Synchronously, older lines first: an asynchronous write begun now would not happen before the
    // process ends (a block already being written by libuv's thread pool is left to finish).
    try {
      destination.flushSync();
      if (gathered.length > 0) writeSync(1, gathered.join(''));
    } catch {
      // Nothing more can be written.
    }
  });
  const stream = {
    write(line: string) {
      gathered.push(line);
      gatheredChars += line.length;
      if (closed || gatheredChars >= LOG_BLOCK_CHARS) writeGathered();
      return true;
    },
  };
  return {
    options: { level, redact, stream },
    close: () => {
      closed = true;
      clearInterval(flushTimer);
      writeGathered();
    },
  };
}

/**
 * PUNCTUAL_TRUST_PROXY as Fastify's trustProxy. Fastify 5 ignores a number (it trusts no hop
 * then, because a hop count believes whatever peer connects), so a hop count is given as the
 * function proxy-addr would build from it: the nearest N hops, the socket's peer first.
 */
function fastifyTrustProxy(trust: TrustProxy): FastifyServerOptions['trustProxy'] {
  if (typeof trust !== 'number') return trust;
  return (_address: string, hop: number) => hop < trust;
}

/** What Node's HTTP parser refused, answered in the contract's shape: its status, reason and message. */
function clientErrorAnswer(code: string | undefined, requestTimeoutMs: number): [number, string, string] {
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'Request Header Fields Too Large', 'Request headers are too large'];
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'Request Timeout', `The request did not arrive in full within ${requestTimeoutMs / 1000} s`];
  return [400, 'Bad Request', 'Malformed HTTP request'];
}

export interface App extends FastifyInstance {
  /** Refuse new requests with 503 while in-flight ones finish (graceful shutdown). */
  startDraining(): void;
  /** Every registered route with the access its scope gives it, filled in once the app is ready. */
  routeTable: readonly RouteEntry[];
}

export async function buildApp(deps: AppDeps): Promise<App> {
  let draining = false;
  const nextRequestId = requestIds();
  const logging = deps.logger === undefined ? defaultLogger(deps.config.logLevel, deps.config.logFormat) : null;
  const app = Fastify({
    logger: logging ? logging.options : deps.logger,
    bodyLimit: BODY_LIMIT,
    trustProxy: fastifyTrustProxy(deps.config.trustProxy),
    // A client-supplied X-Request-Id is kept (when sane) so a trace crosses services.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : nextRequestId();
    },
    // One log line per request, written in onResponse below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    // Node answers an HTTP/1.1 request without Host with a bare 400 of its own, before Fastify sees
    // it; let it through so that it gets the contract's answer (401 first under /api/) like any other.
    //
    // A client gets requestTimeoutMs (30 s) to send its headers and body, whether it sends them
    // slowly or not at all (SPEC section 8): Node answers 408 and closes the connection, checking
    // every second so that the deadline is kept within about a second, not within its default 30 s.
    requestTimeout: deps.config.requestTimeoutMs,
    http: { requireHostHeader: false, headersTimeout: deps.config.requestTimeoutMs, connectionsCheckingInterval: 1_000 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    // Malformed HTTP and bad URLs get the contract's error shape too, never Fastify's default body.
    frameworkErrors: (error, _request, reply) => {
      const mapped = fromFrameworkError(error, undefined) ?? new InvalidRequestError('The request could not be read');
      void sendError(reply, mapped);
    },
    clientErrorHandler: (error, socket) => {
      if (!socket.writable) return;
      const [status, reason, message] = clientErrorAnswer((error as { code?: string }).code, deps.config.requestTimeoutMs);
      const body = JSON.stringify(new InvalidRequestError(message).toBody());
      socket.end(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  }) as unknown as App;

  app.decorateRequest('receivedAt', 0);
  app.decorateRequest('principal', null);
  app.decorateRequest('callbackGrant', null);
  app.decorateRequest('viewer', null);
  app.decorate('startDraining', () => {
    draining = true;
  });
  app.decorate('routeTable', checkRouteAccess(app));
  // The default logger's flush timer goes with the app; what it gathered is written now.
  if (logging) app.addHook('onClose', async () => logging.close());
  app.server.maxConnections = deps.config.maxConnections;

  installJsonBodyParser(app);
  installErrorHandler(app);

  // These three run for every request: written with `done` rather than async, they make no promise
  // each (a few µs a request on the main thread, which bench:compare's ingest is bound by).
  app.addHook('onRequest', (request, reply, done) => {
    request.receivedAt = deps.clock.now();
    reply.header('x-request-id', request.id);
    if (draining && request.routeOptions.url !== '/healthz') {
      done(new UnavailableError('Punctual is shutting down; retry on another instance', {}, { 'retry-after': '1' }));
      return;
    }
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      'request',
    );
    done();
  });

  // No id contains U+0000, and PostgreSQL refuses it in a query parameter: such an id is simply
  // unknown, the same 404 on both stores (checked after authentication, which runs onRequest).
  app.addHook('preValidation', (request, _reply, done) => {
    const params = request.params as Record<string, unknown> | undefined;
    if (params && Object.values(params).some((value) => typeof value === 'string' && value.includes('\u0000'))) {
      done(new NotFoundError('No such job, team, project or key'));
      return;
    }
    done();
  });

  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'Punctual',
        version: '0.1.0',
        description: 'Background jobs over HTTP: dispatch a JSON payload, get it POSTed to your webhook on time.',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'A project API key: pk_…' },
          callbackToken: { type: 'http', scheme: 'bearer', description: "An attempt's callbackToken (async completion): pcb_…" },
          adminToken: { type: 'http', scheme: 'bearer', description: 'PUNCTUAL_ADMIN_TOKEN' },
          dashboardSession: {
            type: 'apiKey',
            in: 'cookie',
            name: SESSION_COOKIE,
            description: "A dashboard session, scoped to the user's teams; state-changing requests also send X-CSRF-Token",
          },
        },
      },
    },
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { store: deps.store });
  await app.register(metricsRoutes, { metrics: deps.metrics });
  // Authentication belongs to the scope a route is registered in (authentication.ts).
  await app.register(apiScope([jobRoutes(deps.tracer ?? null), scheduleRoutes], deps.services), { prefix: ACCESS_PREFIX.apiKey });
  await app.register(manageScope([manageRoutes], deps.services), { prefix: ACCESS_PREFIX.manage });
  if (deps.config.devReceiver) await app.register(devReceiverRoutes);
  return app;
}
