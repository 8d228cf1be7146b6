import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeAppBehindProxy } from '../support/app-behind-proxy.js';
import type { CuttableProxy } from '../support/cuttable-proxy.js';
import { TEST_STORE, type TestApp } from '../support/make-app.js';
import { PG_TEST_URL } from '../support/postgres.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

/**
 * The local cluster, restarted with Debian's pg_ctlcluster (fast mode: every client is cut, the
 * server refuses connections while it starts). Null with the reason where that cannot be done here.
 */
function restartPostgres(): string | null {
  const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql') : [];
  if (versions.length === 0) return 'no Debian PostgreSQL cluster (/etc/postgresql) on this machine';
  const run = spawnSync('pg_ctlcluster', ['--skip-systemctl-redirect', versions[0]!, 'main', 'restart'], { encoding: 'utf8' });
  if (run.error) return run.error.message;
  return run.status === 0 ? null : `pg_ctlcluster exited ${run.status}: ${run.stderr.trim()}`;
}

/**
 * PostgreSQL failing under load: every connection of this app is terminated (pg_terminate_backend)
 * three times, the server itself is restarted (the fault suite runs one file at a time, so no
 * other test shares the server meanwhile), then the network to it is cut for a while. Meanwhile
 * clients keep dispatching: each answer is a 201 or a 503 UNAVAILABLE with Retry-After (never a
 * 500, never a hang), the app recovers by itself, and every acknowledged job is delivered.
 */
describe.runIf(TEST_STORE === 'postgres')('PostgreSQL connections terminated, the server restarted, the network cut, mid-run', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;
  let proxy: CuttableProxy;
  let admin: pg.Client;
  const applicationName = `punctual_faults_${process.pid}_${Date.now()}`;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    // Named, so that only this app's connections are terminated.
    ({ t, proxy } = await makeAppBehindProxy({ applicationName }));
    admin = await adminClient();
  });
  afterAll(async () => {
    proxy.restore();
    await admin.end();
    await t.close();
    await proxy.close();
    await receiver.close();
  });

  /** The test's own connection; a restart ends it with an error event, which is expected. */
  const adminClient = async () => {
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    client.on('error', () => {});
    await client.connect();
    return client;
  };
  const terminateAppConnections = async () =>
    (await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [applicationName])).rowCount ?? 0;

  it('answers 201 or 503 with Retry-After throughout, recovers by itself, and delivers everything acknowledged', { timeout: 120_000 }, async () => {
    // Short leases (1 s timeout + 30 s): a job claimed just before a connection died waits out its
    // lease before another claim, which bounds how late the last deliveries come.
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryTimeoutMs: 1_000, retryPolicy: { initialDelayMs: 100 } } });
    const acknowledged: string[] = [];
    const answers = new Map<number, number>();
    let running = true;
    const client = async () => {
      for (let i = 0; running; i++) {
        const began = Date.now();
        const res = await t.api(p.key, {
          method: 'POST',
          url: '/api/jobs/dispatch',
          payload: { payload: { i }, scheduledFor: new Date(Date.now() + Math.random() * 500).toISOString() },
        });
        expect(Date.now() - began, 'an answer within bounded time').toBeLessThan(10_000);
        answers.set(res.statusCode, (answers.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode === 201) acknowledged.push(res.json().jobId);
        else {
          expect(res.statusCode, res.body).toBe(503);
          expect(res.json()).toMatchObject({ error: 'UNAVAILABLE', data: { message: expect.any(String) } });
          expect(res.headers['retry-after']).toBe('1');
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const clients = [client(), client()];
    const waitForMoreAcknowledged = async (count: number) => {
      const target = acknowledged.length + count;
      await eventually(() => acknowledged.length >= target, { what: `recovery (answers so far: ${JSON.stringify([...answers])})`, withinMs: 20_000, everyMs: 20 });
    };

    let terminated = 0;
    for (let round = 0; round < 3; round++) {
      await waitForMoreAcknowledged(20);
      terminated += await terminateAppConnections();
    }
    await waitForMoreAcknowledged(20);
    const restartProblem = restartPostgres();
    if (restartProblem) {
      if (process.env.CI) throw new Error(`could not restart PostgreSQL in CI: ${restartProblem}`);
      console.warn(`SKIPPING the PostgreSQL restart round: ${restartProblem}`);
    } else {
      // The restart cut the admin connection too.
      await admin.end().catch(() => {});
      admin = await adminClient();
      await waitForMoreAcknowledged(20);
    }
    proxy.cut();
    const readyDuringCut = await t.app.inject({ method: 'GET', url: '/readyz' });
    await new Promise((r) => setTimeout(r, 2_000)); // the outage lasts a while; answers are asserted by the clients
    proxy.restore();
    await waitForMoreAcknowledged(20);
    running = false;
    await Promise.all(clients);

    const delivered = () => acknowledged.filter((id) => receiver.forJob(id).length > 0).length;
    await receiver.waitFor(() => delivered() === acknowledged.length, 60_000, `every acknowledged job to be delivered`).catch(async (error: Error) => {
      const statuses = await t.store.jobCountByStatus();
      throw new Error(`${error.message}: ${delivered()} of ${acknowledged.length} delivered; jobs by status ${JSON.stringify(statuses)}`);
    });
    console.log(
      `[postgres outage] ${terminated} connections terminated over 3 rounds, ${restartProblem ? 'no server restart' : 'the server restarted'}, then a 2 s network cut; answers ${[...answers].map(([s, n]) => `${s}×${n}`).join(' ')}; ` +
        `${acknowledged.length} acknowledged, all delivered`,
    );
    expect(terminated).toBeGreaterThan(0);
    expect(readyDuringCut.statusCode).toBe(503);
    expect(answers.get(503) ?? 0).toBeGreaterThan(0);
    expect([...answers.keys()].sort()).toEqual([201, 503]);
  });
});
