import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { DeliveryEngine } from '../../src/engine/delivery-engine.js';
import { createDeliveryEngine, openRuntime, type Runtime } from '../../src/runtime.js';
import { eventually } from '../support/eventually.js';
import { ADMIN_TOKEN, makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * SPEC section 14 against the real delivery engine and a real receiver, in real time: tags in the
 * delivery body, and the race of a bulk cancel against claims of the same jobs falling due while it
 * runs. After the answer, no job it changed is ever delivered; every job is either delivered or
 * cancelled, never both. On PostgreSQL a second instance claims beside the first.
 */
describe('bulk actions against the delivery engine', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;
  /** PostgreSQL: a second instance (its own store, runtime and engine) on the same database. */
  let second: { runtime: Runtime; engine: DeliveryEngine } | null = null;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
    if (TEST_STORE === 'postgres') {
      const config = loadConfig({
        DATABASE_URL: t.databaseUrl,
        PUNCTUAL_ADMIN_TOKEN: ADMIN_TOKEN,
        PUNCTUAL_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
        PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true',
        LOG_LEVEL: 'silent',
      });
      const runtime = await openRuntime(config, systemClock, { generateAdminToken: false, onBackgroundError: () => {} });
      const engine = createDeliveryEngine(runtime, pino({ level: 'silent' }));
      await engine.start();
      second = { runtime, engine };
    }
  });
  afterAll(async () => {
    if (second) {
      await second.engine.stop(5_000);
      await second.runtime.close();
    }
    await t.close();
    await receiver.close();
  });

  const post = (p: TestProject, url: string, body: unknown) =>
    t.api(p.key, { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const statusOf = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json().status as string;

  it('delivers a job with its tags in the body, byte for byte as given, signed; a job without tags has no tags field', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const tagged = (await post(p, '/api/jobs/dispatch', { payload: { n: 1 }, tags: { order: '123', 'env.name': 'prod:eu' } })).json().jobId as string;
    const plain = (await post(p, '/api/jobs/dispatch', { payload: { n: 2 } })).json().jobId as string;
    await receiver.waitFor(() => receiver.forJob(tagged).length === 1 && receiver.forJob(plain).length === 1);
    const [withTags] = receiver.forJob(tagged);
    expect(withTags!.body).toContain('"tags":{"order":"123","env.name":"prod:eu"},"payload":{"n":1}}');
    expect(withTags!.json).toEqual({ jobId: tagged, attemptId: expect.any(String), attempt: 1, attemptNumber: 1, tags: { order: '123', 'env.name': 'prod:eu' }, payload: { n: 1 } });
    expect(new Webhook(p.webhookSecret).verify(withTags!.body, withTags!.headers as Record<string, string>)).toEqual(withTags!.json);
    const [without] = receiver.forJob(plain);
    expect(Object.keys(without!.json)).toEqual(['jobId', 'attemptId', 'attempt', 'attemptNumber', 'payload']);
  });

  it('a bulk cancel racing claims of the same jobs: nothing it changed is ever delivered, and each job is delivered or cancelled, not both', { timeout: 60_000 }, async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1000 } });
    const JOBS = 1_000;
    // Due one every millisecond over a second, starting a second from now: the cancel comes once
    // the first hundred are delivered, while the rest keep falling due and being claimed.
    const start = Date.now() + 1_000;
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i += 100) {
      const jobs = Array.from({ length: 100 }, (_, k) => ({ payload: { i: i + k }, tags: { race: 'r' }, scheduledFor: new Date(start + i + k).toISOString() }));
      const res = await post(p, '/api/jobs/dispatch/batch', { jobs });
      ids.push(...res.json().jobs.map((job: { jobId: string }) => job.jobId));
    }
    const ours = () => receiver.requests.filter((request) => ids.includes(request.json.jobId as string));
    await eventually(() => ours().length, { what: 'the first deliveries of the batch', until: (n) => n >= 100, withinMs: 15_000, everyMs: 2 });
    const answer = await post(p, '/api/jobs/bulk', { action: 'cancel', filter: { tags: { race: 'r' } }, limit: 10_000 });
    expect(answer.statusCode).toBe(200);
    const { matched, changed, hasMore } = answer.json() as { matched: number; changed: number; hasMore: boolean };
    expect(hasMore).toBe(false);
    expect(changed).toBeLessThanOrEqual(matched);
    // Both sides of the race happened: some were delivered first, some were cancelled.
    expect(changed).toBeGreaterThan(0);
    expect(changed).toBeLessThan(JOBS);
    const statuses = new Map<string, string>();
    for (const id of ids) statuses.set(id, await statusOf(p, id));
    const cancelled = ids.filter((id) => statuses.get(id) === 'CANCELLED');
    expect(cancelled).toHaveLength(changed);
    // Every job not cancelled is delivered (poll to a deadline), and only then is the receiver checked.
    const delivered = ids.filter((id) => statuses.get(id) !== 'CANCELLED');
    await eventually(
      async () => {
        const pending: string[] = [];
        for (const id of delivered) if ((await statusOf(p, id)) !== 'COMPLETED') pending.push(id);
        return pending;
      },
      { what: 'every job not cancelled COMPLETED', until: (pending) => pending.length === 0, withinMs: 30_000, everyMs: 50 },
    );
    // The last deliveries are answered: any request still on its way has had the time of a whole claim and send.
    await eventually(() => receiver.inFlight, { what: 'no request in flight', until: (n) => n === 0 });
    const reached = new Set(ours().map((request) => request.json.jobId as string));
    expect(cancelled.filter((id) => reached.has(id))).toEqual([]);
    expect(delivered.filter((id) => !reached.has(id))).toEqual([]);
    expect(reached.size + cancelled.length).toBe(JOBS);
  });
});
