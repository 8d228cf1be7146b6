import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/** Real time, a real receiver: an every-second schedule's fires arrive at their instants, none early, each once. */
describe('schedule fires delivered', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
    t.services.scheduleFiring.start();
  });
  afterAll(async () => {
    await t.services.scheduleFiring.stop();
    await t.close();
    await receiver.close();
  });

  it('delivers each fire once, at its instant, with scheduleId and scheduledFor in the body', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const res = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '* * * * * *', payload: { tick: true } } });
    expect(res.statusCode).toBe(201);
    const { scheduleId } = res.json() as { scheduleId: string };
    const fires = () => receiver.requests.filter((r) => r.json.scheduleId === scheduleId);
    await receiver.waitFor(() => fires().length >= 3, 10_000, 'three fires');
    await t.api(p.key, { method: 'DELETE', url: `/api/schedules/${scheduleId}`, headers: { 'content-type': 'application/json' } });
    const received = fires();
    const instants = received.map((r) => Date.parse(r.json.scheduledFor as string));
    for (const [i, request] of received.entries()) {
      expect(request.json).toEqual({
        jobId: expect.stringMatching(/^job_/),
        attemptId: expect.stringMatching(/^att_/),
        attempt: 1,
        attemptNumber: 1,
        scheduleId,
        scheduledFor: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
        payload: { tick: true },
      });
      // Never early.
      expect(request.arrivedAt).toBeGreaterThanOrEqual(instants[i]!);
    }
    // One job per fire instant, one second apart.
    expect(new Set(instants).size).toBe(instants.length);
    expect(new Set(received.map((r) => r.json.jobId)).size).toBe(received.length);
  });
});
