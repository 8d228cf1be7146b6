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

  // A fire's job is created 2 s ahead of its instant, claimed by the delivery worker 25 ms ahead
  // and started 10 ms ahead: paused at each of those moments, nothing of it may leave for an
  // instant after the pause answer (SPEC section 9).
  it('pausing stops it at once: nothing is delivered for an instant after the pause answer, even paused a few milliseconds before one', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const send = (method: 'POST' | 'PATCH', url: string, payload: unknown) => t.api(p.key, { method, url, payload: payload as Record<string, unknown> });
    const res = await send('POST', '/api/schedules', { cron: '* * * * * *', catchUp: 'none', payload: { pausing: true } });
    expect(res.statusCode).toBe(201);
    const { scheduleId } = res.json() as { scheduleId: string };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
    const pauses: number[] = [];
    for (const aheadMs of [40, 20, 5]) {
      const instant = Math.ceil((Date.now() + 300) / 1000) * 1000;
      await sleep(instant - aheadMs - Date.now());
      expect((await send('PATCH', `/api/schedules/${scheduleId}`, { paused: true })).statusCode).toBe(200);
      const answeredAt = Date.now();
      pauses.push(answeredAt);
      // Its jobs for instants after the answer are all cancelled, at once.
      const jobs = (await t.api(p.key, { method: 'GET', url: `/api/jobs?scheduleId=${scheduleId}&limit=100` })).json().jobs as { scheduledFor: string; status: string }[];
      const after = jobs.filter((job) => Date.parse(job.scheduledFor) > answeredAt);
      expect(after.length).toBeGreaterThan(0);
      expect(after.filter((job) => job.status !== 'CANCELLED')).toEqual([]);
      // Resumed once the second after the answer was missed (reached more than 500 ms late): catchUp "none" skips it.
      await sleep(answeredAt + 1_700 - Date.now());
      expect((await send('PATCH', `/api/schedules/${scheduleId}`, { paused: false })).statusCode).toBe(200);
    }
    await sleep(1_500);
    const fires = receiver.requests.filter((r) => r.json.scheduleId === scheduleId).map((r) => Date.parse(r.json.scheduledFor as string));
    // Fires were delivered between the pauses, and none for an instant in the second after a pause answer.
    expect(fires.length).toBeGreaterThan(0);
    for (const answeredAt of pauses) expect(fires.filter((instant) => instant > answeredAt && instant <= answeredAt + 1_000)).toEqual([]);
  });
});
