import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * One project pointed at a receiver that never answers, with a concurrency above the instance's
 * slots and the longest timeout, must not hold up another project's deliveries (docs/guarantees.md
 * section 9): a project uses at most half of an instance's slots (capacity-rules.ts, projectShare).
 */
describe('one tenant cannot take every delivery slot', () => {
  let t: TestApp<typeof systemClock>;
  let stuck: TestReceiver;
  let healthy: TestReceiver;

  beforeAll(async () => {
    stuck = await new TestReceiver().start();
    stuck.answer({ hang: true });
    healthy = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true, env: { PUNCTUAL_DELIVERY_CONCURRENCY: '8' } });
  });
  afterAll(async () => {
    await t.close();
    await stuck.close();
    await healthy.close();
  });

  it("delivers another project's jobs at once while one project's receiver hangs with every request it can send", async () => {
    const hog = await t.makeProject({ webhookUrl: stuck.url, settings: { deliveryConcurrency: 1_000, deliveryTimeoutMs: 300_000 } });
    const other = await t.makeProject({ webhookUrl: healthy.url });
    const dispatch = (key: string) => t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    for (let i = 0; i < 30; i++) expect((await dispatch(hog.key)).statusCode).toBe(201);
    // The hog's receiver holds as many requests as it will ever get: half the instance's 8 slots.
    await stuck.waitFor(() => stuck.inFlight === 4, 5_000, 'four hung requests');
    const started = Date.now();
    const jobs: string[] = [];
    for (let i = 0; i < 10; i++) jobs.push((await dispatch(other.key)).json().jobId as string);
    await healthy.waitFor(() => jobs.every((jobId) => healthy.forJob(jobId).length === 1), 5_000, "the other project's ten jobs");
    expect(Date.now() - started).toBeLessThan(5_000);
    // Never more than its share, however long it waits.
    expect(stuck.inFlight).toBe(4);
    expect(stuck.requests.length).toBe(4);
  });
});
