import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

describe('Idempotency-Key', () => {
  let t: TestApp;
  let p: TestProject;
  const dispatch = (body: unknown, key: string, projectKey = p.key) =>
    t.api(projectKey, { method: 'POST', url: '/api/jobs/dispatch', headers: { 'idempotency-key': key, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const jobCount = async (projectId = p.projectId) =>
    (await t.store.jobList({ projectId, status: null, beforeSeq: null, limit: 1000 })).length;

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('replays the first answer for a JSON-equal body and creates nothing', async () => {
    const first = await dispatch({ payload: { a: 1, b: [1, 2] }, maxRetries: 1 }, 'order-1');
    expect(first.statusCode).toBe(201);
    const before = await jobCount();
    const replay = await dispatch({ maxRetries: 1, payload: { b: [1, 2], a: 1 } }, 'order-1');
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(first.body);
    expect(await jobCount()).toBe(before);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
  });

  it('refuses the same key with a different body', async () => {
    await dispatch({ payload: { a: 1 } }, 'order-2');
    const res = await dispatch({ payload: { a: 2 } }, 'order-2');
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('creates one job for concurrent requests with one key', async () => {
    const before = await jobCount();
    const answers = await Promise.all(Array.from({ length: 10 }, () => dispatch({ payload: { c: 1 } }, 'order-3')));
    expect(answers.filter((a) => a.statusCode === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.statusCode === 200)).toHaveLength(9);
    expect(new Set(answers.map((a) => a.json().jobId)).size).toBe(1);
    expect(await jobCount()).toBe(before + 1);
  });

  it('stores no key for a rejected request', async () => {
    const bad = await dispatch({ payload: 'nope' }, 'order-4');
    expect(bad.statusCode).toBe(400);
    const good = await dispatch({ payload: { fixed: true } }, 'order-4');
    expect(good.statusCode).toBe(201);
  });

  it('expires keys after 24 hours', async () => {
    const first = await dispatch({ payload: { e: 1 } }, 'order-5');
    t.clock.advance(24 * 3600_000 + 1);
    const again = await dispatch({ payload: { e: 2 } }, 'order-5');
    expect(again.statusCode).toBe(201);
    expect(again.json().jobId).not.toBe(first.json().jobId);
  });

  it('scopes keys to the project and to the endpoint', async () => {
    const other = await t.makeProject();
    const mine = await dispatch({ payload: { s: 1 } }, 'shared');
    const theirs = await dispatch({ payload: { s: 1 } }, 'shared', other.key);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.json().jobId).not.toBe(mine.json().jobId);
    const batch = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', headers: { 'idempotency-key': 'shared' }, payload: { jobs: [{ payload: { s: 1 } }] } });
    expect(batch.statusCode).toBe(200);
    expect(batch.headers['idempotent-replayed']).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['non-ASCII', 'clé'],
  ])('refuses an Idempotency-Key that is %s', async (_name, key) => {
    const res = await dispatch({ payload: {} }, key);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'Idempotency-Key' } });
  });

  it('accepts a 255-character key', async () => {
    expect((await dispatch({ payload: {} }, 'k'.repeat(255))).statusCode).toBe(201);
  });
});

describe('POST /api/jobs/dispatch/batch', () => {
  let t: TestApp;
  let p: TestProject;
  const batch = (body: unknown, projectKey = p.key, headers: Record<string, string> = {}) =>
    t.api(projectKey, { method: 'POST', url: '/api/jobs/dispatch/batch', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('stores the valid items and reports each invalid one in request order', async () => {
    const res = await batch({
      jobs: [
        { payload: { i: 0 } },
        { payload: [] },
        { payload: { i: 2 }, scheduledFor: '2027-03-01T00:00:00Z', maxRetries: 9 },
        { payload: {}, scheduledFor: '2027-03-01' },
        { payload: {}, maxRetries: '3' },
        'not an object',
      ],
      extra: 'ignored',
    });
    expect(res.statusCode).toBe(200);
    const jobs = res.json().jobs;
    expect(jobs).toHaveLength(6);
    expect(jobs[0]).toEqual({ jobId: expect.stringMatching(/^job_/), status: 'QUEUED', scheduledFor: null, maxRetries: 3 });
    expect(jobs[1]).toMatchObject({ error: 'INVALID_PAYLOAD', data: { field: 'payload' } });
    expect(jobs[2]).toMatchObject({ status: 'QUEUED', scheduledFor: '2027-03-01T00:00:00.000Z', maxRetries: 3 });
    expect(jobs[3]).toMatchObject({ error: 'INVALID_SCHEDULE' });
    expect(jobs[4]).toMatchObject({ error: 'INVALID_MAX_RETRIES' });
    expect(jobs[5]).toMatchObject({ error: 'INVALID_REQUEST' });
    const stored = await t.store.jobList({ projectId: p.projectId, status: null, beforeSeq: null, limit: 100 });
    expect(stored.map((j) => j.id).sort()).toEqual([jobs[0].jobId, jobs[2].jobId].sort());
  });

  it.each([
    ['no jobs field', {}],
    ['an empty list', { jobs: [] }],
    ['101 jobs', { jobs: Array.from({ length: 101 }, () => ({ payload: {} })) }],
    ['jobs not a list', { jobs: { payload: {} } }],
    ['an array body', [{ payload: {} }]],
  ])('refuses a batch with %s as INVALID_REQUEST', async (_name, body) => {
    const res = await batch(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('INVALID_REQUEST');
  });

  it('accepts 100 jobs in one request', async () => {
    const res = await batch({ jobs: Array.from({ length: 100 }, (_, i) => ({ payload: { i } })) });
    expect(res.statusCode).toBe(200);
    expect(res.json().jobs.every((j: { status?: string }) => j.status === 'QUEUED')).toBe(true);
  });

  it('refuses the whole batch when the project has no webhook URL', async () => {
    const bare = await t.makeProject({ webhookUrl: null });
    const res = await batch({ jobs: [{ payload: {} }] }, bare.key);
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('WEBHOOK_NOT_CONFIGURED');
  });

  it('allows a body up to 2 MiB and refuses more before parsing', async () => {
    const big = JSON.stringify({ jobs: Array.from({ length: 100 }, () => ({ payload: { s: 'x'.repeat(10_000) } })) });
    expect(big.length).toBeGreaterThan(65_536);
    expect((await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: big, headers: { 'content-type': 'application/json' } })).statusCode).toBe(200);
    const tooBig = `{"jobs": [${'1,'.repeat(1_100_000)}1]}`;
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: tooBig, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ error: 'PAYLOAD_TOO_LARGE', data: { limit: 2_097_152 } });
  });

  it('replays a batch with the same Idempotency-Key', async () => {
    const body = { jobs: [{ payload: { r: 1 } }, { payload: 5 }] };
    const first = await batch(body, p.key, { 'idempotency-key': 'batch-1' });
    const again = await batch(body, p.key, { 'idempotency-key': 'batch-1' });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
  });
});
