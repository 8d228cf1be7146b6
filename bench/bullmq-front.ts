/**
 * What a user would run instead of Punctual, for bench/compare.ts: BullMQ 5 on Redis behind a small
 * Fastify front, with a BullMQ Worker in the same process delivering each job to the webhook.
 * Started as a child process; it prints one JSON line, {"port"}.
 *
 *   - POST /api/jobs/dispatch takes Punctual's body (payload object, optional scheduledFor or
 *     scheduleFor, optional maxRetries), checked by the same body schema and validateEnqueueInput
 *     from dist/ as Punctual and the bare pipe, then `queue.add` with the delay until its due time,
 *     `attempts` = maxRetries + 1 (default 3 retries, as Punctual's), exponential backoff from 30 s
 *     (Punctual's first retry; BullMQ doubles where Punctual multiplies by 4), and answers 201
 *     {jobId, …} once Redis has the job;
 *   - POST /api/jobs/dispatch/batch takes {"jobs": [1 to 100 bodies]} through one `queue.addBulk`;
 *   - the Worker (concurrency 64) POSTs {"jobId", "payload"} to BULLMQ_RECEIVER_URL with undici (one
 *     Agent with keep-alive) and throws on a non-2xx answer, so that BullMQ retries the job.
 *
 * Finished jobs: `removeOnComplete: 1000, removeOnFail: 5000`, what BullMQ's guide calls good
 * practice ("keep a handful of completed jobs and a much larger value of failed jobs"). Keeping
 * every job, as Punctual keeps every job and attempt, would grow Redis (memory only) without
 * bound, which a BullMQ user avoids; removing every job at once is the other common choice and
 * saves the trim of the completed set.
 *
 * Async completion (BULLMQ_ASYNC=1, for bench/async-completion.ts), what a user builds with BullMQ
 * for a receiver that answers 202 and reports later: on a 202 the processor waits, keeping the job
 * active (its lock renewed by the Worker), until POST /result/:jobId (the receiver's report) resolves
 * that job's wait, or an hour passes (then the job fails, and is retried like any failure); the
 * processor then returns and BullMQ completes the job. The route answers 200 {jobId, status:
 * "COMPLETED"} once the Worker's `completed` event says the job is completed in Redis (as Punctual's
 * report answers once the job is COMPLETED in its store); 404 when no job of that id is waiting.
 * The wait is registered before the POST leaves: the report can reach the front before the 202.
 *
 * Env: BULLMQ_RECEIVER_URL (required), REDIS_URL (default redis://127.0.0.1:6379),
 * BULLMQ_LIMIT_PER_SECOND (the Worker's `limiter`, for bench/rate.ts; none by default),
 * BULLMQ_ASYNC ("1": async completion as above; off by default),
 * BULLMQ_PREFIX (key prefix, default "bull": bench/compare.ts gives each run its own and deletes
 * its keys afterwards), BULLMQ_QUEUE (default "webhooks").
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Queue, Worker, type Job, type JobsOptions } from 'bullmq';
import Fastify from 'fastify';
import { Agent, request } from 'undici';

const dist = resolve(dirname(fileURLToPath(import.meta.url)), '../dist');
if (!existsSync(resolve(dist, 'server.js'))) throw new Error(`${dist} is missing: run npm run build first`);
const load = <T>(path: string): Promise<T> => import(pathToFileURL(resolve(dist, path)).href) as Promise<T>;
const [schemas, validation, timestamps] = await Promise.all([
  load<typeof import('../src/api/schemas.js')>('api/schemas.js'),
  load<typeof import('../src/services/input/validate-job-input.js')>('services/input/validate-job-input.js'),
  load<typeof import('../src/timestamp.js')>('timestamp.js'),
]);

const receiverUrl = process.env.BULLMQ_RECEIVER_URL;
if (!receiverUrl) throw new Error('BULLMQ_RECEIVER_URL is required');
const connection = { url: process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379' };
const prefix = process.env.BULLMQ_PREFIX?.trim() || 'bull';
const queueName = process.env.BULLMQ_QUEUE?.trim() || 'webhooks';
/** bench/rate.ts: BullMQ's own rate limit, the queue's (a limit per group is in its paid edition). */
const limitPerSecond = Number(process.env.BULLMQ_LIMIT_PER_SECOND ?? '') || null;
const asyncCompletion = process.env.BULLMQ_ASYNC === '1';
/** How long a 202'd job waits for its report (Punctual's default asyncCompletionTimeoutMs). */
const REPORT_TIMEOUT_MS = 3_600_000;
const DEFAULT_MAX_RETRIES = 3;
const FIRST_RETRY_MS = 30_000;
const JOB_NAME = 'webhook';

interface JobData {
  payload: Record<string, unknown>;
}

const queue = new Queue<JobData>(queueName, { connection, prefix });
const agent = new Agent({ keepAliveTimeout: 30_000 });
let deliveryFailures = 0;

