import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, makeTestApp, SECOND, type TestApp, type TestProject } from '../support/make-app.js';

/** A payload object whose JSON.stringify is exactly `bytes` UTF-8 bytes, made of multi-byte characters. */
function payloadOfBytes(bytes: number): Record<string, string> {
  const overhead = Buffer.byteLength(JSON.stringify({ k: '' }));
  let text = '';
  // € is 3 bytes, é 2 bytes, 🙂 4 bytes: mix them, then pad with ASCII.
  const pieces = ['€', 'é', '🙂'];
  while (overhead + Buffer.byteLength(text) + 4 <= bytes) text += pieces[text.length % 3];
  text += 'a'.repeat(bytes - overhead - Buffer.byteLength(text));
  const payload = { k: text };
  expect(Buffer.byteLength(JSON.stringify(payload))).toBe(bytes);
  return payload;
}

describe('POST /api/jobs/dispatch', () => {
  let t: TestApp;
  let p: TestProject;
  const iso = (ms: number) => new Date(ms).toISOString();
  const dispatch = (body: unknown, headers: Record<string, string> = {}) =>
    t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('queues a job and answers 201 with the contract shape', async () => {
    const res = await dispatch({ payload: { hello: 'world' } });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = res.json();
    expect(body).toEqual({ jobId: expect.stringMatching(/^job_[A-Za-z0-9_-]{16,}$/), status: 'QUEUED', scheduledFor: null, maxRetries: 3 });
    const status = await t.api(p.key, { method: 'GET', url: `/api/jobs/${body.jobId}` });
    expect(status.json()).toMatchObject({ status: 'QUEUED', payload: { hello: 'world' }, nextAttemptAt: iso(t.clock.now()) });
  });

  it('normalises scheduledFor to UTC with milliseconds, truncating the fraction', async () => {
    const res = await dispatch({ payload: {}, scheduledFor: '2027-01-05t10:30:00.123999+01:00' });
    expect(res.statusCode).toBe(201);
    expect(res.json().scheduledFor).toBe('2027-01-05T09:30:00.123Z');
  });

  it('accepts the scheduleFor alias and names it in errors', async () => {
    const ok = await dispatch({ payload: {}, scheduleFor: '2027-01-05T09:30:00Z' });
    expect(ok.statusCode).toBe(201);
    expect(ok.json().scheduledFor).toBe('2027-01-05T09:30:00.000Z');
    const bad = await dispatch({ payload: {}, scheduleFor: '2027-01-05T09:30:00' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'INVALID_SCHEDULE', data: { field: 'scheduleFor' } });
  });

  it('refuses scheduledFor and scheduleFor together', async () => {
    const res = await dispatch({ payload: {}, scheduledFor: null, scheduleFor: null });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('INVALID_REQUEST');
  });

  it('keeps a past scheduledFor and makes the job due at once', async () => {
    const past = t.clock.now() - DAY;
    const res = await dispatch({ payload: {}, scheduledFor: iso(past) });
    expect(res.statusCode).toBe(201);
    expect(res.json().scheduledFor).toBe(iso(past));
    const status = (await t.api(p.key, { method: 'GET', url: `/api/jobs/${res.json().jobId}` })).json();
    expect(status.nextAttemptAt).toBe(iso(t.clock.now()));
  });

  it('accepts exactly 366 days ahead and refuses one second more', async () => {
    const limit = t.clock.now() + 366 * DAY;
    expect((await dispatch({ payload: {}, scheduledFor: iso(limit) })).statusCode).toBe(201);
    const over = await dispatch({ payload: {}, scheduledFor: iso(limit + SECOND) });
    expect(over.statusCode).toBe(400);
    expect(over.json()).toMatchObject({ error: 'INVALID_SCHEDULE', data: { field: 'scheduledFor' } });
  });

  it.each([
    ['zoneless', '2027-01-05T09:30:00'],
    ['date only', '2027-01-05'],
    ['February 30', '2027-02-30T00:00:00Z'],
    ['February 29 of a common year', '2027-02-29T00:00:00Z'],
    ['hour 25', '2027-01-05T25:00:00Z'],
    ['leap second', '2026-12-31T23:59:60Z'],
    ['offset hour 24', '2027-01-05T09:30:00+24:00'],
    ['offset minute 60', '2027-01-05T09:30:00+01:60'],
    ['space separator', '2027-01-05 09:30:00Z'],
    ['empty fraction', '2027-01-05T09:30:00.Z'],
    ['a number', 1767000000000],
    ['garbage', 'tomorrow'],
  ])('refuses a %s timestamp as INVALID_SCHEDULE', async (_name, value) => {
    const res = await dispatch({ payload: {}, scheduledFor: value });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('INVALID_SCHEDULE');
    expect(res.json().data.message).toEqual(expect.any(String));
  });

  it('accepts February 29 of a leap year', async () => {
    const res = await dispatch({ payload: {}, scheduledFor: '2024-02-29T23:59:59.5-00:30' });
    expect(res.statusCode).toBe(201);
    expect(res.json().scheduledFor).toBe('2024-03-01T00:29:59.500Z');
  });

  it('accepts a payload of exactly 10,240 bytes and refuses 10,241 (multi-byte characters)', async () => {
    const ok = await dispatch({ payload: payloadOfBytes(10_240) });
    expect(ok.statusCode).toBe(201);
    const stored = await t.api(p.key, { method: 'GET', url: `/api/jobs/${ok.json().jobId}` });
    expect(stored.json().payload).toEqual(payloadOfBytes(10_240));
    const over = await dispatch({ payload: payloadOfBytes(10_241) });
    expect(over.statusCode).toBe(413);
    expect(over.json()).toMatchObject({ error: 'PAYLOAD_TOO_LARGE', data: { field: 'payload', limit: 10_240, size: 10_241 } });
  });

  it.each([
    ['missing', {}],
    ['an array', { payload: [1] }],
    ['a string', { payload: 'x' }],
    ['a number', { payload: 1 }],
    ['a boolean', { payload: true }],
    ['null', { payload: null }],
  ])('refuses a payload that is %s as INVALID_PAYLOAD', async (_name, body) => {
    const res = await dispatch(body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'INVALID_PAYLOAD', data: { field: 'payload' } });
  });

  it.each([
    ['-1', -1],
    ['1.5', 1.5],
    ['"3"', '3'],
    ['null', null],
    ['true', true],
  ])('refuses maxRetries %s as INVALID_MAX_RETRIES', async (_name, value) => {
    const res = await dispatch({ payload: {}, maxRetries: value });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'INVALID_MAX_RETRIES', data: { field: 'maxRetries' } });
  });

  it('caps maxRetries at the plan cap instead of refusing it', async () => {
    const res = await dispatch({ payload: {}, maxRetries: 99 });
    expect(res.statusCode).toBe(201);
    expect(res.json().maxRetries).toBe(3);
    expect((await dispatch({ payload: {}, maxRetries: 0 })).json().maxRetries).toBe(0);
  });

  it("defaults maxRetries to the project's retry policy, capped by the plan", async () => {
    const free = await t.makeProject({ plan: 'free' });
    const send = (body: unknown) =>
      t.api(free.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body as Record<string, unknown> });
    expect((await send({ payload: {} })).json().maxRetries).toBe(1); // free plan cap
    expect((await send({ payload: {}, maxRetries: 3 })).json().maxRetries).toBe(1);
    await t.services.manage.updateProject(p.projectId, { retryPolicy: { maxRetries: 2 } });
    expect((await dispatch({ payload: {} })).json().maxRetries).toBe(2);
    expect((await dispatch({ payload: {}, maxRetries: 1 })).json().maxRetries).toBe(1);
    await t.services.manage.updateProject(p.projectId, { retryPolicy: { maxRetries: null } });
  });

  it('ignores unknown top-level fields', async () => {
    const res = await dispatch({ payload: { a: 1 }, colour: 'blue' });
    expect(res.statusCode).toBe(201);
  });

  it('answers WEBHOOK_NOT_CONFIGURED for a project without a webhook URL', async () => {
    const bare = await t.makeProject({ webhookUrl: null });
    const res = await t.api(bare.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('WEBHOOK_NOT_CONFIGURED');
  });

  it('round-trips payloads byte for byte, unicode and __proto__ keys included', async () => {
    const payload = JSON.parse('{"__proto__":{"x":1},"nul":"a\\u0000b","lone":"\\ud800","emoji":"🙂","n":1.5e-7,"nested":{"deep":[1,{"z":null}]}}');
    const res = await dispatch({ payload });
    expect(res.statusCode).toBe(201);
    const job = await t.store.jobGet({ projectId: p.projectId, jobId: res.json().jobId });
    expect(job!.payload).toBe(JSON.stringify(payload));
  });
});

describe('dispatches answered together (one group commit)', () => {
  it("keep each job's own instant: a job due at once has nextAttemptAt equal to its createdAt (SPEC section 2)", async () => {
    // A clock that moves a millisecond at every reading, so that requests grouped in one commit
    // each have an instant of their own.
    let at = Date.parse('2027-01-01T00:00:00.000Z');
    const t = await makeTestApp({ clock: { now: () => (at += 1) } });
    try {
      const p = await t.makeProject();
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { i } } })));
      for (const answer of answers) {
        expect(answer.statusCode).toBe(201);
        const body = (await t.api(p.key, { method: 'GET', url: `/api/jobs/${answer.json().jobId}` })).json();
        expect(body.nextAttemptAt).toBe(body.createdAt);
      }
    } finally {
      await t.close();
    }
  });
});
