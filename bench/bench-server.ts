/**
 * The server under test for `npm run bench:ingest`, started by bench/ingest.ts as a child process.
 *
 * It starts Punctual exactly as `punctual serve` does (src/server.ts: loadConfig, openRuntime,
 * buildApp, the delivery engine, bootstrapFirstStart) from the compiled dist/, so the benchmark
 * measures the code that ships, and adds one route, POST /api/bench/bare: the baseline. Being under /api/ it pays the
 * same hooks (request id, API-key authentication), the same JSON parser and the same body schema,
 * then does everything /api/jobs/dispatch does except store the job, and answers 201.
 *
 * On stdout it prints one JSON line, {"port", "apiKey", "adminToken", "dbPath", "synchronous"}, and
 * nothing else (on PostgreSQL, bench/pg-query-count.mjs may answer SIGUSR2 with a line of its own).
 * With DATABASE_URL=postgres://… it runs on PostgreSQL; with BENCH_SECONDARY=1 it is a further
 * instance on a database another one has already set up (apiKey and adminToken are then null).
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** dist/ is what `npm run build` emits; the types come from src/, which it is compiled from. */
const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');
if (!existsSync(resolve(dist, 'server.js'))) throw new Error(`${dist} is missing: run npm run build first`);
const load = <T>(path: string): Promise<T> => import(pathToFileURL(resolve(dist, path)).href) as Promise<T>;

const [{ buildApp }, { systemClock }, { loadConfig }, { createDeliveryEngine, openRuntime }, { bootstrapFirstStart }, schemas, validation, ids, timestamps, plans] =
  await Promise.all([
    load<typeof import('../src/api/build-app.js')>('api/build-app.js'),
    load<typeof import('../src/clock.js')>('clock.js'),
    load<typeof import('../src/config.js')>('config.js'),
    load<typeof import('../src/runtime.js')>('runtime.js'),
    load<typeof import('../src/services/bootstrap.js')>('services/bootstrap.js'),
    load<typeof import('../src/api/schemas.js')>('api/schemas.js'),
    load<typeof import('../src/services/input/validate-job-input.js')>('services/input/validate-job-input.js'),
    load<typeof import('../src/crypto/random-ids.js')>('crypto/random-ids.js'),
    load<typeof import('../src/timestamp.js')>('timestamp.js'),
    load<typeof import('../src/plans.js')>('plans.js'),
  ]);

const config = loadConfig(process.env);
const secondary = process.env.BENCH_SECONDARY === '1';
const clock = systemClock;
const runtime = await openRuntime(config, clock, {
  generateAdminToken: true,
  onBackgroundError: (error) => console.error('background write failed', error),
});
const app = await buildApp({ config, store: runtime.store, clock, services: runtime.services, metrics: runtime.metrics });
// The scheduler runs as in production: each dispatch notifies it. Jobs are due in an hour, so
// nothing is claimed or delivered during the run.
const engine = createDeliveryEngine(runtime, app.log);

app.post(
  '/api/bench/bare',
  { schema: { hide: true, body: schemas.dispatchBody, response: { 201: schemas.dispatchAnswer } } },
  async (request, reply) => {
    // JobsService.dispatch up to the store write: same checks, same answer, same way of sending it.
    validation.validateIdempotencyKey(request.headers['idempotency-key']);
    const input = validation.validateEnqueueInput(request.body, request.receivedAt);
    const principal = request.principal!;
    if (!principal.project.webhookUrl) throw new Error('the bootstrap project has no webhook URL');
    const answer = JSON.stringify({
      jobId: ids.newJobId(),
      status: 'QUEUED',
      scheduledFor: timestamps.formatNullableTimestamp(input.scheduledFor),
      maxRetries: plans.effectiveMaxRetries(input.maxRetries, principal.project.retryMaxRetries, principal.plan),
    });
    return reply.code(201).type('application/json').send(answer);
  },
);

// ingest.ts ends the server with SIGKILL (that is the crash test); SIGTERM is for a profiled run
// (node --cpu-prof writes its profile only on a normal exit).
process.once('SIGTERM', () => {
  void engine
    .stop(1000)
    .then(() => app.close())
    .then(() => runtime.close())
    .finally(() => process.exit(0));
});

await app.listen({ host: '127.0.0.1', port: 0 });
await engine.start();

// Development mode (the default) points the first project at the built-in receiver, so dispatch
// has a webhook URL to accept jobs for.
const devReceiverUrl = config.devReceiver && config.allowPrivateWebhooks ? `${config.publicUrl}/dev/receiver` : null;
const first = secondary ? null : await bootstrapFirstStart(runtime.store, runtime.services.manage, { now: clock.now(), devReceiverUrl });
if (!first && !secondary) throw new Error('the benchmark needs an empty database');

const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
const sqlite = config.database.kind === 'sqlite' ? config.database : null;
console.log(
  JSON.stringify({
    port: address.port,
    apiKey: first?.apiKey ?? null,
    adminToken: runtime.generatedAdminToken,
    dbPath: sqlite?.path ?? null,
    synchronous: sqlite?.synchronous ?? null,
  }),
);
