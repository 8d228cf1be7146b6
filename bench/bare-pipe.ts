/**
 * The bare pipe of the delivery benchmarks: the baseline each Punctual figure is printed beside.
 * Started by bench/delivery-harness.ts as a child process; it prints one JSON line, {"port"}.
 *
 * A Fastify server with Punctual's two dispatch routes and an undici client (an Agent with
 * keep-alive, like Punctual's WebhookClient) that forwards to BARE_RECEIVER_URL. It takes the
 * same bodies, validates them with the same code (the dispatch body schema and
 * validateEnqueueInput from dist/), gives each job an id with the same generator, and stores
 * nothing:
 *   - a job due now (scheduledFor absent or past) is forwarded at once, and its 201 leaves after
 *     the receiver has answered: the fair "at once" pipe, one round trip behind the client; with
 *     BARE_ANSWER=at-once (bench/compare.ts) its 201 leaves at once instead and the forward runs
 *     behind it, as a queue that answers before delivering does;
 *   - a job due later waits on an in-memory setTimeout until its scheduledFor (re-armed when the
 *     timer fires a hair early on the monotonic clock, and in steps of at most 2^31−1 ms, the
 *     longest Node timer), then is forwarded; its 201 (or batch 200) leaves at once.
 * No authentication, no signature, no attempt records: only what a pipe needs.
 * With BARE_ASYNC=1 (bench/async-completion.ts), a 202 from the receiver is a forward taken too, and
 * POST /result/:jobId (the receiver's report) answers 200 at once: a pipe has nothing to complete.
 *
 * The forwarded body is `{"jobId", "payload"}`, the payload byte for byte as accepted.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');
if (!existsSync(resolve(dist, 'server.js'))) throw new Error(`${dist} is missing: run npm run build first`);
const load = <T>(path: string): Promise<T> => import(pathToFileURL(resolve(dist, path)).href) as Promise<T>;
const [schemas, validation, ids, timestamps] = await Promise.all([
  load<typeof import('../src/api/schemas.js')>('api/schemas.js'),
  load<typeof import('../src/services/input/validate-job-input.js')>('services/input/validate-job-input.js'),
  load<typeof import('../src/crypto/random-ids.js')>('crypto/random-ids.js'),
  load<typeof import('../src/timestamp.js')>('timestamp.js'),
]);

const receiverUrl = process.env.BARE_RECEIVER_URL;
if (!receiverUrl) throw new Error('BARE_RECEIVER_URL is required');
const answerAtOnce = process.env.BARE_ANSWER === 'at-once';
if (!answerAtOnce && (process.env.BARE_ANSWER ?? '') !== '') throw new Error(`BARE_ANSWER must be "at-once" or unset, got "${process.env.BARE_ANSWER}"`);
const asyncCompletion = process.env.BARE_ASYNC === '1';
const LONGEST_TIMER_MS = 2 ** 31 - 1;
const agent = new Agent({ keepAliveTimeout: 30_000 });
let forwardErrors = 0;

async function forward(jobId: string, payload: string): Promise<void> {
  try {
    const response = await request(receiverUrl!, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: `{"jobId":${JSON.stringify(jobId)},"payload":${payload}}`,
    });
    await response.body.dump();
    if (response.statusCode !== 200 && !(asyncCompletion && response.statusCode === 202)) forwardErrors += 1;
  } catch (error) {
    forwardErrors += 1;
    if (forwardErrors <= 5) console.error('bare pipe: forward failed', error);
  }
}

function schedule(jobId: string, payload: string, due: number): void {
  const wait = due - Date.now();
  if (wait <= 0) {
    void forward(jobId, payload);
    return;
  }
  setTimeout(() => schedule(jobId, payload, due), Math.min(wait, LONGEST_TIMER_MS));
}

/** One job: validated as Punctual does, then forwarded now (awaited) or put on a timer. */
async function take(body: unknown, receivedAt: number): Promise<Record<string, unknown>> {
  const input = validation.validateEnqueueInput(body, receivedAt);
  const jobId = ids.newJobId();
  if (input.scheduledFor !== null && input.scheduledFor > Date.now()) schedule(jobId, input.payload, input.scheduledFor);
  else if (answerAtOnce) void forward(jobId, input.payload);
  else await forward(jobId, input.payload);
  return { jobId, status: 'QUEUED', scheduledFor: timestamps.formatNullableTimestamp(input.scheduledFor), maxRetries: input.maxRetries ?? 0 };
}

const app = Fastify({ logger: false, bodyLimit: 2_097_152 });
app.post(
  '/api/jobs/dispatch',
  { schema: { body: schemas.dispatchBody, response: { 201: schemas.dispatchAnswer } } },
  async (request, reply) => reply.code(201).send(await take(request.body, Date.now())),
);
app.post('/api/jobs/dispatch/batch', async (request) => {
  const receivedAt = Date.now();
  const jobs = (request.body as { jobs?: unknown }).jobs;
  if (!Array.isArray(jobs) || jobs.length < 1 || jobs.length > 100) throw new Error('jobs must be an array of 1 to 100 dispatch bodies');
  return { jobs: await Promise.all(jobs.map((job) => take(job, receivedAt))) };
});
if (asyncCompletion) app.post<{ Params: { jobId: string } }>('/result/:jobId', async (request) => ({ jobId: request.params.jobId, status: 'COMPLETED' }));
app.get('/bare/stats', async () => ({ forwardErrors }));

process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => agent.close())
    .finally(() => process.exit(0));
});

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
console.log(JSON.stringify({ port: address.port }));
