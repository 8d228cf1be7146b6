import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, SECOND, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/** The backoff schedule through the whole pipeline, with an injected clock and jitter fixed at 5%. */
describe('retry schedule (injected clock)', () => {
  let t: TestApp;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer({ status: 500, body: 'nope' });
    t = await makeTestApp({ delivery: true, random: () => 0.5 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('waits 31.5 s, 126 s, 504 s between attempts, then FAILED, never early', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId as string;
    const job = () => t.store.jobGet({ projectId: p.projectId, jobId });
    /** Polls until n attempts are STARTED (or, with `done`, have an outcome). */
    const attemptsReach = async (n: number, done: boolean) => {
      const deadline = Date.now() + 5000;
      while ((await t.store.attemptListByJob(jobId)).filter((a) => !done || a.outcome !== null).length < n) {
        if (Date.now() > deadline) throw new Error(`attempt ${n} did not ${done ? 'finish' : 'start'}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const start = t.clock.now();
    await t.engine!.claimLoop.tick();
    await attemptsReach(1, true);
    let expectedAt = start;
    for (const [attempt, wait] of [[2, 31.5 * SECOND], [3, 126 * SECOND], [4, 504 * SECOND]] as const) {
      expectedAt += wait;
      expect(await job()).toMatchObject({ status: 'QUEUED', runAt: expectedAt });
      t.clock.set(expectedAt - 1);
      await t.engine!.claimLoop.tick();
      // Claimed and STARTED (a held job starts a little ahead of its time), but not sent while the
      // clock stands 1 ms before the due time, however long that is in real time.
      await attemptsReach(attempt, false);
      await new Promise((r) => setTimeout(r, 50));
      expect(receiver.forJob(jobId).length).toBe(attempt - 1);
      t.clock.set(expectedAt);
      await t.engine!.claimLoop.tick();
      await attemptsReach(attempt, true);
    }
    expect(await job()).toMatchObject({ status: 'FAILED', attemptCount: 4, lastError: 'HTTP 500', failedAt: expectedAt });
    expect(receiver.forJob(jobId).map((r) => r.json.attemptNumber)).toEqual([1, 2, 3, 4]);
  });
});
