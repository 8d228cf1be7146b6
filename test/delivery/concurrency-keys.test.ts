import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, SECOND, type TestApp } from '../support/make-app.js';
import { TestReceiver, type ReceivedRequest } from '../support/receiver.js';

/**
 * SPEC section 15's concurrencyKey through the whole pipeline, on both stores, with an injected
 * clock and a real receiver: each key's deliveries one at a time and in dispatch order, a job
 * waiting for its retry holding its key while other keys go on, and the key in the bodies.
 */
describe('concurrency keys (SPEC section 15)', () => {
  const ANSWER_MS = 30;
  let t: TestApp;
  let receiver: TestReceiver;
  /** The jobs whose first attempt gets a 500. */
  const failOnce = new Set<string>();

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => {
      const first = receiver.forJob(request.json.jobId as string).length === 1;
      return failOnce.has(request.json.jobId as string) && first ? { status: 500, delayMs: ANSWER_MS } : { status: 200, delayMs: ANSWER_MS };
    });
    t = await makeTestApp({ delivery: true, random: () => 0.5 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const post = (key: string, url: string, body: unknown) =>
    t.api(key, { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const ofKey = (key: string): ReceivedRequest[] => receiver.requests.filter((r) => r.json.concurrencyKey === key);
  /** Polls the claim loop (the injected clock stands still) until `done` holds. */
  async function tickUntil(done: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what}: ${receiver.requests.length} requests so far`);
      await t.engine!.claimLoop.tick();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  it("delivers each key's jobs one at a time in dispatch order, a retry holding its key while the other keys go on", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { initialDelayMs: 10 * SECOND } } });
    const keys = ['k0', 'k1', 'k2', 'k3'];
    const items = keys.flatMap((key) => Array.from({ length: 5 }, (_, i) => ({ payload: { key, i }, concurrencyKey: key })));
    const res = await post(p.key, '/api/jobs/dispatch/batch', { jobs: [...items, { payload: { free: true } }] });
    expect(res.statusCode, res.body).toBe(200);
    const jobIds = (res.json().jobs as { jobId: string }[]).map((j) => j.jobId);
    const idsOf = (key: string) => jobIds.filter((_, i) => items[i]?.concurrencyKey === key);
    // k0's second job fails once and waits 10.5 s (injected) for its retry.
    failOnce.add(idsOf('k0')[1]!);
    // Before any claim: each key's first job in its turn, the four behind it held.
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(Number(/^punctual_keys_waiting (\d+)$/m.exec(metrics)![1])).toBe(4);

    await tickUntil(() => keys.slice(1).every((key) => ofKey(key).length === 5) && ofKey('k0').length === 2, 'the other keys delivered, k0 waiting');
    // Nothing of k0 after its failed job while its retry waits, however long the others took.
    expect(ofKey('k0').map((r) => r.json.jobId)).toEqual(idsOf('k0').slice(0, 2));
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${idsOf('k0')[2]}` })).json()).toMatchObject({ status: 'QUEUED', concurrencyKey: 'k0' });

    t.clock.advance(11 * SECOND);
    await tickUntil(() => ofKey('k0').length === 6, 'k0 delivered after its retry');
    for (const key of keys) {
      const expected = key === 'k0' ? [idsOf(key)[0], idsOf(key)[1], ...idsOf(key).slice(1)] : idsOf(key);
      const delivered = ofKey(key);
      expect(delivered.map((r) => r.json.jobId), key).toEqual(expected);
      // One at a time: each request of the key came after the answer to the one before it.
      for (let i = 1; i < delivered.length; i += 1) expect(delivered[i]!.arrivedAt - delivered[i - 1]!.arrivedAt, key).toBeGreaterThanOrEqual(ANSWER_MS - 2);
    }
    // The job without a key carries none; those with one carry it, in the body and the status.
    const free = receiver.forJob(jobIds[jobIds.length - 1]!)[0]!;
    expect('concurrencyKey' in free.json).toBe(false);
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${idsOf('k2')[0]}` })).json()).toMatchObject({ status: 'COMPLETED', concurrencyKey: 'k2' });
    const list = (await t.api(p.key, { method: 'GET', url: '/api/jobs?limit=3' })).json().jobs as { concurrencyKey?: string }[];
    expect(list.some((job) => job.concurrencyKey !== undefined)).toBe(true);
  });

  it("starts a batch's jobs due at once in the batch's order, with keys or without, and lists them in it (SPEC section 10)", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1, keyConcurrency: 2 } });
    const items = [{ key: 'k2' }, { key: 'k1' }, { key: null }, { key: 'k2' }, { key: null }, { key: 'k1' }].map(({ key }, i) => ({ payload: { i }, ...(key && { concurrencyKey: key }) }));
    const res = await post(p.key, '/api/jobs/dispatch/batch', { jobs: items });
    expect(res.statusCode, res.body).toBe(200);
    const jobIds = (res.json().jobs as { jobId: string }[]).map((j) => j.jobId);
    const listed = (await t.api(p.key, { method: 'GET', url: '/api/jobs?limit=6' })).json().jobs as { jobId: string }[];
    expect(listed.map((job) => job.jobId)).toEqual([...jobIds].reverse());
    await tickUntil(() => jobIds.every((id) => receiver.forJob(id).length === 1), 'the batch delivered');
    expect(receiver.requests.filter((r) => jobIds.includes(r.json.jobId as string)).map((r) => r.json.jobId)).toEqual(jobIds);
  });

  it('refuses a key that is not 1 to 128 printable ASCII characters, and a near miss of its name, creating nothing', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    for (const concurrencyKey of ['', 'x'.repeat(129), 'é', 7]) {
      const res = await post(p.key, '/api/jobs/dispatch', { payload: {}, concurrencyKey });
      expectContractError(res, 400, 'INVALID_REQUEST');
      expect(res.json().data.field).toBe('concurrencyKey');
    }
    const batch = await post(p.key, '/api/jobs/dispatch/batch', { jobs: [{ payload: {}, concurrencyKey: '' }] });
    expect(batch.statusCode).toBe(200);
    expect(batch.json().jobs[0]).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'concurrencyKey' } });
    const near = await post(p.key, '/api/jobs/dispatch', { payload: {}, concurrency_key: 'a' });
    expectContractError(near, 400, 'INVALID_REQUEST');
    expect(near.json().data.didYouMean).toBe('concurrencyKey');
    expect((await t.api(p.key, { method: 'GET', url: '/api/jobs' })).json().jobs).toEqual([]);
    expect((await post(p.key, '/api/jobs/dispatch', { payload: {}, concurrencyKey: 'x'.repeat(128) })).statusCode).toBe(201);
  });

  it("gives a schedule's concurrencyKey to its jobs; a PATCH with null removes it", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const created = await post(p.key, '/api/schedules', { cron: '0 0 1 1 *', payload: {}, concurrencyKey: 'nightly' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().concurrencyKey).toBe('nightly');
    const { scheduleId } = created.json() as { scheduleId: string };
    const triggered = await post(p.key, `/api/schedules/${scheduleId}/trigger`, {});
    expect(triggered.statusCode, triggered.body).toBe(201);
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${triggered.json().jobId}` })).json().concurrencyKey).toBe('nightly');
    const bad = await t.api(p.key, { method: 'PATCH', url: `/api/schedules/${scheduleId}`, payload: { concurrencyKey: '' } });
    expect(bad.json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'concurrencyKey' } });
    const removed = await t.api(p.key, { method: 'PATCH', url: `/api/schedules/${scheduleId}`, payload: { concurrencyKey: null } });
    expect(removed.json().concurrencyKey).toBeNull();
  });

  it('takes keyConcurrency from 1 to 1,000 on project creation and update, 1 by default', async () => {
    const team = (await t.admin({ method: 'POST', url: '/manage/v1/teams', payload: { name: 'T', plan: 'unlimited' } })).json().teamId as string;
    const created = await t.admin({ method: 'POST', url: `/manage/v1/teams/${team}/projects`, payload: { name: 'P', keyConcurrency: 5 } });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().keyConcurrency).toBe(5);
    const plain = await t.admin({ method: 'POST', url: `/manage/v1/teams/${team}/projects`, payload: { name: 'Q' } });
    expect(plain.json().keyConcurrency).toBe(1);
    for (const keyConcurrency of [0, 1001, 1.5, '2']) {
      const res = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${plain.json().projectId}`, payload: { keyConcurrency } });
      expectContractError(res, 400, 'INVALID_REQUEST');
    }
    const near = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${plain.json().projectId}`, payload: { keyConcurency: 2 } });
    expect(near.json().data.didYouMean).toBe('keyConcurrency');
    const updated = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${plain.json().projectId}`, payload: { keyConcurrency: 1000 } });
    expect(updated.json().keyConcurrency).toBe(1000);
  });
});
