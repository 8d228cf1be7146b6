import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { execSql, queryRows } from '../support/job-fixtures.js';
import { TEST_STORE } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { projectByCli, runCli, sharedDatabase, type RunningServer } from '../support/spawn-punctual.js';

const KEYS = 200;
const JOBS_PER_KEY = 5;

/**
 * SPEC section 15's strict order across instances: three `punctual serve` on one PostgreSQL, 200
 * keys at keyConcurrency 1, five jobs each, some failing once (their retry holds the key), one
 * instance killed with SIGKILL mid-run. Every key's deliveries come in dispatch order (a job is
 * sent again only when its own attempt may have been lost, never after a later job of its key),
 * and every job is delivered and COMPLETED.
 */
describe.runIf(TEST_STORE === 'postgres')('strict order per key across three instances, one killed (postgres)', () => {
  const shared = sharedDatabase('SIGKILL');
  let receiver: TestReceiver;
  const env = { PUNCTUAL_SECRET_KEY: 'key-order-secret-key-0123456789abcdef', PUNCTUAL_ADMIN_TOKEN: 'key-order-admin-0123456789', LOG_LEVEL: 'warn' };

  beforeAll(async () => {
    await shared.setUp();
    receiver = await new TestReceiver().start();
    // A job of every tenth key fails its first attempt: its key waits for its retry.
    receiver.answer((request) => {
      const { key, n } = request.json.payload as { key: number; n: number };
      const first = receiver.forJob(request.json.jobId as string).length === 1;
      return key % 10 === 0 && n === 2 && first ? { status: 500, delayMs: 5 } : { status: 200, delayMs: 5 };
    });
  });
  afterAll(async () => {
    await shared.tearDown();
    await receiver.close();
  });

  it("delivers each key's jobs in order and loses none", async () => {
    const fullEnv = { ...env, DATABASE_URL: shared.url };
    const { projectId, key } = projectByCli(fullEnv, receiver.url);
    // A lease of 31 s: the killed instance's jobs hold their keys until it lapses, then are rescued.
    const settings = { keyConcurrency: 1, deliveryTimeoutMs: 1_000, retryPolicy: { maxRetries: 3, initialDelayMs: 200, factor: 1 } };
    expect(runCli(['projects', 'update', projectId, '--json', JSON.stringify(settings)], fullEnv).status).toBe(0);
    const instances: { server: RunningServer; base: string }[] = [];
    for (let i = 0; i < 3; i += 1) instances.push(await shared.start(env));

    // Job n of every key in batches of 100, batch after batch, each to another instance: a key's jobs are created in order.
    const jobOf = new Map<string, { key: number; n: number }>();
    let batch = 0;
    for (let n = 0; n < JOBS_PER_KEY; n += 1) {
      for (let from = 0; from < KEYS; from += 100) {
        const jobs = Array.from({ length: 100 }, (_, i) => ({ payload: { key: from + i, n }, concurrencyKey: `customer-${from + i}` }));
        const res = await fetch(`${instances[batch++ % 3]!.base}/api/jobs/dispatch/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ jobs }),
        });
        expect(res.status).toBe(200);
        const answers = ((await res.json()) as { jobs: { jobId: string }[] }).jobs;
        answers.forEach((answer, i) => jobOf.set(answer.jobId, { key: from + i, n }));
      }
    }
    await receiver.waitFor(() => receiver.requests.length >= 300, 60_000, '300 deliveries');
    await instances[1]!.server.stop('SIGKILL');
    await expireLeasesOfTheKilled(shared.url);

    const survivor = instances[0]!.base;
    const unfinished = async () => {
      let n = 0;
      for (const status of ['QUEUED', 'DISPATCHED', 'STARTED']) {
        const res = await fetch(`${survivor}/api/jobs?status=${status}&limit=100`, { headers: { authorization: `Bearer ${key}` } });
        n += ((await res.json()) as { jobs: unknown[] }).jobs.length;
      }
      return n;
    };
    try {
      await eventually(unfinished, { what: 'every job final', until: (n) => n === 0, withinMs: 60_000, everyMs: 500 });
    } catch (error) {
      // What is left, by key and job: a key held by nothing shows here.
      for (const status of ['QUEUED', 'DISPATCHED', 'STARTED']) {
        const res = await fetch(`${survivor}/api/jobs?status=${status}&limit=100`, { headers: { authorization: `Bearer ${key}` } });
        const jobs = ((await res.json()) as { jobs: { jobId: string; status: string; attemptCount: number; nextAttemptAt: string | null; concurrencyKey: string }[] }).jobs;
        console.log(status, JSON.stringify(jobs.map((j) => [j.concurrencyKey, jobOf.get(j.jobId)?.n, j.attemptCount, j.nextAttemptAt])));
      }
      console.log('now', new Date().toISOString());
      throw error;
    }

    const byKey = new Map<number, number[]>();
    for (const request of receiver.requests) {
      const job = jobOf.get(request.json.jobId as string)!;
      byKey.set(job.key, [...(byKey.get(job.key) ?? []), job.n]);
    }
    for (let k = 0; k < KEYS; k += 1) {
      const sequence = byKey.get(k) ?? [];
      // In order: a job of the key is sent only once every earlier one is final (repeats are its own retries).
      expect(sequence.every((n, i) => i === 0 || n >= sequence[i - 1]!), `key ${k}: ${sequence.join(',')}`).toBe(true);
      // None lost: every job of the key delivered.
      expect(new Set(sequence).size, `key ${k}: ${sequence.join(',')}`).toBe(JOBS_PER_KEY);
    }
    for (const jobId of [...jobOf.keys()].slice(0, 50)) {
      const res = await fetch(`${survivor}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } });
      expect(((await res.json()) as { status: string }).status).toBe('COMPLETED');
    }
  });
});

/**
 * Expires the leases the killed instance held, as the 31 s of its lease passing would (the
 * rescue, the retry and the key's hold through it are what the test is about, not the wait).
 * Its rows are known by making no progress: a survivor's attempts end within their 1 s timeout
 * (or their leases are renewed), so 2.5 s after the kill, the one owner whose every leased row
 * is unchanged is the killed one. If that is not exactly one owner, the leases are left to lapse.
 */
async function expireLeasesOfTheKilled(url: string): Promise<void> {
  const leased = async () =>
    new Map(
      (await queryRows<{ id: string; owner: string; expires: string }>(url, "SELECT id, lease_owner AS owner, lease_expires_at::text AS expires FROM jobs WHERE lease_owner IS NOT NULL AND status IN ('DISPATCHED', 'STARTED')")).map(
        (row) => [row.id, `${row.owner} ${row.expires}`],
      ),
    );
  const atKill = await leased();
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const later = await leased();
  const stuck = new Map<string, boolean>();
  for (const [id, lease] of atKill) {
    const owner = lease.split(' ')[0]!;
    stuck.set(owner, (stuck.get(owner) ?? true) && later.get(id) === lease);
  }
  const killed = [...stuck].filter(([, unchanged]) => unchanged).map(([owner]) => owner);
  if (killed.length !== 1) {
    console.log(`${killed.length} lease owners made no progress after the kill: the killed instance's leases are left to lapse`);
    return;
  }
  await execSql(url, "UPDATE jobs SET lease_expires_at = $1 WHERE status IN ('DISPATCHED', 'STARTED') AND lease_owner = $2", [Date.now() - 1, killed[0]]);
}
