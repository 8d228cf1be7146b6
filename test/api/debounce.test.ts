import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import { DEFAULT_PLANS } from '../../src/plans.js';
import { expectContractError } from '../support/contract-error.js';
import { ADMIN_TOKEN, makeTestApp, SECOND, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { loadConfig } from '../../src/config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { buildServer } from '../../src/server.js';
import type { App } from '../../src/api/build-app.js';

/** SPEC section 15's debounce through the HTTP API, on both stores, with an injected clock. */
describe('debounce (SPEC section 15)', () => {
  const plans = { ...DEFAULT_PLANS, tiny: { requestsPerSecond: null, burst: null, jobsPerMonth: 3, maxRetriesCap: 2 } };
  const T0 = Date.parse('2027-01-05T00:00:00.000Z');
  const iso = (ms: number) => new Date(ms).toISOString();
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({ plans, now: T0 });
  });
  afterAll(() => t.close());

  const dispatch = (p: TestProject, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
  const status = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json() as Record<string, unknown>;
  const listed = async (p: TestProject, query = '') => (await t.api(p.key, { method: 'GET', url: `/api/jobs${query}` })).json().jobs as { jobId: string }[];

  it('creates a job due debounceMs from now; a dispatch while it waits moves it and takes its payload, answered 200 with debounced', async () => {
    const p = await t.makeProject();
    const now = t.clock.now();
    const first = await dispatch(p, { payload: { n: 1 }, debounceKey: 'digest', debounceMs: 10 * SECOND });
    expect(first.statusCode, first.body).toBe(201);
    const { jobId } = first.json() as { jobId: string };
    expect(await status(p, jobId)).toMatchObject({ status: 'QUEUED', nextAttemptAt: iso(now + 10 * SECOND), payload: { n: 1 } });
    t.clock.advance(4 * SECOND);
    const second = await dispatch(p, { payload: { n: 2 }, debounceKey: 'digest', debounceMs: 10 * SECOND, maxRetries: 1 });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toEqual({ jobId, status: 'QUEUED', scheduledFor: null, maxRetries: 1, debounced: true, debouncedCount: 1 });
    expect(await status(p, jobId)).toMatchObject({ nextAttemptAt: iso(now + 14 * SECOND), payload: { n: 2 }, maxRetries: 1 });
    // maxRetries not given: the job keeps its own.
    expect((await dispatch(p, { payload: { n: 3 }, debounceKey: 'digest', debounceMs: 10 * SECOND })).json()).toMatchObject({ maxRetries: 1, debouncedCount: 2 });
    // Another key, and the same key in another project, are other jobs.
    expect((await dispatch(p, { payload: {}, debounceKey: 'other', debounceMs: 10 * SECOND })).statusCode).toBe(201);
    const q = await t.makeProject();
    expect((await dispatch(q, { payload: {}, debounceKey: 'digest', debounceMs: 10 * SECOND })).statusCode).toBe(201);
    expect(await listed(p)).toHaveLength(2);
  });

  it('never moves a job later than its first dispatch + maxWaitMs', async () => {
    const p = await t.makeProject();
    const start = t.clock.now();
    const body = { payload: {}, debounceKey: 'capped', debounceMs: 10 * SECOND, maxWaitMs: 15 * SECOND };
    const { jobId } = (await dispatch(p, body)).json() as { jobId: string };
    t.clock.advance(8 * SECOND);
    expect((await dispatch(p, body)).statusCode).toBe(200);
    expect((await status(p, jobId)).nextAttemptAt).toBe(iso(start + 15 * SECOND));
  });

  it('leaves exactly one job however many dispatches of one key arrive at once', async () => {
    const p = await t.makeProject();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => dispatch(p, { payload: { i }, debounceKey: 'burst', debounceMs: 60 * SECOND })));
    expect(answers.filter((res) => res.statusCode === 201)).toHaveLength(1);
    expect(answers.filter((res) => res.statusCode === 200)).toHaveLength(39);
    expect(new Set(answers.map((res) => res.json().jobId)).size).toBe(1);
    expect(Math.max(...answers.map((res) => (res.json().debouncedCount as number | undefined) ?? 0))).toBe(39);
    expect(await listed(p)).toHaveLength(1);
  });

  it('counts the surviving job once toward the quota, never an absorbed dispatch', async () => {
    const p = await t.makeProject({ plan: 'tiny' });
    for (let i = 0; i < 5; i += 1) expect((await dispatch(p, { payload: { i }, debounceKey: 'q', debounceMs: 60 * SECOND })).statusCode).toBeLessThan(300);
    expect((await dispatch(p, { payload: {} })).statusCode).toBe(201);
    expect((await dispatch(p, { payload: {} })).statusCode).toBe(201);
    expectContractError(await dispatch(p, { payload: {} }), 429, 'QUOTA_EXCEEDED');
    // A full quota does not refuse a dispatch the key's job absorbs: it creates nothing.
    expect((await dispatch(p, { payload: { last: true }, debounceKey: 'q', debounceMs: 60 * SECOND })).statusCode).toBe(200);
  });

  it("replaces the job's tags when given and keeps them otherwise; the tag lookup follows", async () => {
    const p = await t.makeProject();
    const body = { payload: {}, debounceKey: 'tagged', debounceMs: 60 * SECOND };
    const { jobId } = (await dispatch(p, { ...body, tags: { batch: 'one' } })).json() as { jobId: string };
    await dispatch(p, body);
    expect((await status(p, jobId)).tags).toEqual({ batch: 'one' });
    await dispatch(p, { ...body, tags: { batch: 'two' } });
    expect((await status(p, jobId)).tags).toEqual({ batch: 'two' });
    expect((await listed(p, '?tag=batch:two')).map((job) => job.jobId)).toEqual([jobId]);
    expect(await listed(p, '?tag=batch:one')).toEqual([]);
  });

  it('composes with an Idempotency-Key: a retried request replays its answer and is absorbed once', async () => {
    const p = await t.makeProject();
    const body = { payload: {}, debounceKey: 'idem', debounceMs: 60 * SECOND };
    await dispatch(p, body);
    const once = await dispatch(p, body, { 'idempotency-key': 'retry-me' });
    const again = await dispatch(p, body, { 'idempotency-key': 'retry-me' });
    expect(once.json()).toMatchObject({ debounced: true, debouncedCount: 1 });
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(once.body);
    expect((await dispatch(p, body)).json().debouncedCount).toBe(2);
  });

  it('creates a new job once the key\'s job was claimed', async () => {
    const p = await t.makeProject();
    const body = { payload: {}, debounceKey: 'claimed', debounceMs: SECOND };
    const first = (await dispatch(p, body)).json().jobId as string;
    t.clock.advance(2 * SECOND);
    const now = t.clock.now();
    const claimed = await t.store.jobClaimDue({ now, dueBy: now, limit: 1_000, workerId: 'wrk_d', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    expect(claimed.map((job) => job.id)).toContain(first);
    const second = await dispatch(p, body);
    expect(second.statusCode).toBe(201);
    expect(second.json().jobId).not.toBe(first);
  });

  it('refuses a debounce that is not whole, with scheduledFor, on a batch item, or a near miss of its names, creating nothing', async () => {
    const p = await t.makeProject();
    const cases: [Record<string, unknown>, string][] = [
      [{ debounceKey: 'k' }, 'debounceMs'],
      [{ debounceKey: 'k', debounceMs: 999 }, 'debounceMs'],
      [{ debounceKey: 'k', debounceMs: 86_400_001 }, 'debounceMs'],
      [{ debounceKey: 'k', debounceMs: 5_000, maxWaitMs: 4_999 }, 'maxWaitMs'],
      [{ debounceKey: 'k', debounceMs: 5_000, maxWaitMs: 367 * 86_400_000 }, 'maxWaitMs'],
      [{ debounceKey: 'k', debounceMs: 5_000, scheduledFor: iso(t.clock.now() + 60 * SECOND) }, 'scheduledFor'],
      [{ debounceKey: '', debounceMs: 5_000 }, 'debounceKey'],
      [{ debounceMs: 5_000 }, 'debounceMs'],
    ];
    for (const [body, field] of cases) {
      const res = await dispatch(p, { payload: {}, ...body });
      expectContractError(res, 400, 'INVALID_REQUEST');
      expect(res.json().data.field, JSON.stringify(body)).toBe(field);
    }
    const near = await dispatch(p, { payload: {}, debounce_key: 'k', debounceMs: 5_000 });
    expect(near.json().data).toMatchObject({ field: 'debounce_key', didYouMean: 'debounceKey' });
    const batch = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs: [{ payload: {}, debounceKey: 'k', debounceMs: 5_000 }] } });
    expect(batch.json().jobs[0]).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'debounceKey' } });
    expect(await listed(p)).toEqual([]);
  });
});

