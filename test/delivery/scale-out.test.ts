import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_STORE } from '../support/make-app.js';
import { ReceiverProcess } from '../support/receiver-process.js';
import { projectByCli, sharedDatabase } from '../support/spawn-punctual.js';

const INSTANCES = Number(process.env.SCALE_INSTANCES ?? 3);
/**
 * 200 jobs a second across the instances: on a slow 2-vCPU machine (2026-11-29), three instances
 * beside PostgreSQL, the receiver and the test at 500 a second fell behind in the first second of
 * deliveries (its jobs up to 1.7-4.2 s late, the code before that day too) and caught up after
 * three: a capacity limit, recorded in BENCHMARKS.md, not a correctness one. SCALE_JOBS and
 * SCALE_SPREAD_MS set another load.
 */
const JOBS = Number(process.env.SCALE_JOBS ?? 3_000);
const SPREAD_MS = Number(process.env.SCALE_SPREAD_MS ?? 15_000);

/**
 * Three `punctual serve` processes on one PostgreSQL database, jobs dispatched through all of
 * them: each job is delivered exactly once (no instance dies, so no lease expires), and on time
 * as SPEC section 3 promises (first attempt within a second). Lateness figures are printed; the
 * benchmarks measure them properly.
 */
describe.runIf(TEST_STORE === 'postgres')('several instances on one database', () => {
  const database = sharedDatabase();
  let receiver: ReceiverProcess;

  beforeAll(async () => {
    receiver = await new ReceiverProcess().start();
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.stop();
  });

  it(`delivers ${JOBS} jobs spread over ${SPREAD_MS / 1000} s exactly once across ${INSTANCES} instances`, { timeout: 120_000 }, async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'scale-out-test-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: 'scale-out-admin-token-0123', LOG_LEVEL: 'warn' };
    const { key } = projectByCli(env, receiver.url);
    const bases: string[] = [];
    for (let i = 0; i < INSTANCES; i++) {
      bases.push((await database.start(env)).base);
    }

    const start = Date.now() + 2_000;
    const due = new Map<string, number>();
    for (let batch = 0; batch < JOBS / 100; batch++) {
      const jobs = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        return { payload: { n }, scheduledFor: new Date(start + Math.floor((n / JOBS) * SPREAD_MS)).toISOString() };
      });
      const res = await fetch(`${bases[batch % INSTANCES]}/api/jobs/dispatch/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jobs }),
      });
      expect(res.status).toBe(200);
      const answers = ((await res.json()) as { jobs: { jobId: string }[] }).jobs;
      answers.forEach((answer, i) => due.set(answer.jobId, Date.parse(jobs[i]!.scheduledFor)));
    }
    expect(Date.now()).toBeLessThan(start); // every job was acknowledged before its time

    const deadline = Date.now() + 60_000;
    while ((await receiver.arrivals()).length < JOBS) {
      if (Date.now() > deadline) throw new Error(`only ${(await receiver.arrivals()).length} of ${JOBS} deliveries arrived`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Give any duplicate time to show up before counting.
    await new Promise((r) => setTimeout(r, 1_000));
    const arrivals = await receiver.arrivals();
    const counts = new Map<string, number>();
    for (const a of arrivals) counts.set(a.jobId, (counts.get(a.jobId) ?? 0) + 1);
    expect(counts.size).toBe(JOBS);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect([...due.keys()].every((id) => counts.get(id) === 1)).toBe(true);

    const lateness = arrivals.map((a) => a.arrivedAt - due.get(a.jobId)!).sort((a, b) => a - b);
    const at = (q: number) => lateness[Math.min(lateness.length - 1, Math.floor(q * lateness.length))]!;
    console.log(`scale-out: ${INSTANCES} instances, ${JOBS} jobs: lateness p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${lateness.at(-1)} ms`);
    expect(lateness[0]).toBeGreaterThanOrEqual(0); // never early
    // A correctness bound, not a speed goal: SPEC section 3 promises that under normal load a job's
    // first attempt starts within one second of its time. How fast it really is (milliseconds) is
    // measured by the benchmarks (bench:lateness, BENCHMARKS.md), never asserted in a test.
    expect(lateness.at(-1)).toBeLessThan(1_000);
  });
});
