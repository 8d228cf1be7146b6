import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, SECOND, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver, type ReceivedRequest, type Reply } from '../support/receiver.js';

const MINUTE = 60 * SECOND;

/**
 * SPEC section 11's async completion through the whole pipeline: a real receiver answering 202,
 * reports through the HTTP API, and the deadline on an injected clock (the lease rescue's pass is
 * run by hand at chosen instants). Runs on both stores.
 */
describe('async completion: 202 now, the result reported later', () => {
  let t: TestApp;
  let receiver: TestReceiver;
  /** Answers per job (by payload.answer), 202 by default. */
  let replyFor: (request: ReceivedRequest) => Reply = () => ({ status: 202, body: 'accepted' });

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => replyFor(request));
    t = await makeTestApp({ delivery: true, random: () => 0.5 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const asyncProject = (settings: Record<string, unknown> = {}) =>
    t.makeProject({
      webhookUrl: receiver.url,
      settings: { asyncCompletion: true, asyncCompletionTimeoutMs: 10 * MINUTE, retryPolicy: { maxRetries: 1, initialDelayMs: 1_000, factor: 2 }, ...settings },
    });

  /** Dispatches one job and waits until its attempt's 202 is recorded; the delivery's body. */
  async function deliveredAndAccepted(p: TestProject, payload: Record<string, unknown> = {}) {
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload } })).json().jobId as string;
    await t.engine!.claimLoop.tick();
    await receiver.waitFor(() => receiver.forJob(jobId).length === 1);
    const body = receiver.forJob(jobId)[0]!.json as { attemptId: string; callbackToken?: string };
    await eventually(async () => (await t.store.attemptListByJob(jobId))[0]?.acceptedAt ?? null, { what: 'the 202 recorded', until: (at) => at !== null });
    return { jobId, attemptId: body.attemptId, token: body.callbackToken!, body };
  }

  const report = (jobId: string, attemptId: string, bearer: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url: `/api/jobs/${jobId}/attempts/${attemptId}/result`, headers: { authorization: `Bearer ${bearer}` }, payload: payload as object });
  const jobOf = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json();
  const attemptsOf = async (p: TestProject, jobId: string) =>
    (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}/attempts` })).json().attempts as Record<string, unknown>[];

  it('a 202 leaves the job STARTED with its attempt pending; a success report completes it, and the same report again changes nothing', async () => {
    const p = await asyncProject();
    const { jobId, attemptId, token } = await deliveredAndAccepted(p);
    expect(token).toMatch(/^pcb_[A-Za-z0-9_-]{43}$/);
    expect(await jobOf(p, jobId)).toMatchObject({ status: 'STARTED', attemptCount: 1 });
    const acceptedAt = new Date(t.clock.now()).toISOString();
    expect(await attemptsOf(p, jobId)).toEqual([
      expect.objectContaining({ attemptId, outcome: null, finishedAt: null, statusCode: 202, responseBody: 'accepted', acceptedAt, reportedAt: null }),
    ]);

    t.clock.advance(90 * SECOND);
    const done = await report(jobId, attemptId, token, { outcome: 'success' });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toMatchObject({ jobId, status: 'COMPLETED', attemptCount: 1 });
    const reportedAt = new Date(t.clock.now()).toISOString();
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: 'success', statusCode: 202, reportedAt, finishedAt: reportedAt, durationMs: 90 * SECOND });

    t.clock.advance(SECOND);
    const again = await report(jobId, attemptId, token, { outcome: 'success' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(done.json());
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ reportedAt });

    const other = await report(jobId, attemptId, token, { outcome: 'failure', error: 'changed my mind' });
    expectContractError(other, 409, 'ATTEMPT_NOT_PENDING');
    expect(other.json().data.outcome).toBe('success');
    expectContractError(await report(jobId, attemptId, token, { outcome: 'running' }), 409, 'ATTEMPT_NOT_PENDING');
    expect(receiver.forJob(jobId)).toHaveLength(1);
  });

  it('a failure report is a failed attempt with its error, retried after the backoff under a new attempt and token', async () => {
    const p = await asyncProject();
    const { jobId, attemptId, token } = await deliveredAndAccepted(p);
    const failed = await report(jobId, attemptId, token, { outcome: 'failure', error: 'the export ran out of disk' });
    expect(failed.statusCode).toBe(200);
    expect(failed.json()).toMatchObject({ status: 'QUEUED', lastError: 'the export ran out of disk' });
    // Backoff 1 s plus up to 10% jitter.
    const retryIn = Date.parse(failed.json().nextAttemptAt) - t.clock.now();
    expect(retryIn).toBeGreaterThanOrEqual(1_000);
    expect(retryIn).toBeLessThanOrEqual(1_100);
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: 'http_error', error: 'the export ran out of disk', statusCode: 202 });
    // The identical failure again: 200, nothing changes; the retry comes as usual.
    expect((await report(jobId, attemptId, token, { outcome: 'failure', error: 'the export ran out of disk' })).statusCode).toBe(200);

    t.clock.advance(retryIn);
    await t.engine!.claimLoop.tick();
    await receiver.waitFor(() => receiver.forJob(jobId).length === 2);
    const second = receiver.forJob(jobId)[1]!.json as { attemptId: string; attemptNumber: number; callbackToken: string };
    expect(second.attemptNumber).toBe(2);
    expect(second.attemptId).not.toBe(attemptId);
    expect(second.callbackToken).not.toBe(token);
    await eventually(async () => (await t.store.attemptListByJob(jobId))[1]?.acceptedAt ?? null, { what: 'the second 202', until: (at) => at !== null });
    // The first attempt's token does not report on the second.
    expectContractError(await report(jobId, second.attemptId, token, { outcome: 'success' }), 401, 'UNAUTHORIZED');
    const last = await report(jobId, second.attemptId, second.callbackToken, { outcome: 'failure' });
    expect(last.json()).toMatchObject({ status: 'FAILED', attemptCount: 2, lastError: 'the receiver reported a failure' });
  });

  it('"running" moves the deadline to asyncCompletionTimeoutMs from then; past it the attempt ends as timeout and is retried', async () => {
    const p = await asyncProject();
    const { jobId, attemptId, token } = await deliveredAndAccepted(p);
    const acceptedAt = t.clock.now();
    t.clock.advance(8 * MINUTE);
    const running = await report(jobId, attemptId, token, { outcome: 'running' });
    expect(running.statusCode).toBe(200);
    expect(running.json()).toMatchObject({ status: 'STARTED' });
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: null, reportedAt: new Date(acceptedAt + 8 * MINUTE).toISOString() });

    // Past the first deadline (10 min after the 202), not past the new one (18 min).
    t.clock.set(acceptedAt + 12 * MINUTE);
    await t.engine!.rescuer.tick();
    expect(await jobOf(p, jobId)).toMatchObject({ status: 'STARTED' });

    t.clock.set(acceptedAt + 18 * MINUTE + 1);
    expect(await t.engine!.rescuer.tick()).toBe(1);
    expect(await jobOf(p, jobId)).toMatchObject({ status: 'QUEUED', attemptCount: 1 });
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: 'timeout', statusCode: 202, reportedAt: new Date(acceptedAt + 8 * MINUTE).toISOString() });
    // A report after the deadline is refused, and says how the attempt ended.
    const late = await report(jobId, attemptId, token, { outcome: 'success' });
    expectContractError(late, 409, 'ATTEMPT_NOT_PENDING');
    expect(late.json().data.outcome).toBe('timeout');
  });

  it('a report after the deadline is refused even before the lease rescue has ended the attempt, and a timeout with no retries left fails the job', async () => {
    const p = await asyncProject({ retryPolicy: { maxRetries: 0 } });
    const { jobId, attemptId, token } = await deliveredAndAccepted(p);
    t.clock.advance(10 * MINUTE);
    const late = await report(jobId, attemptId, token, { outcome: 'success' });
    expectContractError(late, 409, 'ATTEMPT_NOT_PENDING');
    expect(late.json().data.outcome).toBe('timeout');
    expect(await jobOf(p, jobId)).toMatchObject({ status: 'STARTED' });
    // The lease rescue ends it once its deadline is behind.
    t.clock.advance(1);
    expect(await t.engine!.rescuer.tick()).toBe(1);
    expect(await jobOf(p, jobId)).toMatchObject({ status: 'FAILED', attemptCount: 1 });
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: 'timeout', reportedAt: null });
  });

  it("a token answers for its own job and attempt only; an API key of the project works, another project's does not", async () => {
    const p = await asyncProject();
    const a = await deliveredAndAccepted(p);
    const b = await deliveredAndAccepted(p);
    expectContractError(await report(a.jobId, a.attemptId, b.token, { outcome: 'success' }), 401, 'UNAUTHORIZED');
    expectContractError(await report(b.jobId, a.attemptId, a.token, { outcome: 'success' }), 401, 'UNAUTHORIZED');
    expectContractError(await report(a.jobId, a.attemptId, `pcb_${'A'.repeat(43)}`, { outcome: 'success' }), 401, 'UNAUTHORIZED');
    expectContractError(await report(a.jobId, a.attemptId, 'nonsense', { outcome: 'success' }), 401, 'UNAUTHORIZED');
    // The token is checked before the body: a wrong token with a bad body is still 401.
    expectContractError(await report(a.jobId, a.attemptId, b.token, { outcome: 'maybe' }), 401, 'UNAUTHORIZED');

    const stranger = await asyncProject();
    expectContractError(await report(a.jobId, a.attemptId, stranger.key, { outcome: 'success' }), 404, 'NOT_FOUND');
    expect(await jobOf(p, a.jobId)).toMatchObject({ status: 'STARTED' });
    const byKey = await report(a.jobId, a.attemptId, p.key, { outcome: 'success' });
    expect(byKey.json()).toMatchObject({ status: 'COMPLETED' });
    // An attempt that is not one of the job's.
    expectContractError(await report(a.jobId, b.attemptId, p.key, { outcome: 'success' }), 404, 'NOT_FOUND');
  });

  it.each([
    ['an unknown outcome', { outcome: 'done' }, 'outcome'],
    ['no outcome', {}, 'outcome'],
    ['an error longer than 1,000 characters', { outcome: 'failure', error: 'x'.repeat(1_001) }, 'error'],
    ['an error with a success', { outcome: 'success', error: 'but' }, 'error'],
  ])('refuses %s, changing nothing', async (_what, body, field) => {
    const p = await asyncProject();
    const { jobId, attemptId, token } = await deliveredAndAccepted(p);
    const res = await report(jobId, attemptId, token, body);
    expectContractError(res, 400, 'INVALID_REQUEST');
    expect(res.json().data.field).toBe(field);
    expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: null, reportedAt: null });
  });

  it('a report that overtakes its 202 waits for it to be recorded', async () => {
    const p = await asyncProject();
    let reported: Promise<{ statusCode: number; body: string }> | null = null;
    replyFor = (request) => {
      const { jobId, attemptId, callbackToken } = request.json as { jobId: string; attemptId: string; callbackToken: string };
      // Reported before the 202 has even left the receiver.
      reported = report(jobId, attemptId, callbackToken, { outcome: 'success' }).then((res) => ({ statusCode: res.statusCode, body: res.body }));
      return { status: 202, delayMs: 200 };
    };
    try {
      const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId as string;
      await t.engine!.claimLoop.tick();
      await receiver.waitFor(() => reported !== null);
      const answer = await reported!;
      expect(answer.statusCode).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ jobId, status: 'COMPLETED' });
      expect((await attemptsOf(p, jobId))[0]).toMatchObject({ outcome: 'success', statusCode: 202 });
    } finally {
      replyFor = () => ({ status: 202, body: 'accepted' });
    }
  });

  it('without asyncCompletion a 202 is a failed attempt as before, with no callbackToken, and a report on it is refused', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { maxRetries: 0 } } });
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId as string;
    await t.engine!.claimLoop.tick();
    await eventually(() => jobOf(p, jobId), { what: 'the job FAILED', until: (job) => job.status === 'FAILED' });
    const delivery = receiver.forJob(jobId)[0]!.json;
    expect(delivery).not.toHaveProperty('callbackToken');
    const [attempt] = await attemptsOf(p, jobId);
    expect(attempt).toMatchObject({ outcome: 'http_error', statusCode: 202, acceptedAt: null, reportedAt: null });
    const res = await report(jobId, attempt!.attemptId as string, p.key, { outcome: 'success' });
    expectContractError(res, 409, 'ATTEMPT_NOT_PENDING');
    expect(res.json().data.outcome).toBe('http_error');
  });

  it.each([
    ['asyncCompletion not a boolean', { asyncCompletion: 'yes' }, 'asyncCompletion'],
    ['a timeout below 1 s', { asyncCompletionTimeoutMs: 999 }, 'asyncCompletionTimeoutMs'],
    ['a timeout above 7 days', { asyncCompletionTimeoutMs: 604_800_001 }, 'asyncCompletionTimeoutMs'],
  ])('the management API refuses %s', async (_what, payload, field) => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const res = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload });
    expectContractError(res, 400, 'INVALID_REQUEST');
    expect(res.json().data.field).toBe(field);
    const project = (await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}` })).json();
    expect(project).toMatchObject({ asyncCompletion: false, asyncCompletionTimeoutMs: 3_600_000 });
  });
});
