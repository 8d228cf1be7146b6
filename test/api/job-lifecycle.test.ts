import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setJobState } from '../support/job-fixtures.js';
import { DAY, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

describe('job status, cancel, reschedule, retry, attempts', () => {
  let t: TestApp;
  let p: TestProject;
  const iso = (ms: number) => new Date(ms).toISOString();
  const dispatch = async (body: Record<string, unknown> = { payload: { n: 1 } }) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const get = (jobId: string) => t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` });
  const cancel = (jobId: string) => t.api(p.key, { method: 'DELETE', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' } });
  const patch = (jobId: string, body: unknown) =>
    t.api(p.key, { method: 'PATCH', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('GET answers the full status body', async () => {
    const created = t.clock.now();
    const jobId = await dispatch({ payload: { a: [1, 2] }, scheduledFor: iso(created + DAY), maxRetries: 2 });
    t.clock.advance(1000);
    const res = await get(jobId);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      jobId,
      status: 'QUEUED',
      scheduledFor: iso(created + DAY),
      maxRetries: 2,
      attemptCount: 0,
      nextAttemptAt: iso(created + DAY),
      createdAt: iso(created),
      updatedAt: iso(created),
      lastError: null,
      // SPEC section 14: a job without tags shows them as {}.
      tags: {},
      payload: { a: [1, 2] },
    });
  });

  it('an unknown job is NOT_FOUND', async () => {
    const res = await get('job_doesnotexist0000000');
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('NOT_FOUND');
  });

  it('cancels a QUEUED job once; CANCELLED is final', async () => {
    const jobId = await dispatch();
    t.clock.advance(500);
    const res = await cancel(jobId);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ jobId, status: 'CANCELLED' });
    const status = (await get(jobId)).json();
    expect(status).toMatchObject({ status: 'CANCELLED', cancelledAt: iso(t.clock.now()), nextAttemptAt: null });
    const again = await cancel(jobId);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ error: 'JOB_NOT_QUEUED', data: { status: 'CANCELLED' } });
    const reschedule = await patch(jobId, { scheduledFor: null });
    expect(reschedule.statusCode).toBe(409);
    expect(reschedule.json()).toMatchObject({ error: 'JOB_NOT_QUEUED', data: { status: 'CANCELLED' } });
    expect((await get(jobId)).json().status).toBe('CANCELLED');
  });

  it('cancel accepts a DELETE with no body and no Content-Type', async () => {
    const jobId = await dispatch();
    const res = await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${jobId}` });
    expect(res.statusCode).toBe(200);
  });

  it('reschedules a QUEUED job later, earlier and to "at once"', async () => {
    const start = t.clock.now();
    const jobId = await dispatch({ payload: {}, scheduledFor: iso(start + DAY) });
    t.clock.advance(60_000);
    const later = await patch(jobId, { scheduledFor: iso(start + 2 * DAY) });
    expect(later.statusCode).toBe(200);
    expect(later.json()).toEqual({ jobId, scheduledFor: iso(start + 2 * DAY), status: 'QUEUED' });
    expect((await get(jobId)).json()).toMatchObject({ scheduledFor: iso(start + 2 * DAY), nextAttemptAt: iso(start + 2 * DAY), updatedAt: iso(start + 60_000) });

    const alias = await patch(jobId, { scheduleFor: '2027-01-01T12:00:00+00:00' });
    expect(alias.json().scheduledFor).toBe('2027-01-01T12:00:00.000Z');

    // Null or a past time: due from the moment the job entered QUEUED (its creation here).
    const now = await patch(jobId, { scheduledFor: null });
    expect(now.json()).toEqual({ jobId, scheduledFor: null, status: 'QUEUED' });
    expect((await get(jobId)).json()).toMatchObject({ scheduledFor: null, nextAttemptAt: iso(start) });
    const past = await patch(jobId, { scheduledFor: iso(start - DAY) });
    expect(past.json().scheduledFor).toBe(iso(start - DAY));
    expect((await get(jobId)).json().nextAttemptAt).toBe(iso(start));
  });

  it('reschedule validates like dispatch', async () => {
    const jobId = await dispatch();
    const missing = await patch(jobId, {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toBe('INVALID_SCHEDULE');
    const zoneless = await patch(jobId, { scheduledFor: '2027-01-05T09:30:00' });
    expect(zoneless.json()).toMatchObject({ error: 'INVALID_SCHEDULE', data: { field: 'scheduledFor' } });
    const tooFar = await patch(jobId, { scheduledFor: iso(t.clock.now() + 366 * DAY + 1) });
    expect(tooFar.json().error).toBe('INVALID_SCHEDULE');
    const both = await patch(jobId, { scheduledFor: null, scheduleFor: null });
    expect(both.json().error).toBe('INVALID_REQUEST');
    const empty = await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBe('INVALID_REQUEST');
    const notFound = await patch('job_nope0000000000000000', { scheduledFor: null });
    expect(notFound.statusCode).toBe(404);
  });

  it('retry requeues only a FAILED job, with a fresh budget', async () => {
    const jobId = await dispatch();
    const notFailed = await t.api(p.key, { method: 'POST', url: `/api/jobs/${jobId}/retry` });
    expect(notFailed.statusCode).toBe(409);
    expect(notFailed.json()).toMatchObject({ error: 'JOB_NOT_FAILED', data: { status: 'QUEUED' } });

    await setJobState(t.databaseUrl, jobId, { status: 'FAILED', attemptCount: 4, lastError: 'HTTP 500', failedAt: t.clock.now() });
    t.clock.advance(5000);
    const res = await t.api(p.key, { method: 'POST', url: `/api/jobs/${jobId}/retry` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ jobId, status: 'QUEUED' });
    const status = (await get(jobId)).json();
    expect(status).toMatchObject({ status: 'QUEUED', attemptCount: 4, nextAttemptAt: iso(t.clock.now()), lastError: 'HTTP 500' });
    expect(status.failedAt).toBeUndefined();
    const row = await t.store.jobGet({ projectId: p.projectId, jobId });
    expect(row!.roundStartAttemptCount).toBe(4);
    expect((await t.api(p.key, { method: 'POST', url: '/api/jobs/job_nope0000000000000000/retry' })).statusCode).toBe(404);
  });

  it('cancel of a job that is not QUEUED reports its status', async () => {
    const jobId = await dispatch();
    await setJobState(t.databaseUrl, jobId, { status: 'STARTED' });
    const res = await cancel(jobId);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ error: 'JOB_NOT_QUEUED', data: { status: 'STARTED' } });
    expect((await patch(jobId, { scheduledFor: null })).json().data.status).toBe('STARTED');
  });

  it('attempts answers an empty list for a new job and 404 for an unknown one', async () => {
    const jobId = await dispatch();
    const res = await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}/attempts` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ attempts: [] });
    expect((await t.api(p.key, { method: 'GET', url: '/api/jobs/job_nope0000000000000000/attempts' })).statusCode).toBe(404);
  });
});
