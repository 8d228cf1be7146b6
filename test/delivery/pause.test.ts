import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { expectContractError } from '../support/contract-error.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/** SPEC section 10, pause and resume: real time, a real receiver; waits poll to a deadline. */
describe('pausing and resuming a project', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const patch = (p: TestProject, body: Record<string, unknown>) =>
    t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: body });
  const dispatch = async (p: TestProject, body: Record<string, unknown>) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const status = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json().status;

  it('accepts dispatches while paused, delivers none, and on resume delivers them earliest due first', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    const other = await t.makeProject({ webhookUrl: receiver.url });
    const paused = await patch(p, { paused: true });
    expect(paused.statusCode).toBe(200);
    expect(paused.json().paused).toBe(true);
    const now = Date.now();
    // One due at once, the others at different instants soon after, dispatched out of order.
    const offsets = [300, 100, 500, 200, 400];
    const jobs = [{ offset: 0, jobId: await dispatch(p, { payload: { now: true } }) }];
    for (const offset of offsets) jobs.push({ offset, jobId: await dispatch(p, { payload: { offset }, scheduledFor: new Date(now + offset).toISOString() }) });
    // Another project's job due after all of them is delivered: the scheduler has been past every one.
    const marker = await dispatch(other, { payload: {}, scheduledFor: new Date(now + 700).toISOString() });
    await receiver.waitFor(() => receiver.forJob(marker).length === 1);
    const ours = jobs.map((j) => j.jobId);
    expect(receiver.requests.filter((r) => ours.includes(r.json.jobId as string))).toEqual([]);
    for (const jobId of ours) expect(await status(p, jobId)).toBe('QUEUED');

    const resumed = await patch(p, { paused: false });
    expect(resumed.json().paused).toBe(false);
    await receiver.waitFor(() => ours.every((jobId) => receiver.forJob(jobId).length === 1));
    const order = receiver.requests.filter((r) => ours.includes(r.json.jobId as string)).map((r) => r.json.jobId);
    const byDue = [...jobs].sort((a, b) => a.offset - b.offset).map((j) => j.jobId);
    expect(order).toEqual(byDue);
    for (const jobId of ours) await eventually(() => status(p, jobId), { what: `${jobId} COMPLETED`, until: (s) => s === 'COMPLETED' });
  });

  it('on resume, sends the jobs that came due meanwhile earliest due first even when they all start at once (default concurrency)', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    await patch(p, { paused: true });
    const now = Date.now();
    // Created in the order due at +100, +300, +200 ms, +50 and +250 ms: all due by the resume.
    const offsets = [100, 300, 200, 50, 250];
    const jobs = [];
    for (const offset of offsets) jobs.push({ offset, jobId: await dispatch(p, { payload: { offset }, scheduledFor: new Date(now + offset).toISOString() }) });
    await eventually(async () => Date.now(), { what: 'every job due', until: (at) => at > now + 400 });
    await patch(p, { paused: false });
    const ours = jobs.map((j) => j.jobId);
    await receiver.waitFor(() => ours.every((jobId) => receiver.forJob(jobId).length === 1));
    const order = receiver.requests.filter((r) => ours.includes(r.json.jobId as string)).map((r) => r.json.jobId);
    expect(order).toEqual([...jobs].sort((a, b) => a.offset - b.offset).map((j) => j.jobId));
  });

  it('a request already out when the pause lands is answered and recorded; the jobs behind it wait', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    receiver.answer((request) => (request.json.payload as { first?: boolean }).first ? { status: 200, held } : { status: 200 });
    try {
      const first = await dispatch(p, { payload: { first: true } });
      await receiver.waitFor(() => receiver.forJob(first).length === 1);
      const second = await dispatch(p, { payload: { second: true } });
      await patch(p, { paused: true });
      release();
      await eventually(() => status(p, first), { what: 'the first job COMPLETED', until: (s) => s === 'COMPLETED' });
      const other = await t.makeProject({ webhookUrl: receiver.url });
      const marker = await dispatch(other, { payload: {} });
      await receiver.waitFor(() => receiver.forJob(marker).length === 1);
      expect(receiver.forJob(second)).toEqual([]);
      expect(await status(p, second)).toBe('QUEUED');
      await patch(p, { paused: false });
      await receiver.waitFor(() => receiver.forJob(second).length === 1);
      await eventually(() => status(p, second), { what: 'the second job COMPLETED', until: (s) => s === 'COMPLETED' });
    } finally {
      receiver.answer({ status: 200 });
    }
  });

  it('a schedule of a paused project still creates its jobs, which wait', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    await patch(p, { paused: true });
    const schedule = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '* * * * * *', payload: { tick: true } } });
    const scheduleId = schedule.json().scheduleId as string;
    await t.services.scheduleFiring.runOnce();
    const jobs = await eventually(
      async () => (await t.api(p.key, { method: 'GET', url: `/api/jobs?scheduleId=${scheduleId}` })).json().jobs as { jobId: string; status: string }[],
      { what: 'a fire of the schedule', until: (list) => list.length > 0 },
    );
    expect(jobs.every((j) => j.status === 'QUEUED')).toBe(true);
    await t.api(p.key, { method: 'DELETE', url: `/api/schedules/${scheduleId}` });
  });

  it('refuses a paused that is not a boolean', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const res = await patch(p, { paused: 'yes' });
    expectContractError(res, 400, 'INVALID_REQUEST');
  });
});
