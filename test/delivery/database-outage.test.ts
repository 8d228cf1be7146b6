import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeAppBehindProxy } from '../support/app-behind-proxy.js';
import type { CuttableProxy } from '../support/cuttable-proxy.js';
import { TEST_STORE, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * The database goes away mid-run (a network cut between Punctual and PostgreSQL): requests answer
 * 503 UNAVAILABLE with Retry-After in bounded time, never 500 and never a hang; deliveries pause
 * and resume by themselves; nothing acknowledged is lost.
 */
describe.runIf(TEST_STORE === 'postgres')('losing the database', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;
  let proxy: CuttableProxy;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    ({ t, proxy } = await makeAppBehindProxy());
  });
  afterAll(async () => {
    proxy.restore();
    await t.close();
    await proxy.close();
    await receiver.close();
  });

  it('answers 503 with Retry-After while it is gone, then recovers and delivers everything acknowledged', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const start = Date.now();
    const acknowledged: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await t.api(p.key, {
        method: 'POST',
        url: '/api/jobs/dispatch',
        payload: { payload: { i }, scheduledFor: new Date(start + 500 + i * 50).toISOString() },
      });
      expect(res.statusCode).toBe(201);
      acknowledged.push(res.json().jobId);
    }

    await receiver.waitFor(() => receiver.requests.length >= 5, 10_000, 'the first deliveries');
    proxy.cut();
    const during: number[] = [];
    for (const request of [
      { method: 'POST' as const, url: '/api/jobs/dispatch', payload: { payload: { during: true } } },
      { method: 'GET' as const, url: `/api/jobs/${acknowledged[0]}` },
      { method: 'GET' as const, url: '/api/jobs' },
    ]) {
      const began = Date.now();
      const res = await t.api(p.key, request);
      expect(Date.now() - began).toBeLessThan(10_000);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ error: 'UNAVAILABLE', data: { message: expect.any(String) } });
      expect(res.headers['retry-after']).toBe('1');
      during.push(res.statusCode);
    }
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    proxy.restore();

    await receiver.waitFor(() => acknowledged.every((id) => receiver.forJob(id).length > 0), 60_000, 'every acknowledged job');
    const deadline = Date.now() + 10_000;
    while ((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode !== 200) {
      if (Date.now() > deadline) throw new Error('readyz never recovered');
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { after: true } } });
    expect(after.statusCode).toBe(201);
    expect(during).toEqual([503, 503, 503]);
  }, 90_000);
});
