import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeAppBehindProxy } from '../support/app-behind-proxy.js';
import type { CuttableProxy } from '../support/cuttable-proxy.js';
import { makeTestApp, TEST_STORE, type TestApp } from '../support/make-app.js';
import { PG_TEST_URL } from '../support/postgres.js';
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

    await receiver.waitFor(() => acknowledged.every((id) => receiver.forJob(id).length > 0), 60_000, 'every acknowledged job').catch(async (error: unknown) => {
      const missing = acknowledged.filter((id) => receiver.forJob(id).length === 0);
      const states = await Promise.all(missing.map(async (jobId) => ({ job: await t.store.jobGet({ projectId: p.projectId, jobId }), attempts: await t.store.attemptListByJob(jobId) })));
      throw new Error(`${(error as Error).message}; not delivered: ${JSON.stringify(states)}`);
    });
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

/**
 * Between a password rotation and the moment every instance has the new password, new connections
 * fail authentication (SQLSTATE class 28). That is the database being out of reach, not a bug in
 * the request: 503 with Retry-After, never 500. Simulated with a role that may not log in for a
 * while, since the test server may trust every local connection whatever its password.
 */
describe.runIf(TEST_STORE === 'postgres')('losing the right to log in', () => {
  it('answers 503 with Retry-After while new connections are refused, then recovers', async () => {
    const role = `punctual_rotation_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG_TEST_URL });
    await admin.connect();
    // A superuser, so that it can migrate the test's schema without a list of grants.
    await admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER`);
    let t: TestApp | undefined;
    try {
      t = await makeTestApp({
        rewriteDatabaseUrl: (url) => {
          const asRole = new URL(url);
          asRole.username = role;
          asRole.password = '';
          return asRole.toString();
        },
      });
      const p = await t.makeProject();
      const dispatch = () => t!.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: 1 } } });
      expect((await dispatch()).statusCode).toBe(201);

      await admin.query(`ALTER ROLE ${role} NOLOGIN`);
      // Its open connections end too, so the pool has to open new ones, which are refused.
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
      // The first answers may come from pooled connections finding out they were ended; the later
      // ones are refused logins (28000).
      for (let i = 0; i < 5; i++) {
        const res = await dispatch();
        expect(res.statusCode).toBe(503);
        expect(res.json()).toMatchObject({ error: 'UNAVAILABLE' });
        expect(res.headers['retry-after']).toBe('1');
      }

      await admin.query(`ALTER ROLE ${role} LOGIN`);
      expect((await dispatch()).statusCode).toBe(201);
    } finally {
      await t?.close();
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });
});
