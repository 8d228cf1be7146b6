import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILING_AFTER, PROBE_FIRST_MS } from '../../src/store/event-store.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, SECOND, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * SPEC section 13 through the whole pipeline: a real receiver that goes down and comes back, an
 * injected clock (probes and retries fall due when the test says), waits polled to a deadline.
 */
describe('receiver health: hold, probe, resume (injected clock)', () => {
  let t: TestApp;
  let receiver: TestReceiver;
  let down = true;
  let status = 503;
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer(() => (down ? { status, body: 'down' } : { status: 200, body: 'ok' }));
    t = await makeTestApp({ delivery: true, random: () => 0.5 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const dispatch = async (p: TestProject, body: Record<string, unknown>) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const project = async (p: TestProject) => (await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}` })).json();
  const finishedAttempts = async (jobIds: string[]) => {
    let n = 0;
    for (const jobId of jobIds) n += (await t.store.attemptListByJob(jobId)).filter((a) => a.outcome !== null).length;
    return n;
  };
  const probes = () => receiver.requests.filter((r) => r.json.probe === true);

  it('holds at the 10th failure in a row, spends no attempt while held, probes at 30 s then 60 s, and resumes earliest due first', async () => {
    down = true;
    status = 503;
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true, deliveryConcurrency: 1 } });
    const start = t.clock.now();
    // Ten jobs due now fail once each (503): the project is held.
    const first: string[] = [];
    for (let i = 0; i < FAILING_AFTER; i += 1) first.push(await dispatch(p, { payload: { i }, maxRetries: 3 }));
    for (let i = 0; i < FAILING_AFTER; i += 1) {
      await t.engine!.claimLoop.tick();
      await eventually(() => finishedAttempts(first), { what: `attempt ${i + 1}`, until: (n) => n >= i + 1 });
    }
    const held = await eventually(() => project(p), { what: 'held', until: (body) => body.health.state === 'held' });
    const heldAt = Date.parse(held.health.since as string);
    expect(held.health).toEqual({ state: 'held', since: new Date(heldAt).toISOString(), consecutiveFailures: FAILING_AFTER, nextProbeAt: new Date(heldAt + PROBE_FIRST_MS).toISOString() });
    // Dispatches are still accepted while held; jobs created now and later wait.
    const later = await dispatch(p, { payload: { later: true }, scheduledFor: new Date(start + 5 * SECOND).toISOString() });
    const sent = receiver.requests.length;
    // Every retry comes due (the first at 31.5 s): none is sent, none spends an attempt.
    t.clock.set(start + 29 * SECOND);
    await t.engine!.claimLoop.tick();
    expect(await t.engine!.probes.probeDue()).toBe(heldAt + PROBE_FIRST_MS);
    expect(receiver.requests.length).toBe(sent);
    // The first probe, at 30 s: signed like a delivery, "probe": true; answered 503, the hold stays.
    t.clock.set(heldAt + PROBE_FIRST_MS);
    await t.engine!.probes.probeDue();
    await receiver.waitFor(() => probes().length === 1);
    const probe = probes()[0]!;
    expect(probe.json).toMatchObject({ probe: true, payload: { test: true }, attemptNumber: 1 });
    expect(probe.headers['webhook-id']).toMatch(/^job_test_/);
    expect(probe.headers['webhook-signature']).toMatch(/^v1,/);
    expect((await project(p)).health).toMatchObject({ state: 'held', nextProbeAt: new Date(heldAt + PROBE_FIRST_MS + 60 * SECOND).toISOString() });
    t.clock.set(heldAt + 200 * SECOND);
    await t.engine!.claimLoop.tick();
    expect(receiver.requests.filter((r) => r.json.probe !== true).length).toBe(sent);
    for (const jobId of [...first, later]) expect(await t.store.jobGet({ projectId: p.projectId, jobId })).toMatchObject({ status: 'QUEUED' });
    for (const jobId of first) expect((await t.store.jobGet({ projectId: p.projectId, jobId }))!.attemptCount).toBe(1);
    // Cancellable while held, as any QUEUED job.
    expect((await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${first[9]}` })).statusCode).toBe(200);

    // The receiver is back: the next probe (due 60 s after the first) ends the hold; the jobs go out earliest due first.
    down = false;
    t.clock.set(heldAt + PROBE_FIRST_MS + 60 * SECOND);
    await t.engine!.probes.probeDue();
    await eventually(() => project(p), { what: 'healthy again', until: (body) => body.health.state === 'healthy' });
    expect(probes()).toHaveLength(2);
    const waiting = [...first.slice(0, 9), later];
    for (let i = 0; i < waiting.length; i += 1) {
      await t.engine!.claimLoop.tick();
      await receiver.waitFor(() => waiting.filter((jobId) => receiver.forJob(jobId).some((r) => r.json.attemptNumber === 2 || r.json.jobId === later)).length >= i + 1);
    }
    await eventually(async () => Promise.all(waiting.map(async (jobId) => (await t.store.jobGet({ projectId: p.projectId, jobId }))!.status)), {
      what: 'every waiting job COMPLETED',
      until: (statuses) => statuses.every((s) => s === 'COMPLETED'),
    });
    // Each of the first jobs spent exactly one attempt before the hold and one after; delivered in due
    // order: `later` (due at +5 s) first, then the retries (all due at +31.5 s) in creation order.
    for (const jobId of first.slice(0, 9)) expect(receiver.forJob(jobId).map((r) => r.json.attemptNumber)).toEqual([1, 2]);
    const resumed = receiver.requests.filter((r) => waiting.includes(r.json.jobId as string) && (r.json.attemptNumber === 2 || r.json.jobId === later)).map((r) => r.json.jobId);
    expect(resumed).toEqual([later, ...first.slice(0, 9)]);
  });

  it('holds at once: with concurrency 1, the job due after the 10th failure is not sent, and waits QUEUED with its attempts intact', async () => {
    down = true;
    status = 503;
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true, deliveryConcurrency: 1 } });
    // Due together, so that when the 10th failure is answered the next jobs are already waiting to start.
    const dueAt = t.clock.now() + SECOND;
    const jobs: string[] = [];
    for (let i = 0; i < FAILING_AFTER + 2; i += 1) jobs.push(await dispatch(p, { payload: { i }, maxRetries: 0, scheduledFor: new Date(dueAt).toISOString() }));
    t.clock.set(dueAt);
    await t.engine!.claimLoop.tick();
    await eventually(() => project(p), { what: 'held', until: (body) => body.health.state === 'held' });
    // The two not yet tried go back to QUEUED without spending an attempt (a start refused by the hold);
    // one sent after the 10th failure's answer would have spent its only attempt and FAILED.
    const statuses = async () =>
      Promise.all(jobs.map(async (jobId) => (({ status, attemptCount }) => ({ status, attemptCount }))((await t.store.jobGet({ projectId: p.projectId, jobId }))!)));
    const settled = await eventually(statuses, { what: 'the last two QUEUED', until: (rows) => rows.filter((row) => row.status === 'QUEUED').length === 2 });
    expect(settled.filter((row) => row.status === 'FAILED')).toHaveLength(FAILING_AFTER);
    expect(settled.filter((row) => row.status === 'QUEUED').every((row) => row.attemptCount === 0)).toBe(true);
    expect(receiver.requests.filter((r) => jobs.includes(r.json.jobId as string))).toHaveLength(FAILING_AFTER);
  });

  it('counts only failures that mean the receiver is down: a 404 refuses a job and counts nothing, a 429 counts', async () => {
    down = true;
    status = 404;
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true } });
    const jobs: string[] = [];
    for (let i = 0; i < FAILING_AFTER + 2; i += 1) jobs.push(await dispatch(p, { payload: { i }, maxRetries: 0 }));
    await t.engine!.claimLoop.tick();
    await eventually(() => finishedAttempts(jobs), { what: 'every attempt', until: (n) => n === jobs.length });
    // One more job, answered 429 after the 404s: the run is 1 long (it would be 13, and held, if a 404 counted).
    status = 429;
    const last = await dispatch(p, { payload: {}, maxRetries: 0 });
    await t.engine!.claimLoop.tick();
    const health = await eventually(async () => (await project(p)).health, { what: 'the 429 counted', until: (h) => h.consecutiveFailures > 0 });
    expect(health).toEqual({ state: 'healthy', since: null, consecutiveFailures: 1, nextProbeAt: null });
    expect(receiver.forJob(last)).toHaveLength(1);
  });

  it('POST …/probe probes now and, answered 200, ends the hold; a project without holdOnFailure is only failing', async () => {
    down = true;
    status = 500;
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true } });
    const plain = await t.makeProject({ webhookUrl: receiver.url });
    for (const target of [p, plain]) {
      const jobs: string[] = [];
      for (let i = 0; i < FAILING_AFTER; i += 1) jobs.push(await dispatch(target, { payload: { i }, maxRetries: 0 }));
      await t.engine!.claimLoop.tick();
      await eventually(() => finishedAttempts(jobs), { what: 'every attempt', until: (n) => n === jobs.length });
    }
    const failing = await eventually(async () => (await project(plain)).health, { what: 'failing', until: (h) => h.consecutiveFailures === FAILING_AFTER });
    expect(failing).toMatchObject({ state: 'failing', consecutiveFailures: FAILING_AFTER, nextProbeAt: null });
    await eventually(async () => (await project(p)).health.state, { what: 'held', until: (state) => state === 'held' });
    const refused = await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/probe` });
    expect(refused.json()).toMatchObject({ outcome: 'http_error', statusCode: 500 });
    expect((await project(p)).health.state).toBe('held');
    down = false;
    const answered = await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/probe` });
    expect(answered.statusCode).toBe(200);
    expect(answered.json()).toMatchObject({ outcome: 'success', statusCode: 200, error: null });
    expect((await project(p)).health).toEqual({ state: 'healthy', since: null, consecutiveFailures: 0, nextProbeAt: null });
  });

  it('retryPolicy.stopOn ends a job at its first such answer, says why, and counts nothing toward the health', async () => {
    down = true;
    status = 410;
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true, retryPolicy: { stopOn: [410] } } });
    const jobs: string[] = [];
    for (let i = 0; i < FAILING_AFTER + 2; i += 1) jobs.push(await dispatch(p, { payload: { i }, maxRetries: 3 }));
    await t.engine!.claimLoop.tick();
    await eventually(() => finishedAttempts(jobs), { what: 'every attempt', until: (n) => n === jobs.length });
    for (const jobId of jobs) {
      expect(await t.store.jobGet({ projectId: p.projectId, jobId })).toMatchObject({ status: 'FAILED', attemptCount: 1, lastError: 'HTTP 410: in retryPolicy.stopOn, so no further retries' });
    }
    status = 503;
    await dispatch(p, { payload: {}, maxRetries: 0 });
    await t.engine!.claimLoop.tick();
    const health = await eventually(async () => (await project(p)).health, { what: 'the 503 counted', until: (h) => h.consecutiveFailures > 0 });
    expect(health).toMatchObject({ state: 'healthy', consecutiveFailures: 1 });
  });

  it('sends webhook.held and webhook.recovered with heldFor, and job.completed only to a project subscribed to it', async () => {
    const events = await new TestReceiver().start();
    try {
      down = true;
      status = 502;
      const p = await t.makeProject({ webhookUrl: receiver.url, settings: { holdOnFailure: true, eventsUrl: events.url } });
      const jobs: string[] = [];
      for (let i = 0; i < FAILING_AFTER; i += 1) jobs.push(await dispatch(p, { payload: { i }, maxRetries: 1 }));
      await t.engine!.claimLoop.tick();
      await events.waitFor(() => events.requests.some((r) => r.json.type === 'webhook.held'));
      const heldEvent = events.requests.find((r) => r.json.type === 'webhook.held')!;
      expect(heldEvent.json.data).toMatchObject({ consecutiveFailures: FAILING_AFTER, lastError: 'HTTP 502' });
      down = false;
      t.clock.set(t.clock.now() + 5 * SECOND);
      expect((await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/probe` })).json().outcome).toBe('success');
      await events.waitFor(() => events.requests.some((r) => r.json.type === 'webhook.recovered'));
      expect(events.requests.find((r) => r.json.type === 'webhook.recovered')!.json.data).toMatchObject({ heldFor: 5 * SECOND });
      // Not subscribed (the default set): no job.completed for the jobs that now complete.
      t.clock.set(t.clock.now() + 60 * SECOND);
      await t.engine!.claimLoop.tick();
      await receiver.waitFor(() => jobs.every((jobId) => receiver.forJob(jobId).length === 2));
      // Recorded COMPLETED (the answer is in before the finish is written) before the subscription changes.
      await eventually(async () => Promise.all(jobs.map(async (jobId) => (await t.store.jobGet({ projectId: p.projectId, jobId }))!.status)), {
        what: 'every job COMPLETED',
        until: (statuses) => statuses.every((s) => s === 'COMPLETED'),
      });
      await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { eventTypes: ['job.completed'] } });
      const last = await dispatch(p, { payload: { last: true } });
      await t.engine!.claimLoop.tick();
      await events.waitFor(() => events.requests.some((r) => r.json.type === 'job.completed'));
      const completed = events.requests.filter((r) => r.json.type === 'job.completed');
      expect(completed).toHaveLength(1);
      expect(completed[0]!.json.data).toMatchObject({ jobId: last, attemptCount: 1, durationMs: expect.any(Number) });
    } finally {
      await events.close();
    }
  });
});
