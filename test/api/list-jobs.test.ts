import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

describe('GET /api/jobs', () => {
  let t: TestApp;
  let p: TestProject;
  const dispatch = async () => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    return res.json().jobId as string;
  };
  const list = (query: string) => t.api(p.key, { method: 'GET', url: `/api/jobs${query}` });

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('pages newest first, neither skipping nor repeating while jobs are inserted', async () => {
    const original: string[] = [];
    for (let i = 0; i < 25; i++) original.push(await dispatch());
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(`?limit=10${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      seen.push(...body.jobs.map((j: { jobId: string }) => j.jobId));
      cursor = body.nextCursor;
      pages += 1;
      // New jobs arrive between pages: they are newer than the first page and must not show up later.
      for (let i = 0; i < 3; i++) await dispatch();
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...original].reverse());
  });

  it('filters by status, including CANCELLED', async () => {
    const cancelled = await dispatch();
    await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${cancelled}` });
    const res = await list('?status=CANCELLED');
    expect(res.json().jobs.map((j: { jobId: string }) => j.jobId)).toEqual([cancelled]);
    expect(res.json().jobs[0]).toMatchObject({ status: 'CANCELLED', cancelledAt: expect.any(String) });
    expect(res.json().nextCursor).toBeNull();
  });

  it('defaults to 50 per page', async () => {
    for (let i = 0; i < 20; i++) await dispatch();
    const res = await list('');
    expect(res.json().jobs).toHaveLength(50);
    expect(res.json().nextCursor).toEqual(expect.any(String));
  });

  it.each([
    ['an unknown status', '?status=DONE'],
    ['a lowercase status', '?status=queued'],
    ['limit 0', '?limit=0'],
    ['limit 101', '?limit=101'],
    ['limit 1.5', '?limit=1.5'],
    ['limit abc', '?limit=abc'],
    ['a made-up cursor', '?cursor=abc'],
    ['a repeated status', '?status=QUEUED&status=FAILED'],
  ])('refuses %s as INVALID_REQUEST', async (_name, query) => {
    const res = await list(query);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('INVALID_REQUEST');
  });
});
