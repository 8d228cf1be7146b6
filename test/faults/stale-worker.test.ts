import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDeliveryEngine } from '../../src/runtime.js';
import { execSql, queryRows } from '../support/job-fixtures.js';
import { makeTestApp, SECOND, TEST_STORE, testDatabase } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { freePort, startFirstServer, startServer, waitUntilReady, type RunningServer } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';
import { eventually } from '../support/eventually.js';

/** Polls `read` until `done` holds for its value, failing after `timeoutMs` with `what`. */
const attemptRows = (databaseUrl: string, jobId: string) =>
  queryRows<{ n: number; outcome: string | null }>(databaseUrl, 'SELECT attempt_number AS n, outcome FROM attempts WHERE job_id = $1 ORDER BY started_at, attempt_number', [jobId]);

/**
 * SPEC section 3: "A result from a worker that lost its lease changes nothing." A worker is stopped
 * mid-attempt past its lease, another takes the job over and delivers it, then the first one wakes
 * up and reports its late result: the job's state and attempt history stay as the second left them.
 */
describe(`stale worker (${TEST_STORE})`, () => {
  const dir = makeTempDir();
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    dir.remove();
  });

  it.runIf(TEST_STORE === 'postgres')(
    'PostgreSQL: a `punctual serve` SIGSTOPped past its lease while another instance delivers the job; after SIGCONT its late result changes nothing',
    { timeout: 120_000 },
    async () => {
      const receiver = await new TestReceiver().start();
      cleanups.push(() => receiver.close());
      // The first attempt never answers; the worker that sent it is frozen before its 1 s timeout.
      receiver.answer((request) => (request.json.attemptNumber === 1 ? { hang: true } : { status: 200, body: 'ok' }));
      const database = await testDatabase(join(dir.path, 'unused.db'));
      cleanups.push(database.drop);
      const env = { DATABASE_URL: database.url, HOST: '127.0.0.1', LOG_LEVEL: 'warn', PUNCTUAL_SECRET_KEY: 'stale-worker-secret-key-0123456789abcd' };
      const portA = await freePort();
      const first = await startFirstServer({ ...env, PORT: String(portA) }, { webhookUrl: receiver.url, deliveryTimeoutMs: 1_000, retryPolicy: { initialDelayMs: 100 } });
      const servers: RunningServer[] = [first.server];
      cleanups.push(async () => {
        for (const server of servers) {
          server.child.kill('SIGCONT');
          await server.stop('SIGKILL');
        }
      });

      const dispatched = await fetch(`${first.base}/api/jobs/dispatch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${first.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { stale: true }, maxRetries: 2 }),
      });
      const { jobId } = (await dispatched.json()) as { jobId: string };
      await receiver.waitFor(() => receiver.forJob(jobId).length === 1, 10_000, 'the first attempt');
      first.server.child.kill('SIGSTOP');
      // Its lease (1 s timeout + 30 s) expires: set in the database, as that much time passing would.
      await execSql(database.url, 'UPDATE jobs SET lease_expires_at = $1 WHERE id = $2', [Date.now() - 1, jobId]);

      // The second instance rescues the expired lease and retries.
      const portB = await freePort();
      const second = startServer({ ...env, PORT: String(portB) });
      servers.push(second);
      await waitUntilReady(`http://127.0.0.1:${portB}`);
      await receiver.waitFor(() => receiver.forJob(jobId).length === 2, 60_000, 'the second instance to deliver the job');
      const settled = await eventually(() => attemptRows(database.url, jobId), {
        what: 'the second attempt to be recorded',
        until: (rows) => rows.length === 2 && rows[1]!.outcome === 'success',
        everyMs: 50,
      });
      expect(settled).toEqual([{ n: 1, outcome: 'lease_expired' }, { n: 2, outcome: 'success' }]);

      // Woken up, the first instance times out its request and tries to record that result: the
      // store refuses it (the lease is gone), so it is counted as ignored, not as an attempt.
      first.server.child.kill('SIGCONT');
      const metrics = await eventually(() => fetch(`${first.base}/metrics`).then((r) => r.text()), {
        what: 'the stale worker to report its late result',
        until: (text) => /punctual_attempt_results_ignored_total 1/.test(text),
        withinMs: 20_000,
        everyMs: 50,
      });
      expect(metrics).not.toMatch(/punctual_attempts_total\{outcome="(timeout|network_error)"\}/);
      expect(await attemptRows(database.url, jobId)).toEqual(settled);
      expect(await queryRows(database.url, 'SELECT status, attempt_count AS attempts FROM jobs WHERE id = $1', [jobId])).toEqual([{ status: 'COMPLETED', attempts: 2 }]);
      expect(receiver.forJob(jobId).map((r) => r.json.attemptNumber)).toEqual([1, 2]);
    },
  );

  it.runIf(TEST_STORE === 'sqlite')(
    'SQLite (one process serves a file): worker A loses its lease mid-attempt, worker B delivers, and A\'s late 200 changes nothing (injected clock)',
    async () => {
      const receiver = await new TestReceiver().start();
      cleanups.push(() => receiver.close());
      const t = await makeTestApp({ random: () => 0.5 });
      cleanups.push(() => t.close());
      // Two delivery engines (two worker ids) on one store, driven tick by tick instead of started.
      const workerA = createDeliveryEngine(t.runtime, t.app.log, () => 0.5);
      const workerB = createDeliveryEngine(t.runtime, t.app.log, () => 0.5);
      const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { initialDelayMs: SECOND } } });
      let releaseFirstAttempt: () => void = () => {};
      const firstAttemptReleased = new Promise<void>((resolve) => (releaseFirstAttempt = resolve));
      receiver.answer((request) => (request.json.attemptNumber === 1 ? { status: 200, body: 'late', held: firstAttemptReleased } : { status: 200, body: 'ok' }));
      const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, maxRetries: 1 } })).json().jobId as string;

      await workerA.claimLoop.tick();
      await receiver.waitFor(() => receiver.forJob(jobId).length === 1, 5_000, 'worker A\'s attempt');
      // Past A's lease (30 s timeout + 30 s): B's rescuer records the lost attempt; B retries.
      t.clock.advance(60 * SECOND + 1);
      expect(await workerB.rescuer.tick()).toBe(1);
      t.clock.advance(1.05 * SECOND);
      await workerB.claimLoop.tick();
      await receiver.waitFor(() => receiver.forJob(jobId).length === 2, 5_000, 'worker B\'s attempt');
      const settled = await eventually(() => attemptRows(t.databaseUrl, jobId), {
        what: "B's attempt to be recorded",
        until: (rows) => rows[1]?.outcome === 'success',
        withinMs: 5_000,
        everyMs: 50,
      });
      expect(settled).toEqual([{ n: 1, outcome: 'lease_expired' }, { n: 2, outcome: 'success' }]);
      const completed = await t.store.jobGet({ projectId: p.projectId, jobId });

      // A's request finally gets its 200: the worst case, a success from a worker that lost the job.
      releaseFirstAttempt();
      await eventually(async () => (await t.runtime.metrics.lateResultsIgnored.get()).values[0]?.value ?? 0, {
        what: 'A to report its late success',
        until: (n) => n === 1,
        withinMs: 5_000,
        everyMs: 50,
      });
      expect(await attemptRows(t.databaseUrl, jobId)).toEqual(settled);
      // Counted once each: A's attempt as the rescuer's lease_expired, B's as its success.
      const outcomes = Object.fromEntries((await t.runtime.metrics.attempts.get()).values.map((v) => [v.labels.outcome, v.value]));
      expect(outcomes).toEqual({ lease_expired: 1, success: 1 });
      expect(await t.store.jobGet({ projectId: p.projectId, jobId })).toEqual(completed);
      expect(completed).toMatchObject({ status: 'COMPLETED', attemptCount: 2 });
    },
  );
});
