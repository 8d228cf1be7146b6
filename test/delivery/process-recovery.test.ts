import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  afterAll(async () => {
    await receiver.close();
    dir.remove();
  });

  async function boot(
    dbName: string,
    logLevel = 'warn',
    extraEnv: Record<string, string> = {},
  ): Promise<{ server: RunningServer; base: string; key: string; env: Record<string, string> }> {
    const port = await freePort();
    const env = { DATABASE_URL: `sqlite:${join(dir.path, dbName)}`, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: logLevel, ...extraEnv };
    const server = startServer(env);
    const key = (await server.waitForOutput(/API key\s+(pk_[A-Za-z0-9]+)/))[1]!;
    const admin = (await server.waitForOutput(/Admin token\s+(adm_[A-Za-z0-9]+)/))[1]!;
    const projectId = (await server.waitForOutput(/Project\s+(prj_[A-Za-z0-9]+)/))[1]!;
    const base = `http://127.0.0.1:${port}`;
    const patched = await fetch(`${base}/manage/v1/projects/${projectId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhookUrl: receiver.url, deliveryConcurrency: 200, retryPolicy: { initialDelayMs: 100 } }),
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

  it('kill -9 with deliveries in flight: every acknowledged job is delivered, duplicates only for attempts under way', async () => {
    receiver.answer({ status: 200, delayMs: 300 });
    const { server, base, key, env } = await boot('crash.db');
    const acknowledged: string[] = [];
    const start = Date.now();
    for (let batch = 0; batch < 4; batch++) {
      const jobs = Array.from({ length: 100 }, (_, i) => ({ payload: { batch, i }, scheduledFor: new Date(start + 200 + (batch * 100 + i) * 4).toISOString() }));
      acknowledged.push(...(await dispatchBatch(base, key, jobs)));
    }
    await receiver.waitFor(() => receiver.requests.length >= 60, 10_000, 'deliveries before the kill');
    server.child.kill('SIGKILL');
    await server.stop('SIGKILL');
    const arrivedBeforeKill = new Set(receiver.requests.map((r) => r.json.jobId as string));

    const restarted = startServer(env);
    try {
      await receiver.waitFor(
        () => acknowledged.every((id) => receiver.forJob(id).length > 0),
        30_000,
        'every acknowledged job to arrive after the restart',
      );
      const counts = new Map<string, number>();
      for (const r of receiver.requests) counts.set(r.json.jobId as string, (counts.get(r.json.jobId as string) ?? 0) + 1);
      const duplicated = acknowledged.filter((id) => (counts.get(id) ?? 0) > 1);
      // A duplicate is only allowed for a job whose request had reached the receiver before the kill.
      expect(duplicated.filter((id) => !arrivedBeforeKill.has(id))).toEqual([]);
      expect(duplicated.length).toBeLessThanOrEqual(arrivedBeforeKill.size);
      // And everything ends COMPLETED.
      const deadline = Date.now() + 15_000;
      for (;;) {
        const db = new Database(join(dir.path, 'crash.db'), { readonly: true });
        const left = (db.prepare("SELECT count(*) AS n FROM jobs WHERE status <> 'COMPLETED'").get() as { n: number }).n;
        db.close();
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
    const db = new Database(join(dir.path, 'shutdown.db'), { readonly: true });
    try {
      const rows = db.prepare(`SELECT id, status FROM jobs`).all() as { id: string; status: string }[];
      expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'COMPLETED'));
    } finally {
      db.close();
    }
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
    const db = new Database(join(dir.path, 'abort.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT status, attempt_count AS n FROM jobs WHERE id = ?').get(jobId)).toEqual({ status: 'QUEUED', n: 1 });
      expect(db.prepare('SELECT outcome, error FROM attempts WHERE job_id = ?').get(jobId)).toEqual({
        outcome: 'network_error',
        error: 'aborted: the instance shut down before the answer came',
      });
    } finally {
      db.close();
    }
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