/** Async completion: each 202'd job's wait for its report, and each reported job's wait for its completion. */
const reportWaits = new Map<string, () => void>();
const completionWaits = new Map<string, (status: 'COMPLETED' | 'FAILED') => void>();

/** A wait for the report on `jobId`, registered at once; `cancel` drops it (a no-op once reported). */
function reportWait(jobId: string): { reported: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const cancel = () => {
    clearTimeout(timer);
    reportWaits.delete(jobId);
  };
  const reported = new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no report within ${REPORT_TIMEOUT_MS} ms`)), REPORT_TIMEOUT_MS);
    reportWaits.set(jobId, () => {
      cancel();
      resolve();
    });
  });
  reported.catch(() => {}); // awaited only after a 202; a timeout before then is not unhandled
  return { reported, cancel };
}

const worker = new Worker<JobData>(
  queueName,
  async (job: Job<JobData>) => {
    const wait = asyncCompletion ? reportWait(job.id!) : null;
    try {
      const response = await request(receiverUrl, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobId: job.id, payload: job.data.payload }),
      });
      await response.body.dump();
      if (wait && response.statusCode === 202) return await wait.reported;
      if (response.statusCode < 200 || response.statusCode > 299) throw new Error(`the webhook answered ${response.statusCode}`);
    } finally {
      wait?.cancel();
    }
  },
  { connection, prefix, concurrency: 64, ...(limitPerSecond !== null && { limiter: { max: limitPerSecond, duration: 1_000 } }) },
);
worker.on('failed', (job) => {
  deliveryFailures += 1;
  if (job?.id !== undefined) completionWaits.get(job.id)?.('FAILED');
});
if (asyncCompletion) worker.on('completed', (job) => completionWaits.get(job.id!)?.('COMPLETED'));
worker.on('error', (error) => console.error('bullmq worker:', error));
queue.on('error', (error) => console.error('bullmq queue:', error));

/** One dispatch body: checked as Punctual checks it, then the job as BullMQ takes it. */
function jobOf(body: unknown, receivedAt: number): { data: JobData; opts: JobsOptions; answer: Record<string, unknown> } {
  const input = validation.validateEnqueueInput(body, receivedAt);
  const maxRetries = input.maxRetries ?? DEFAULT_MAX_RETRIES;
  const opts: JobsOptions = {
    delay: input.scheduledFor === null ? 0 : Math.max(0, input.scheduledFor - Date.now()),
    attempts: maxRetries + 1,
    backoff: { type: 'exponential', delay: FIRST_RETRY_MS },
    removeOnComplete: 1000,
    removeOnFail: 5000,
  };
  return {
    data: { payload: (body as { payload: Record<string, unknown> }).payload },
    opts,
    answer: { status: 'QUEUED', scheduledFor: timestamps.formatNullableTimestamp(input.scheduledFor), maxRetries },
  };
}

const app = Fastify({ logger: false, bodyLimit: 2_097_152 });
app.post('/api/jobs/dispatch', { schema: { body: schemas.dispatchBody, response: { 201: schemas.dispatchAnswer } } }, async (req, reply) => {
  const { data, opts, answer } = jobOf(req.body, Date.now());
  const job = await queue.add(JOB_NAME, data, opts);
  return reply.code(201).send({ jobId: job.id, ...answer });
});
app.post('/api/jobs/dispatch/batch', async (req) => {
  const receivedAt = Date.now();
  const bodies = (req.body as { jobs?: unknown }).jobs;
  if (!Array.isArray(bodies) || bodies.length < 1 || bodies.length > 100) {
    throw Object.assign(new Error('jobs must be an array of 1 to 100 dispatch bodies'), { statusCode: 400 });
  }
  const jobs = bodies.map((body) => jobOf(body, receivedAt));
  const added = await queue.addBulk(jobs.map(({ data, opts }) => ({ name: JOB_NAME, data, opts })));
  return { jobs: added.map((job, i) => ({ jobId: job.id, ...jobs[i]!.answer })) };
});
if (asyncCompletion) {
  app.post<{ Params: { jobId: string } }>('/result/:jobId', async (req, reply) => {
    const { jobId } = req.params;
    const report = reportWaits.get(jobId);
    if (!report) return reply.code(404).send({ error: `no job ${jobId} is waiting for a report` });
    const status = await new Promise<'COMPLETED' | 'FAILED'>((resolve) => {
      completionWaits.set(jobId, resolve);
      report();
    });
    completionWaits.delete(jobId);
    return reply.code(status === 'COMPLETED' ? 200 : 500).send({ jobId, status });
  });
}
app.get('/bullmq/stats', async () => ({ deliveryFailures }));

process.once('SIGTERM', () => {
  // The worker first: it finishes the deliveries in flight and takes no more.
  void worker
    .close()
    .then(() => queue.close())
    .then(() => app.close())
    .then(() => agent.close())
    .finally(() => process.exit(0));
});

await worker.waitUntilReady();
await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
console.log(JSON.stringify({ port: address.port }));
