import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_STORE } from '../support/make-app.js';
import { ReceiverProcess } from '../support/receiver-process.js';
import { REDIS_TEST_URL, redisAvailable } from '../support/redis.js';
import { projectByCli, runCli, sharedDatabase } from '../support/spawn-punctual.js';

const JOBS = 1_000;
const RATE = 50;

/**
 * SPEC section 11: a project's deliveryRatePerSecond holds across instances through Redis. Two
 * `punctual serve` processes on one PostgreSQL with one REDIS_URL, 1,000 jobs due at once at 50 a
 * second: they arrive over 20 s (± 5%), every one once, none early.
 */
describe.runIf(TEST_STORE === 'postgres')('a delivery rate held by two instances through Redis', () => {
  const database = sharedDatabase();
  let receiver: ReceiverProcess;

  beforeAll(async () => {
    expect(await redisAvailable()).toBe(true);
    receiver = await new ReceiverProcess().start();
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.stop();
  });

  it(`delivers ${JOBS} jobs due at once at ${RATE}/s over ${JOBS / RATE} s ± 5%`, { timeout: 90_000 }, async () => {
    // The CLI works on the database alone; the servers share Redis.
    const cliEnv = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'rate-instances-secret-key-0123456789', LOG_LEVEL: 'warn' };
    const { projectId, key } = projectByCli(cliEnv, receiver.url);
    expect(runCli(['projects', 'update', projectId, '--json', JSON.stringify({ deliveryRatePerSecond: RATE })], cliEnv).status).toBe(0);
    const bases: string[] = [];
    for (let i = 0; i < 2; i++) {
      bases.push((await database.start({ ...cliEnv, REDIS_URL: REDIS_TEST_URL, PUNCTUAL_ADMIN_TOKEN: 'rate-instances-admin-0123' })).base);
    }
    const due = Date.now() + 2_000;
    const ids = new Set<string>();
    for (let b = 0; b < JOBS / 100; b++) {
      const jobs = Array.from({ length: 100 }, (_, i) => ({ payload: { n: b * 100 + i }, scheduledFor: new Date(due).toISOString() }));
      const res = await fetch(`${bases[b % 2]}/api/jobs/dispatch/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ jobs }),
      });
      expect(res.status).toBe(200);
      for (const answer of ((await res.json()) as { jobs: { jobId: string }[] }).jobs) ids.add(answer.jobId);
    }
    const deadline = Date.now() + 60_000;
    let arrivals = await receiver.arrivals();
    while (new Set(arrivals.map((a) => a.jobId)).size < JOBS && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      arrivals = await receiver.arrivals();
    }
    expect(new Set(arrivals.map((a) => a.jobId))).toEqual(ids);
    expect(arrivals).toHaveLength(JOBS);
    const times = arrivals.map((a) => a.arrivedAt).sort((a, b) => a - b);
    expect(times[0]!).toBeGreaterThanOrEqual(due);
    const span = times[JOBS - 1]! - times[0]!;
    const expected = ((JOBS - 1) / RATE) * 1000;
    console.log(`[rate ${RATE}/s on 2 instances] ${JOBS} jobs arrived over ${span} ms (expected ${expected} ms ± 5%)`);
    expect(span).toBeGreaterThanOrEqual(expected * 0.95);
    expect(span).toBeLessThanOrEqual(expected * 1.05);
  });
});