/**
 * SPEC section 15 across instances: two instances on one PostgreSQL (each its own store, runtime
 * and HTTP app) take the same key's dispatches at once; the per-key lock leaves exactly one job.
 */
describe.runIf(TEST_STORE === 'postgres')('debounce across two instances (postgres)', () => {
  let t: TestApp;
  let second: { runtime: Runtime; app: App } | null = null;
  beforeAll(async () => {
    t = await makeTestApp();
    const config = loadConfig({
      DATABASE_URL: t.databaseUrl,
      PUNCTUAL_ADMIN_TOKEN: ADMIN_TOKEN,
      PUNCTUAL_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
      LOG_LEVEL: 'silent',
    });
    const runtime = await openRuntime(config, t.clock, { generateAdminToken: false, onBackgroundError: () => {} });
    const app = await buildServer({ config, store: runtime.store, clock: t.clock, services: runtime.services, metrics: runtime.metrics, tracer: runtime.tracer });
    second = { runtime, app };
  });
  afterAll(async () => {
    if (second) {
      await second.app.close();
      await second.runtime.close();
    }
    await t.close();
  });

  it("leaves exactly one job when both instances take a key's dispatches at once", async () => {
    const p = await t.makeProject();
    const apps = [t.app, second!.app];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        apps[i % 2]!.inject({
          method: 'POST',
          url: '/api/jobs/dispatch',
          headers: { authorization: `Bearer ${p.key}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ payload: { i }, debounceKey: 'shared', debounceMs: 60 * SECOND }),
        }),
      ),
    );
    expect(answers.map((res) => res.statusCode).sort()).toEqual([201, ...Array.from({ length: 39 }, () => 200)].sort());
    expect(new Set(answers.map((res) => res.json().jobId)).size).toBe(1);
    expect(Math.max(...answers.map((res) => (res.json().debouncedCount as number | undefined) ?? 0))).toBe(39);
    const listed = await t.api(p.key, { method: 'GET', url: '/api/jobs' });
    expect(listed.json().jobs).toHaveLength(1);
  });
});
