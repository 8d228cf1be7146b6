import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

/** Real time, real receiver, real SQLite: waits poll to a deadline, never sleep. */
describe('delivery', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterEach(() => receiver.answer({ status: 200, body: 'ok' }));
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const project = (settings: Record<string, unknown> = {}) =>
    t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { initialDelayMs: 50, factor: 2, maxDelayMs: 1000 }, ...settings } });
  const dispatch = async (p: TestProject, body: Record<string, unknown> = { payload: { hello: 'world' } }) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const status = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json();
  const attempts = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}/attempts` })).json().attempts;
  const waitForStatus = (p: TestProject, jobId: string, wanted: string, withinMs = 10_000) =>
    eventually(() => status(p, jobId), { what: `job ${jobId} ${wanted}`, until: (body) => body.status === wanted, withinMs });

  it('POSTs a due job to the webhook with the contract body and signed headers, then COMPLETED', async () => {
    const p = await project();
    const jobId = await dispatch(p, { payload: { hello: 'world', n: [1, 2] } });
    const done = await waitForStatus(p, jobId, 'COMPLETED');
    const [request] = receiver.forJob(jobId);
    expect(request).toBeDefined();
    expect(request!.method).toBe('POST');
    expect(request!.json).toEqual({
      jobId,
      attemptId: expect.stringMatching(/^att_/),
      attempt: 1,
      attemptNumber: 1,
      payload: { hello: 'world', n: [1, 2] },
    });
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers.authorization).toBe(`Bearer ${p.webhookSecret}`);
    expect(request!.headers['user-agent']).toMatch(/^Punctual\/\d+\.\d+\.\d+$/);
    expect(request!.headers['webhook-id']).toBe(jobId);
    // A Standard Webhooks receiver accepts it.
    const verified = new Webhook(p.webhookSecret).verify(request!.body, request!.headers as Record<string, string>);
    expect(verified).toEqual(request!.json);
    expect(done).toMatchObject({ attemptCount: 1, nextAttemptAt: null, completedAt: expect.any(String), lastError: null });
    const [attempt] = await attempts(p, jobId);
    expect(attempt).toEqual({
      attemptId: request!.json.attemptId,
      attemptNumber: 1,
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      outcome: 'success',
      statusCode: 200,
      durationMs: expect.any(Number),
      error: null,
      responseBody: 'ok',
      acceptedAt: null,
      reportedAt: null,
    });
  });

  it('records a response body holding U+0000 (which PostgreSQL text refuses) with U+FFFD in its place', async () => {
    receiver.answer({ status: 200, body: 'a\u0000b' });
    const p = await project();
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED');
    expect((await attempts(p, jobId))[0]).toMatchObject({ outcome: 'success', responseBody: 'a\ufffdb' });
  });

  it('delivers a scheduled job at its time, not before', async () => {
    const p = await project();
    const due = Date.now() + 400;
    const jobId = await dispatch(p, { payload: {}, scheduledFor: new Date(due).toISOString() });
    await waitForStatus(p, jobId, 'COMPLETED');
    expect(receiver.forJob(jobId)[0]!.arrivedAt).toBeGreaterThanOrEqual(due);
  });

  it('retries a failed attempt with backoff and completes on a later success', async () => {
    const p = await project();
    let calls = 0;
    receiver.answer(() => (++calls === 1 ? { status: 500, body: 'boom' } : { status: 201, body: 'created' }));
    const jobId = await dispatch(p);
    const done = await waitForStatus(p, jobId, 'COMPLETED');
    const list = await attempts(p, jobId);
    expect(list.map((a: { attemptNumber: number; outcome: string; statusCode: number }) => [a.attemptNumber, a.outcome, a.statusCode])).toEqual([
      [1, 'http_error', 500],
      [2, 'success', 201],
    ]);
    expect(list[0].responseBody).toBe('boom');
    expect(list[0].error).toBe('HTTP 500');
    const [first, second] = receiver.forJob(jobId);
    expect(second!.json.attemptId).not.toBe(first!.json.attemptId);
    expect(second!.headers['webhook-id']).toBe(jobId);
    // The first retry waits initialDelayMs (50 ms) plus up to 10%.
    expect(second!.arrivedAt - first!.arrivedAt).toBeGreaterThanOrEqual(50);
    expect(done.attemptCount).toBe(2);
  });

  it("runs Dispatched's documented receiver logic right: `attempt > 1` is true on a retry, false on the first try", async () => {
    const p = await project();
    // The receiver of Dispatched's documentation: `const { jobId, attempt, payload } = req.body; if (attempt > 1) …`.
    const branches: string[] = [];
    receiver.answer((request) => {
      const { attempt } = request.json as { attempt: number };
      branches.push(attempt > 1 ? 'retry' : 'first');
      return branches.length === 1 ? { status: 500 } : { status: 200 };
    });
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED');
    expect(branches).toEqual(['first', 'retry']);
    expect(receiver.forJob(jobId).map((r) => [r.json.attempt, r.json.attemptNumber])).toEqual([
      [1, 1],
      [2, 2],
    ]);
  });

  it('fails after maxRetries, keeps lastError, and the retry endpoint starts a fresh budget', async () => {
    const p = await project();
    receiver.answer({ status: 503, body: 'down' });
    const jobId = await dispatch(p, { payload: {}, maxRetries: 2 });
    const failed = await waitForStatus(p, jobId, 'FAILED');
    expect(failed).toMatchObject({ attemptCount: 3, lastError: 'HTTP 503', failedAt: expect.any(String), nextAttemptAt: null });
    expect(receiver.forJob(jobId).map((r) => r.json.attemptNumber)).toEqual([1, 2, 3]);

    receiver.answer({ status: 200 });
    const retried = await t.api(p.key, { method: 'POST', url: `/api/jobs/${jobId}/retry` });
    expect(retried.json()).toEqual({ jobId, status: 'QUEUED' });
    const done = await waitForStatus(p, jobId, 'COMPLETED');
    expect(done.attemptCount).toBe(4);
    expect(receiver.forJob(jobId).map((r) => r.json.attemptNumber)).toEqual([1, 2, 3, 1]);
  });

  it.each([
    ['a redirect (not followed)', { status: 302, headers: { location: 'http://127.0.0.1:1/' } }, 'http_error', 302],
    ['a 204 without acceptAny2xx', { status: 204 }, 'http_error', 204],
    ['a dropped connection', { destroy: true as const }, 'network_error', null],
  ])('records %s as a failed attempt', async (_name, reply, outcome, statusCode) => {
    const p = await project();
    receiver.answer(reply);
    const jobId = await dispatch(p, { payload: {}, maxRetries: 0 });
    await waitForStatus(p, jobId, 'FAILED');
    const [attempt] = await attempts(p, jobId);
    expect(attempt).toMatchObject({ outcome, statusCode });
    expect(attempt.error).toEqual(expect.any(String));
  });

  it('accepts any 2xx when the project opted in', async () => {
    const p = await project({ acceptAny2xx: true });
    receiver.answer({ status: 204 });
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED');
  });

  it('times out an attempt that gets no full answer within deliveryTimeoutMs', async () => {
    const p = await project({ deliveryTimeoutMs: 1000 });
    receiver.answer({ hang: true });
    const jobId = await dispatch(p, { payload: {}, maxRetries: 0 });
    await waitForStatus(p, jobId, 'FAILED', 5000);
    const [attempt] = await attempts(p, jobId);
    expect(attempt).toMatchObject({ outcome: 'timeout', statusCode: null });
    expect(attempt.durationMs).toBeGreaterThanOrEqual(990);
  });

  it('records a refused connection as network_error', async () => {
    const p = await t.makeProject({ webhookUrl: 'http://127.0.0.1:9/closed' });
    const jobId = await dispatch(p, { payload: {}, maxRetries: 0 });
    await waitForStatus(p, jobId, 'FAILED');
    expect((await attempts(p, jobId))[0]).toMatchObject({ outcome: 'network_error', error: expect.stringContaining('ECONNREFUSED') });
  });

  it('keeps at most 4 KB of the response body', async () => {
    const p = await project();
    receiver.answer({ status: 200, body: 'x'.repeat(100_000) });
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED');
    expect((await attempts(p, jobId))[0].responseBody).toHaveLength(4096);
  });

  it('honours Retry-After on 429, capped at maxDelay', async () => {
    const p = await project({ retryPolicy: { initialDelayMs: 10, factor: 2, maxDelayMs: 600 } });
    let calls = 0;
    receiver.answer(() => (++calls === 1 ? { status: 429, headers: { 'retry-after': '3600' } } : { status: 200 }));
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED', 5000);
    const [first, second] = receiver.forJob(jobId);
    const gap = second!.arrivedAt - first!.arrivedAt;
    expect(gap).toBeGreaterThanOrEqual(600);
    expect(gap).toBeLessThan(3000);
  });

  it('signs with both secrets during a rotation; Authorization carries the newest', async () => {
    const p = await project();
    const { webhookSecret: newest } = await t.services.manage.rotateWebhookSecret(p.projectId);
    const jobId = await dispatch(p);
    await waitForStatus(p, jobId, 'COMPLETED');
    const [request] = receiver.forJob(jobId);
    expect(request!.headers.authorization).toBe(`Bearer ${newest}`);
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [newest, p.webhookSecret]) {
      expect(new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>)).toEqual(request!.json);
    }
  });

  it("never runs more than a project's deliveryConcurrency at once", async () => {
    const p = await t.makeProject({ webhookUrl: `${receiver.url}/limited`, settings: { deliveryConcurrency: 2 } });
    receiver.answer({ status: 200, delayMs: 150 });
    const ids = await Promise.all(Array.from({ length: 6 }, () => dispatch(p)));
    for (const id of ids) await waitForStatus(p, id, 'COMPLETED');
    expect(receiver.maxInFlightByPath.get('/hook/limited')).toBe(2);
  });

  it('never delivers a job whose cancel answered 200', async () => {
    const p = await project();
    const due = Date.now() + 500;
    const ids = await Promise.all(
      Array.from({ length: 60 }, () => dispatch(p, { payload: {}, scheduledFor: new Date(due).toISOString() })),
    );
    // Cancels fired from 30 ms before to 30 ms after the due time.
    const cancelled: string[] = [];
    await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now() - 30 + i)));
        const res = await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${id}` });
        if (res.statusCode === 200) cancelled.push(id);
        else expect(res.json()).toMatchObject({ error: 'JOB_NOT_QUEUED' });
      }),
    );
    const others = ids.filter((id) => !cancelled.includes(id));
    for (const id of others) await waitForStatus(p, id, 'COMPLETED');
    for (const id of cancelled) expect(receiver.forJob(id)).toEqual([]);
    expect(cancelled.length + others.length).toBe(60);
  });

  it('never sends a job at its old time once its reschedule answered 200', async () => {
    const p = await project();
    const due = Date.now() + 500;
    const ids = await Promise.all(
      Array.from({ length: 60 }, () => dispatch(p, { payload: {}, scheduledFor: new Date(due).toISOString() })),
    );
    // Reschedules to a second later, fired from 30 ms before to 30 ms after the old due time.
    const later = due + 1_000;
    const moved: string[] = [];
    await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now() - 30 + i)));
        const res = await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${id}`, payload: { scheduledFor: new Date(later).toISOString() } });
        if (res.statusCode === 200) moved.push(id);
        else expect(res.json()).toMatchObject({ error: 'JOB_NOT_QUEUED' });
      }),
    );
    for (const id of ids) await waitForStatus(p, id, 'COMPLETED');
    expect(moved.length).toBeGreaterThan(0);
    for (const id of moved) {
      expect(receiver.forJob(id)).toHaveLength(1);
      expect(receiver.forJob(id)[0]!.arrivedAt).toBeGreaterThanOrEqual(later);
    }
  });

  it('serves test deliveries: signed, not a job, and reports the answer', async () => {
    const p = await project();
    receiver.answer({ status: 202, body: 'accepted' });
    const res = await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/test-delivery` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ outcome: 'http_error', statusCode: 202, durationMs: expect.any(Number), responseBody: 'accepted', error: 'HTTP 202' });
    const request = receiver.requests.at(-1)!;
    expect(request.json).toMatchObject({ jobId: expect.stringMatching(/^job_test_/), attemptNumber: 1, payload: { test: true } });
    expect(request.headers['webhook-id']).toBe(request.json.jobId);
    expect(new Webhook(p.webhookSecret).verify(request.body, request.headers as Record<string, string>)).toBeTruthy();
    const none = await t.makeProject({ webhookUrl: null });
    expect((await t.admin({ method: 'POST', url: `/manage/v1/projects/${none.projectId}/test-delivery` })).json().error).toBe('WEBHOOK_NOT_CONFIGURED');
    // With async completion a 202 is what the receiver should answer; a 204 still is not.
    await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { asyncCompletion: true } });
    const accepted = await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/test-delivery` });
    expect(accepted.json()).toMatchObject({ outcome: 'success', statusCode: 202, error: null });
    expect(receiver.requests.at(-1)!.json).not.toHaveProperty('callbackToken');
    receiver.answer({ status: 204 });
    expect((await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/test-delivery` })).json()).toMatchObject({ outcome: 'http_error', statusCode: 204 });
  });

  it('exposes metrics', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/punctual_jobs_completed_total \d+/);
    expect(res.body).toMatch(/punctual_attempts_total\{outcome="success"\} \d+/);
    expect(res.body).toMatch(/punctual_delivery_lateness_seconds_bucket/);
    expect(res.body).toMatch(/punctual_jobs\{state="COMPLETED"\} \d+/);
    expect(res.body).toMatch(/punctual_attempts_in_flight \d+/);
  });
});
