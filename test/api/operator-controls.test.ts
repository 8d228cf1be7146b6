import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execSql, queryRows } from '../support/job-fixtures.js';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, SECOND, type TestApp, type TestProject } from '../support/make-app.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** SPEC section 2's list filters and bulk replay, section 10's pause setting; with an injected clock and no delivery. */
describe('GET /api/jobs filters', () => {
  let t: TestApp;
  let p: TestProject;
  const ids = (res: { json: () => { jobs: { jobId: string }[] } }) => res.json().jobs.map((j) => j.jobId);

  beforeAll(async () => {
    t = await makeTestApp({ now: Date.UTC(2027, 0, 5, 9, 0, 0) });
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('createdAfter is inclusive, createdBefore exclusive, and they combine with status and the cursor', async () => {
    const start = t.clock.now();
    const created: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { i }, scheduledFor: iso(start + 3_600_000) } });
      created.push(res.json().jobId);
      t.clock.advance(SECOND);
    }
    await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${created[2]}` });
    // Created at start+1s .. start+4s: jobs 1, 2, 3, 4.
    const window = `createdAfter=${iso(start + SECOND)}&createdBefore=${iso(start + 5 * SECOND)}`;
    const all = await t.api(p.key, { method: 'GET', url: `/api/jobs?${window}` });
    expect(all.statusCode).toBe(200);
    expect(ids(all)).toEqual([created[4], created[3], created[2], created[1]]);
    const queued = await t.api(p.key, { method: 'GET', url: `/api/jobs?${window}&status=QUEUED` });
    expect(ids(queued)).toEqual([created[4], created[3], created[1]]);
    const page1 = await t.api(p.key, { method: 'GET', url: `/api/jobs?${window}&limit=2` });
    expect(ids(page1)).toEqual([created[4], created[3]]);
    const page2 = await t.api(p.key, { method: 'GET', url: `/api/jobs?${window}&limit=2&cursor=${page1.json().nextCursor}` });
    expect(ids(page2)).toEqual([created[2], created[1]]);
    expect(page2.json().nextCursor).toBeNull();
  });

  it("a cursor of seq alone (the list without a window's, every list's before migration 0012) pages that list, and is refused by a list by creation window or schedule", async () => {
    const seqAlone = Buffer.from('s1').toString('base64url');
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs?cursor=${seqAlone}` })).json()).toEqual({ jobs: [], nextCursor: null });
    for (let i = 0; i < 2; i++) await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    const plain = await t.api(p.key, { method: 'GET', url: '/api/jobs?limit=1' });
    const cursor = plain.json().nextCursor as string;
    expect(Buffer.from(cursor, 'base64url').toString()).toMatch(/^s\d+$/);
    // A list by creation window or schedule is ordered by creation time: seq alone does not say where to continue.
    for (const filter of [`createdBefore=${iso(t.clock.now())}`, 'scheduleId=sch_any']) {
      for (const given of [seqAlone, cursor]) {
        const res = await t.api(p.key, { method: 'GET', url: `/api/jobs?${filter}&cursor=${given}` });
        expectContractError(res, 400, 'INVALID_REQUEST');
        expect(res.json().data).toMatchObject({ field: 'cursor' });
      }
    }
  });

  it('scheduleId lists one schedule\'s jobs, with status, and nothing of another project\'s schedule', async () => {
    const schedule = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '0 * * * *', payload: { s: 1 } } });
    const scheduleId = schedule.json().scheduleId as string;
    const fired: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.api(p.key, { method: 'POST', url: `/api/schedules/${scheduleId}/trigger` });
      fired.push(res.json().jobId);
    }
    await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${fired[0]}` });
    const res = await t.api(p.key, { method: 'GET', url: `/api/jobs?scheduleId=${scheduleId}` });
    expect(ids(res)).toEqual([...fired].reverse());
    expect(res.json().jobs.every((j: { scheduleId: string }) => j.scheduleId === scheduleId)).toBe(true);
    const cancelled = await t.api(p.key, { method: 'GET', url: `/api/jobs?scheduleId=${scheduleId}&status=CANCELLED` });
    expect(ids(cancelled)).toEqual([fired[0]]);
    const other = await t.makeProject();
    const foreign = await t.api(other.key, { method: 'GET', url: `/api/jobs?scheduleId=${scheduleId}` });
    expect(foreign.statusCode).toBe(200);
    expect(foreign.json().jobs).toEqual([]);
    expect((await t.api(p.key, { method: 'GET', url: '/api/jobs?scheduleId=sch_none' })).json().jobs).toEqual([]);
  });

  it.each([
    ['a date without a zone', 'createdAfter=2027-01-05T09:00:00'],
    ['a number', 'createdBefore=1767000000000'],
    ['an impossible date', 'createdAfter=2027-02-30T00:00:00Z'],
    ['createdAfter twice', 'createdAfter=2027-01-05T09:00:00Z&createdAfter=2027-01-05T09:00:00Z'],
  ])('refuses %s with INVALID_REQUEST', async (_what, query) => {
    const res = await t.api(p.key, { method: 'GET', url: `/api/jobs?${query}` });
    expectContractError(res, 400, 'INVALID_REQUEST');
  });
});

describe('POST /api/jobs/retry (bulk replay)', () => {
  let t: TestApp;
  let p: TestProject;
  const base = Date.UTC(2027, 0, 5, 9, 0, 0);
  const JOBS = 5_000;
  let jobIds: string[] = [];

  /** JOBS jobs, FAILED one millisecond apart in creation order (base + i), as if each had spent its retries. */
  async function failJobs(project: TestProject, count: number): Promise<string[]> {
    const made: string[] = [];
    for (let i = 0; i < count; i += 100) {
      const jobs = Array.from({ length: Math.min(100, count - i) }, () => ({ payload: {}, scheduledFor: iso(base + 3_600_000) }));
      const res = await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs } });
      made.push(...res.json().jobs.map((j: { jobId: string }) => j.jobId));
    }
    await execSql(
      t.databaseUrl,
      `UPDATE jobs SET status = 'FAILED', attempt_count = 4, last_error = 'HTTP 500', failed_at = $2 + seq - (SELECT MIN(seq) FROM jobs WHERE project_id = $1)
       WHERE project_id = $1`,
      [project.projectId, base],
    );
    return made;
  }
  const statuses = async () =>
    queryRows<{ id: string; status: string; roundStart: number; attempts: number }>(
      t.databaseUrl,
      'SELECT id, status, round_start_attempt_count AS "roundStart", attempt_count AS attempts FROM jobs WHERE project_id = $1 ORDER BY seq',
      [p.projectId],
    );

  beforeAll(async () => {
    t = await makeTestApp({ now: base });
    p = await t.makeProject();
    jobIds = await failJobs(p, JOBS);
  });
  afterAll(() => t.close());

  it('replays the window, oldest failure first, up to the limit, and says whether more remain', async () => {
    t.clock.set(base + 3_600_000);
    // failedAfter inclusive, failedBefore exclusive: failures at base+100 .. base+1099 match (1,000 jobs).
    const window = { status: 'FAILED', failedAfter: iso(base + 100), failedBefore: iso(base + 1_100) };
    const first = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: { ...window, limit: 600 } });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ retried: 600, hasMore: true });
    let rows = await statuses();
    expect(rows.filter((r) => r.status === 'QUEUED').map((r) => r.id)).toEqual(jobIds.slice(100, 700));
    const second = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: window });
    expect(second.json()).toEqual({ retried: 400, hasMore: false });
    rows = await statuses();
    expect(rows.filter((r) => r.status === 'QUEUED').map((r) => r.id)).toEqual(jobIds.slice(100, 1_100));
    // Queued as the single retry does: due now, a fresh retry budget.
    const job = (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobIds[100]}` })).json();
    expect(job).toMatchObject({ status: 'QUEUED', nextAttemptAt: iso(base + 3_600_000) });
    expect(rows.find((r) => r.id === jobIds[100])).toMatchObject({ roundStart: 4, attempts: 4 });
    const again = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: window });
    expect(again.json()).toEqual({ retried: 0, hasMore: false });
  });

  it('replays every one of 5,000 exactly once when two replays run at once', async () => {
    const [a, b] = await Promise.all([
      t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: { status: 'FAILED', limit: 10_000 } }),
      t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: { status: 'FAILED', limit: 10_000 } }),
    ]);
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    expect(a.json().retried + b.json().retried).toBe(JOBS - 1_000);
    const rows = await statuses();
    expect(rows.filter((r) => r.status !== 'QUEUED')).toEqual([]);
    expect(rows.every((r) => r.roundStart === r.attempts)).toBe(true);
  });

  it('leaves another project\'s failed jobs alone', async () => {
    const other = await t.makeProject();
    await failJobs(other, 3);
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: { status: 'FAILED' } });
    expect(res.json()).toEqual({ retried: 0, hasMore: false });
    const theirs = await queryRows<{ status: string }>(t.databaseUrl, 'SELECT status FROM jobs WHERE project_id = $1', [other.projectId]);
    expect(theirs.map((r) => r.status)).toEqual(['FAILED', 'FAILED', 'FAILED']);
  });

  it.each([
    ['no status', {}],
    ['status QUEUED', { status: 'QUEUED' }],
    ['limit 0', { status: 'FAILED', limit: 0 }],
    ['limit 10,001', { status: 'FAILED', limit: 10_001 }],
    ['a fractional limit', { status: 'FAILED', limit: 1.5 }],
    ['failedAfter without a zone', { status: 'FAILED', failedAfter: '2027-01-05T09:00:00' }],
    ['failedBefore as a number', { status: 'FAILED', failedBefore: 1767000000000 }],
  ])('refuses %s with INVALID_REQUEST', async (_what, payload) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload });
    expectContractError(res, 400, 'INVALID_REQUEST');
  });

  it('is in /openapi.json', async () => {
    const spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(spec.paths['/api/jobs/retry'].post).toBeDefined();
    const params = spec.paths['/api/jobs'].get.parameters.map((param: { name: string }) => param.name);
    expect(params).toEqual(expect.arrayContaining(['scheduleId', 'createdAfter', 'createdBefore']));
    expect(spec.paths['/manage/v1/projects/{projectId}/events'].get).toBeDefined();
  });
});
