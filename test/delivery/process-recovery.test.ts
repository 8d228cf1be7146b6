import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execSql, queryRows } from '../support/job-fixtures.js';
import { testDatabase } from '../support/make-app.js';
import { freePort, startServer, type RunningServer } from '../support/spawn-punctual.js';
import { TestReceiver } from '../support/receiver.js';
import { makeTempDir } from '../support/temp-dir.js';

/** A real server process, a real receiver, a real kill. */
describe('crash recovery and graceful shutdown (real processes)', () => {
  const dir = makeTempDir();
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
  });
  const databases = new Map<string, string>();
  const drops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await receiver.close();
    for (const drop of drops) await drop();
    dir.remove();
  });

  async function boot(
    dbName: string,
    logLevel = 'warn',
    extraEnv: Record<string, string> = {},
    settings: Record<string, unknown> = {},
  ): Promise<{ server: RunningServer; base: string; key: string; env: Record<string, string> }> {
    const port = await freePort();
    const database = await testDatabase(join(dir.path, dbName));
    databases.set(dbName, database.url);
    drops.push(database.drop);
    const env = {
      DATABASE_URL: database.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: logLevel,
      PUNCTUAL_SECRET_KEY: 'process-test-secret-key-0123456789abc',
      ...extraEnv,
    };
    const server = startServer(env);
    const key = (await server.waitForOutput(/API key\s+(pk_[A-Za-z0-9]+)/))[1]!;
    const admin = (await server.waitForOutput(/Admin token\s+(adm_[A-Za-z0-9]+)/))[1]!;
    const projectId = (await server.waitForOutput(/Project\s+(prj_[A-Za-z0-9]+)/))[1]!;
    const base = `http://127.0.0.1:${port}`;
    const patched = await fetch(`${base}/manage/v1/projects/${projectId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhookUrl: receiver.url, deliveryConcurrency: 200, retryPolicy: { initialDelayMs: 100 }, ...settings }),
    });
    expect(patched.status).toBe(200);
    return { server, base, key, env };
  }

  async function dispatchBatch(base: string, key: string, jobs: unknown[]): Promise<string[]> {
    const res = await fetch(`${base}/api/jobs/dispatch/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jobs }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { jobs: { jobId: string }[] };
    return body.jobs.map((j) => j.jobId);
  }

  // The embedded store takes over a dead process's leases at start; PostgreSQL (other instances
  // may be alive) waits for them to expire: the lease margin is 30 s.
  it('kill -9 with deliveries in flight: every acknowledged job is delivered, duplicates only for attempts under way', { timeout: 90_000 }, async () => {
    receiver.answer({ status: 200, delayMs: 300 });
    const { server, base, key, env } = await boot('crash.db', 'warn', {}, { deliveryTimeoutMs: 1000 });
    const acknowledged: string[] = [];
    const start = Date.now();
    for (let batch = 0; batch < 4; batch++) {
      const jobs = Array.from({ length: 100 }, (_, i) => ({ payload: { batch, i }, scheduledFor: new Date(start + 200 + (batch * 100 + i) * 4).toISOString() }));
      acknowledged.push(...(await dispatchBatch(base, key, jobs)));
    }
    await receiver.waitFor(() => receiver.requests.length >= 60, 10_000, 'deliveries before the kill');
    server.child.kill('SIGKILL');
    await server.stop('SIGKILL');
    // The attempts a kill can repeat: sent (STARTED is committed before a request leaves) and not recorded.
    const inFlightAtKill = new Set(
      (await queryRows<{ id: string }>(databases.get('crash.db')!, "SELECT id FROM jobs WHERE status = 'STARTED'")).map((row) => row.id),
    );

    // On PostgreSQL the restarted instance waits for the dead one's leases to expire (its timeout
    // plus the 30 s margin): they are expired here instead, as that much time passing would.
    await execSql(databases.get('crash.db')!, "UPDATE jobs SET lease_expires_at = $1 WHERE status IN ('DISPATCHED', 'STARTED')", [Date.now() - 1]);
    const restarted = startServer(env);
    try {
      await receiver.waitFor(
        () => acknowledged.every((id) => receiver.forJob(id).length > 0),
        60_000,
        'every acknowledged job to arrive after the restart',
      );
      const counts = new Map<string, number>();
      for (const r of receiver.requests) counts.set(r.json.jobId as string, (counts.get(r.json.jobId as string) ?? 0) + 1);
      const duplicated = acknowledged.filter((id) => (counts.get(id) ?? 0) > 1);
      // A duplicate is only allowed for a job whose attempt was under way at the kill, and only once.
      expect(duplicated.filter((id) => !inFlightAtKill.has(id))).toEqual([]);
      expect(duplicated.filter((id) => counts.get(id)! > 2)).toEqual([]);
      // And everything ends COMPLETED.
      const deadline = Date.now() + 15_000;
      for (;;) {
        const [row] = await queryRows<{ n: number }>(databases.get('crash.db')!, "SELECT count(*) AS n FROM jobs WHERE status <> 'COMPLETED'");
        const left = Number(row!.n);
        if (left === 0) break;
        if (Date.now() > deadline) throw new Error(`${left} jobs not COMPLETED`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await restarted.stop('SIGKILL');
    }
  });

  it('SIGTERM lets in-flight deliveries finish, refuses new requests, and exits 0', async () => {
    receiver.answer({ status: 200, delayMs: 1500 });
    const before = receiver.requests.length;
    const { server, base, key } = await boot('shutdown.db', 'info');
    const ids = await dispatchBatch(base, key, Array.from({ length: 5 }, (_, i) => ({ payload: { i } })));
    await receiver.waitFor(() => receiver.requests.length >= before + 5, 10_000, 'five deliveries in flight');
    const stopping = server.stop('SIGTERM');
    await server.waitForOutput(/shutting down/);
    const refused = await fetch(`${base}/api/jobs`, { headers: { authorization: `Bearer ${key}` } }).then(
      (res) => res.status,
      () => 'connection refused',
    );
    expect([503, 'connection refused']).toContain(refused);
    expect(await stopping).toBe(0);
    const rows = await queryRows<{ id: string; status: string }>(databases.get('shutdown.db')!, 'SELECT id, status FROM jobs');
    expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'COMPLETED'));
    for (const id of ids) expect(receiver.forJob(id)).toHaveLength(1);
  });

  it('at the drain deadline, aborts the attempts still running and queues them again without spending a retry', async () => {
    receiver.answer({ hang: true });
    const before = receiver.requests.length;
    const { server, base, key, env } = await boot('abort.db', 'info', { PUNCTUAL_SHUTDOWN_DRAIN_MS: '500' });
    const [jobId] = await dispatchBatch(base, key, [{ payload: { slow: true }, maxRetries: 0 }]);
    await receiver.waitFor(() => receiver.requests.length > before, 10_000, 'the delivery in flight');
    const started = Date.now();
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(server.output()).toMatch(/"drained":false/);
    const url = databases.get('abort.db')!;
    expect(await queryRows(url, 'SELECT status, attempt_count AS n FROM jobs WHERE id = $1', [jobId])).toEqual([{ status: 'QUEUED', n: 1 }]);
    expect(await queryRows(url, 'SELECT outcome, error FROM attempts WHERE job_id = $1', [jobId])).toEqual([
      { outcome: 'network_error', error: 'aborted: the instance shut down before the answer came' },
    ]);
    // Restarted with a receiver that answers, the job (maxRetries 0) still gets its one real attempt.
    receiver.answer({ status: 200 });
    const again = startServer(env);
    try {
      await receiver.waitFor(() => receiver.forJob(jobId!).length === 2, 10_000, 'the released job to be delivered again');
      expect(receiver.forJob(jobId!).map((r) => r.json.attemptNumber)).toEqual([1, 1]);
    } finally {
      await again.stop();
    }
  });
});
