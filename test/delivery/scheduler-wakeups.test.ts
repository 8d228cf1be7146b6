import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_LOOKAHEAD_MS, MAX_SLEEP_MS } from '../../src/scheduler/claim-loop.js';
import { makeTestApp, SECOND, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

/**
 * When the scheduler wakes (injected clock): for the next due job, sooner when a job is dispatched
 * or rescheduled earlier, and never for a time already past while the only due jobs belong to a
 * project whose delivery slots are all taken (that would spin on empty claims).
 */
describe('scheduler wake-ups (injected clock)', () => {
  let t: TestApp;
  let receiver: TestReceiver;
  let release: () => void = () => {};
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ delivery: true });
  });
  afterAll(async () => {
    release();
    await t.close();
    await receiver.close();
  });

  const dispatch = async (key: string, scheduledFor?: number) => {
    const body = { payload: {}, ...(scheduledFor !== undefined && { scheduledFor: new Date(scheduledFor).toISOString() }) };
    const response = await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(response.statusCode).toBe(201);
    return response.json().jobId as string;
  };
  const settle = () => t.engine!.claimLoop.tick();
  const allCompleted = async (projectId: string, jobIds: string[]) => {
    for (const jobId of jobIds) {
      await eventually(async () => (await t.store.jobGet({ projectId, jobId }))?.status, {
        what: `${jobId} delivered after the slot freed`,
        until: (status) => status === 'COMPLETED',
        withinMs: 5_000,
        everyMs: 5,
      });
    }
  };

  it('sleeps until the earliest job, and wakes sooner for an earlier dispatch or reschedule', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const now = t.clock.now();
    await dispatch(p.key, now + 600 * SECOND);
    await settle();
    expect(t.engine!.claimLoop.wakesAt).toBe(now + 600 * SECOND);

    const soon = await dispatch(p.key, now + 200);
    expect(t.engine!.claimLoop.wakesAt).toBe(now + 200);

    const patched = await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${soon}`, payload: { scheduledFor: new Date(now + 5 * SECOND).toISOString() } });
    expect(patched.statusCode).toBe(200);
    const later = await dispatch(p.key, now + 3_600 * SECOND);
    const earlier = await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${later}`, payload: { scheduledFor: new Date(now + 100).toISOString() } });
    expect(earlier.statusCode).toBe(200);
    expect(t.engine!.claimLoop.wakesAt).toBe(now + 100);
  });

  it('does not wake for due jobs of a saturated project, and claims them when a slot frees', async () => {
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.answer({ status: 200, held });
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    // The first job takes the project's only slot (its request is held); the others, dispatched
    // once it has, wait due. (Dispatched together, one claim could take all three: a claim is
    // bounded by the instance's free slots, and only a saturated project is left out of it.)
    const jobs = [await dispatch(p.key)];
    await settle();
    await eventually(() => receiver.forJob(jobs[0]!).length, { what: 'the first job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    jobs.push(await dispatch(p.key), await dispatch(p.key));
    await settle();
    const now = t.clock.now();
    const wakesAt = t.engine!.claimLoop.wakesAt;
    // Not a time already past (that would claim again at once, find nothing, and repeat):
    // the safety-net sleep, or a job beyond the claim's horizon.
    expect(wakesAt).toBeGreaterThan(now + CLAIM_LOOKAHEAD_MS);
    expect(wakesAt).toBeLessThanOrEqual(now + MAX_SLEEP_MS + CLAIM_LOOKAHEAD_MS);
    for (const jobId of jobs.slice(1)) expect((await t.store.jobGet({ projectId: p.projectId, jobId }))?.status).toBe('QUEUED');

    release();
    await allCompleted(p.projectId, jobs);
  });

  it('claims no more of a project\'s jobs than it has slots when its dispatches arrive together', async () => {
    release();
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.answer({ status: 200, held });
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    // Created at once, each may be claimed by its own dispatch (the embedded store) or by the
    // scheduler: either way one takes the only slot and the rest wait QUEUED, cancellable.
    const jobs = await Promise.all(Array.from({ length: 8 }, () => dispatch(p.key)));
    await settle();
    await eventually(() => jobs.filter((jobId) => receiver.forJob(jobId).length > 0).length, { what: 'one job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    await settle();
    const statuses = await Promise.all(jobs.map(async (jobId) => (await t.store.jobGet({ projectId: p.projectId, jobId }))?.status));
    expect(statuses.filter((status) => status !== 'QUEUED')).toEqual(['STARTED']);

    release();
    await allCompleted(p.projectId, jobs);
  });
});
