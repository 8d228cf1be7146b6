import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { setJobState } from '../support/job-fixtures.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

/** SPEC section 14 through the HTTP API, on both stores: tags, the one filter of GET /api/jobs, and POST /api/jobs/bulk. */
describe('tags, filters and bulk actions (SPEC section 14)', () => {
  const T0 = Date.parse('2027-01-01T00:00:00.000Z');
  const HOUR = 3_600_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  let t: TestApp;
  let p: TestProject;
  /** Another tenant, with jobs of the same tags, schedule names and times: never seen, counted or changed through p's key. */
  let other: TestProject;

  const post = (url: string, body: unknown, key = p.key) =>
    t.api(key, { method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  const dispatch = async (body: Record<string, unknown>, key = p.key) => {
    const res = await post('/api/jobs/dispatch', { payload: {}, ...body }, key);
    expect(res.statusCode, res.body).toBe(201);
    return res.json().jobId as string;
  };
  const get = (url: string, key = p.key) => t.api(key, { method: 'GET', url });
  const listed = async (query: string, key = p.key) => {
    const res = await get(`/api/jobs${query}`, key);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().jobs as { jobId: string }[]).map((job) => job.jobId);
  };
  const bulk = (body: Record<string, unknown>, key = p.key) => post('/api/jobs/bulk', body, key);
  const statusOf = async (jobId: string, key = p.key) => (await get(`/api/jobs/${jobId}`, key)).json().status as string;

  beforeAll(async () => {
    t = await makeTestApp({ now: T0 });
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    p = await t.makeProject();
    other = await t.makeProject();
  });

  describe('tags on jobs and schedules', () => {
    it("stores a dispatch's tags and shows them in the status body and the list; a job without shows {} and its dispatch answer is unchanged", async () => {
      const res = await post('/api/jobs/dispatch', { payload: { a: 1 }, tags: { order: '123', 'env.name': 'prod:eu' } });
      expect(res.statusCode).toBe(201);
      const tagged = res.json().jobId as string;
      const plain = await post('/api/jobs/dispatch', { payload: { a: 2 } });
      // A client that sends no tags gets the answer it always got.
      expect(Object.keys(plain.json())).toEqual(['jobId', 'status', 'scheduledFor', 'maxRetries']);
      expect(Object.keys(res.json())).toEqual(['jobId', 'status', 'scheduledFor', 'maxRetries']);
      expect((await get(`/api/jobs/${tagged}`)).json().tags).toEqual({ order: '123', 'env.name': 'prod:eu' });
      expect((await get(`/api/jobs/${plain.json().jobId}`)).json().tags).toEqual({});
      const list = (await get('/api/jobs')).json().jobs as { jobId: string; tags: unknown }[];
      expect(list.map((job) => job.tags)).toEqual([{}, { order: '123', 'env.name': 'prod:eu' }]);
      // An empty object is no tags.
      expect((await get(`/api/jobs/${await dispatch({ tags: {} })}`)).json().tags).toEqual({});
    });

    it('takes tags on batch items, item by item', async () => {
      const res = await post('/api/jobs/dispatch/batch', { jobs: [{ payload: {}, tags: { order: '1' } }, { payload: {}, tags: { order: 1 } }, { payload: {} }] });
      expect(res.statusCode).toBe(200);
      const [first, refused, third] = res.json().jobs;
      expect((await get(`/api/jobs/${first.jobId}`)).json().tags).toEqual({ order: '1' });
      expect(refused).toMatchObject({ error: 'INVALID_TAGS', data: { field: 'tags' } });
      expect((await get(`/api/jobs/${third.jobId}`)).json().tags).toEqual({});
    });

    const LONG_VALUE = 'é'.repeat(256);
    it.each([
      ['an array', ['order:1']],
      ['a string', 'order:1'],
      ['null', null],
      ['11 entries', Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']))],
      ['an empty key', { '': 'v' }],
      ['a key with a space', { 'my key': 'v' }],
      ['a key with a slash', { 'a/b': 'v' }],
      ['a key of 65 characters', { ['k'.repeat(65)]: 'v' }],
      ['a number value', { order: 123 }],
      ['an empty value', { order: '' }],
      ['a value of 257 characters', { order: `${LONG_VALUE}x` }],
      ['an object value', { order: { id: 1 } }],
    ])('refuses tags that are %s with INVALID_TAGS on field tags, on a dispatch and a schedule, creating nothing', async (_what, tags) => {
      const dispatched = await post('/api/jobs/dispatch', { payload: {}, tags });
      expectContractError(dispatched, 400, 'INVALID_TAGS');
      expect(dispatched.json().data.field).toBe('tags');
      const scheduled = await post('/api/schedules', { cron: '@daily', payload: {}, tags });
      expectContractError(scheduled, 400, 'INVALID_TAGS');
      expect(scheduled.json().data.field).toBe('tags');
      expect(await listed('')).toEqual([]);
      expect((await get('/api/schedules')).json().schedules).toEqual([]);
    });

    it('takes 10 entries, keys of 64 characters of [A-Za-z0-9_.:-] and values of 256 characters (counted as a person does)', async () => {
      const tags = { ['k'.repeat(64)]: LONG_VALUE, 'a_b.c:d-e': '1', ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`K${i}`, 'v'])) };
      expect((await get(`/api/jobs/${await dispatch({ tags })}`)).json().tags).toEqual(tags);
    });

    it("gives a schedule's tags to its jobs; a PATCH replaces them, {} removes them", async () => {
      const created = await post('/api/schedules', { cron: '@daily', payload: {}, tags: { feed: 'daily' } });
      expect(created.statusCode).toBe(201);
      const schedule = created.json() as { scheduleId: string; tags: unknown };
      expect(schedule.tags).toEqual({ feed: 'daily' });
      const fired = (await post(`/api/schedules/${schedule.scheduleId}/trigger`, {})).json().jobId as string;
      expect((await get(`/api/jobs/${fired}`)).json().tags).toEqual({ feed: 'daily' });
      expect(await listed('?tag=feed:daily')).toEqual([fired]);
      const patch = (body: unknown) => t.api(p.key, { method: 'PATCH', url: `/api/schedules/${schedule.scheduleId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
      expect((await patch({ name: 'renamed' })).json().tags).toEqual({ feed: 'daily' });
      expect((await patch({ tags: { feed: 'weekly' } })).json().tags).toEqual({ feed: 'weekly' });
      const second = (await post(`/api/schedules/${schedule.scheduleId}/trigger`, {})).json().jobId as string;
      expect((await get(`/api/jobs/${second}`)).json().tags).toEqual({ feed: 'weekly' });
      expect((await patch({ tags: {} })).json().tags).toEqual({});
      expectContractError(await patch({ tags: { feed: '' } }), 400, 'INVALID_TAGS');
    });

    it("gives a schedule's tags to the jobs of its fires, created ahead by the firing loop", async () => {
      const created = await post('/api/schedules', { cron: '* * * * * *', payload: {}, tags: { feed: 'tick' } });
      const scheduleId = created.json().scheduleId as string;
      // The loop creates the fires of the next seconds ahead of their instants.
      await t.services.scheduleFiring.runOnce();
      const jobs = (await get(`/api/jobs?scheduleId=${scheduleId}`)).json().jobs as { jobId: string; tags: unknown }[];
      expect(jobs.length).toBeGreaterThan(0);
      expect(jobs.map((job) => job.tags)).toEqual(jobs.map(() => ({ feed: 'tick' })));
      expect(await listed(`?tag=feed:tick&scheduleId=${scheduleId}`)).toEqual(jobs.map((job) => job.jobId));
      await t.api(p.key, { method: 'DELETE', url: `/api/schedules/${scheduleId}` });
    });
  });

  describe('GET /api/jobs: the one filter', () => {
    it('filters by tag (every one given), by due window, and by both with status, schedule and creation time, a page at a time', async () => {
      const a = await dispatch({ tags: { order: '1', env: 'prod' }, scheduledFor: iso(T0 + HOUR) });
      t.clock.advance(1_000);
      const b = await dispatch({ tags: { order: '1', env: 'dev' }, scheduledFor: iso(T0 + 3 * HOUR) });
      t.clock.advance(1_000);
      const c = await dispatch({ tags: { order: '2' }, scheduledFor: iso(T0 + 2 * HOUR) });
      const d = await dispatch({ scheduledFor: iso(T0 + 2 * HOUR) });
      await dispatch({ tags: { order: '1', env: 'prod' }, scheduledFor: iso(T0 + HOUR) }, other.key);
      await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${b}` });
      expect(await listed('?tag=order:1')).toEqual([b, a]);
      expect(await listed('?tag=order:1&tag=env:prod')).toEqual([a]);
      expect(await listed('?tag=env:prod&tag=order:1')).toEqual([a]);
      expect(await listed('?tag=order:1&status=QUEUED')).toEqual([a]);
      expect(await listed('?tag=order:1&status=CANCELLED')).toEqual([b]);
      expect(await listed(`?tag=order:1&createdAfter=${iso(T0 + 1_000)}`)).toEqual([b]);
      expect(await listed(`?tag=order:1&createdBefore=${iso(T0 + 1_000)}`)).toEqual([a]);
      // dueAfter inclusive, dueBefore exclusive, against nextAttemptAt of QUEUED jobs (b is cancelled).
      expect(await listed(`?dueAfter=${iso(T0 + 2 * HOUR)}`)).toEqual([d, c]);
      expect(await listed(`?dueAfter=${iso(T0 + HOUR)}&dueBefore=${iso(T0 + 2 * HOUR)}`)).toEqual([a]);
      expect(await listed(`?dueBefore=${iso(T0 + 4 * HOUR)}&tag=order:1`)).toEqual([a]);
      expect(await listed(`?dueBefore=${iso(T0 + 4 * HOUR)}&status=CANCELLED`)).toEqual([]);
      const first = (await get('/api/jobs?tag=order:1&limit=1')).json();
      expect(first.jobs.map((job: { jobId: string }) => job.jobId)).toEqual([b]);
      expect(await listed(`?tag=order:1&limit=1&cursor=${first.nextCursor}`)).toEqual([a]);
      // A value may hold colons: the key ends at the first one.
      const timed = await dispatch({ tags: { at: '09:30' } });
      expect(await listed('?tag=at:09:30')).toEqual([timed]);
    });

    it.each([
      ['a tag without a colon', '?tag=order'],
      ['a tag without a key', '?tag=:1'],
      ['a tag without a value', '?tag=order:'],
      ['a tag with a bad key', '?tag=my%20key:1'],
      ['11 tags', `?${Array.from({ length: 11 }, (_, i) => `tag=k${i}:v`).join('&')}`],
      ['a bad dueAfter', '?dueAfter=tomorrow'],
      ['dueBefore twice', `?dueBefore=${encodeURIComponent('2027-01-01T00:00:00Z')}&dueBefore=${encodeURIComponent('2027-01-02T00:00:00Z')}`],
    ])('refuses %s with INVALID_REQUEST', async (_what, query) => {
      expectContractError(await get(`/api/jobs${query}`), 400, 'INVALID_REQUEST');
    });
  });

  describe('the one filter by concurrencyKey (SPEC section 15)', () => {
    it("lists and cancels one key's jobs, with the other filters too, and never another project's", async () => {
      const later = iso(T0 + HOUR);
      const a1 = await dispatch({ concurrencyKey: 'cust-1', scheduledFor: later });
      const a2 = await dispatch({ concurrencyKey: 'cust-1', scheduledFor: later, tags: { order: '1' } });
      const b1 = await dispatch({ concurrencyKey: 'cust-2', scheduledFor: later });
      const theirs = await dispatch({ concurrencyKey: 'cust-1', scheduledFor: later }, other.key);
      expect(await listed('?concurrencyKey=cust-1')).toEqual([a2, a1]);
      expect(await listed('?concurrencyKey=cust-1&tag=order:1')).toEqual([a2]);
      expect(await listed('?concurrencyKey=cust-1&status=CANCELLED')).toEqual([]);
      expectContractError(await get('/api/jobs?concurrencyKey=a&concurrencyKey=b'), 400, 'INVALID_REQUEST');
      const dry = await bulk({ action: 'cancel', filter: { concurrencyKey: 'cust-1' }, dryRun: true });
      expect(dry.json()).toMatchObject({ matched: 2, changed: 0 });
      const done = await bulk({ action: 'cancel', filter: { concurrencyKey: 'cust-1' } });
      expect(done.json()).toMatchObject({ matched: 2, changed: 2, hasMore: false });
      expect([await statusOf(a1), await statusOf(a2), await statusOf(b1), await statusOf(theirs, other.key)]).toEqual(['CANCELLED', 'CANCELLED', 'QUEUED', 'QUEUED']);
      expectContractError(await bulk({ action: 'cancel', filter: { concurrencyKey: 7 } }), 400, 'INVALID_REQUEST');
    });
  });

  describe('POST /api/jobs/bulk', () => {
    async function tagged(n: number, tags: Record<string, string>, extra: Record<string, unknown> = {}, key = p.key): Promise<string[]> {
      const made: string[] = [];
      for (let i = 0; i < n; i += 1) made.push(await dispatch({ tags, scheduledFor: iso(T0 + HOUR), ...extra }, key));
      return made;
    }

    it('cancels every QUEUED job of a tag, oldest first, limit at a time, saying whether more match; a dry run first changes nothing', async () => {
      const jobs = await tagged(5, { order: '123' });
      const theirs = await tagged(2, { order: '123' }, {}, other.key);
      const filter = { tags: { order: '123' } };
      expect((await bulk({ action: 'cancel', filter, dryRun: true })).json()).toEqual({ matched: 5, changed: 0, hasMore: false });
      expect((await bulk({ action: 'cancel', filter, dryRun: true, limit: 3 })).json()).toEqual({ matched: 3, changed: 0, hasMore: true });
      expect(await Promise.all(jobs.map((job) => statusOf(job)))).toEqual(Array(5).fill('QUEUED'));
      expect((await bulk({ action: 'cancel', filter, limit: 2 })).json()).toEqual({ matched: 2, changed: 2, hasMore: true });
      expect(await Promise.all(jobs.map((job) => statusOf(job)))).toEqual(['CANCELLED', 'CANCELLED', 'QUEUED', 'QUEUED', 'QUEUED']);
      expect((await bulk({ action: 'cancel', filter, limit: 2 })).json()).toEqual({ matched: 2, changed: 2, hasMore: true });
      expect((await bulk({ action: 'cancel', filter, limit: 2 })).json()).toEqual({ matched: 1, changed: 1, hasMore: false });
      expect((await bulk({ action: 'cancel', filter })).json()).toEqual({ matched: 0, changed: 0, hasMore: false });
      expect((await get(`/api/jobs/${jobs[0]}`)).json()).toMatchObject({ status: 'CANCELLED', cancelledAt: expect.any(String) });
      expect(await Promise.all(theirs.map((job) => statusOf(job, other.key)))).toEqual(['QUEUED', 'QUEUED']);
    });

    it('reschedules to a time or to at once as PATCH does, and a second run moves on instead of taking the same jobs again', async () => {
      const jobs = await tagged(3, { wave: 'a' });
      const to = iso(T0 + 5 * HOUR);
      expect((await bulk({ action: 'reschedule', filter: { tags: { wave: 'a' } }, scheduledFor: to, limit: 2 })).json()).toEqual({ matched: 2, changed: 2, hasMore: true });
      expect((await get(`/api/jobs/${jobs[0]}`)).json()).toMatchObject({ status: 'QUEUED', scheduledFor: to, nextAttemptAt: to });
      expect((await bulk({ action: 'reschedule', filter: { tags: { wave: 'a' } }, scheduledFor: to, limit: 2 })).json()).toEqual({ matched: 1, changed: 1, hasMore: false });
      expect((await get(`/api/jobs/${jobs[2]}`)).json()).toMatchObject({ scheduledFor: to, nextAttemptAt: to });
      // scheduleFor (as Dispatched spells it), and null: at once.
      expect((await bulk({ action: 'reschedule', filter: { tags: { wave: 'a' } }, scheduleFor: null })).json()).toEqual({ matched: 3, changed: 3, hasMore: false });
      const atOnce = (await get(`/api/jobs/${jobs[1]}`)).json();
      expect(atOnce).toMatchObject({ scheduledFor: null, nextAttemptAt: atOnce.createdAt });
    });

    it('retries the FAILED jobs of a filter with a fresh retry budget, as the retry endpoint does', async () => {
      const jobs = await tagged(3, { batch: 'b' });
      for (const job of jobs.slice(0, 2)) await setJobState(t.databaseUrl, job, { status: 'FAILED', attemptCount: 4, lastError: 'HTTP 500', failedAt: T0 });
      t.clock.advance(10_000);
      expect((await bulk({ action: 'retry', filter: { tags: { batch: 'b' } }, dryRun: true })).json()).toEqual({ matched: 2, changed: 0, hasMore: false });
      expect((await bulk({ action: 'retry', filter: { tags: { batch: 'b' } } })).json()).toEqual({ matched: 2, changed: 2, hasMore: false });
      expect((await get(`/api/jobs/${jobs[0]}`)).json()).toMatchObject({ status: 'QUEUED', nextAttemptAt: iso(t.clock.now()), attemptCount: 4 });
      // A status other than the action's matches nothing.
      expect((await bulk({ action: 'retry', filter: { tags: { batch: 'b' }, status: 'QUEUED' } })).json()).toEqual({ matched: 0, changed: 0, hasMore: false });
      expect((await bulk({ action: 'cancel', filter: { tags: { batch: 'b' }, status: 'FAILED' } })).json()).toEqual({ matched: 0, changed: 0, hasMore: false });
    });

    it("matches each filter field alone and combined, and never another project's job", async () => {
      const schedule = (await post('/api/schedules', { cron: '@daily', payload: {} })).json().scheduleId as string;
      const fromSchedule = (await post(`/api/schedules/${schedule}/trigger`, {})).json().jobId as string;
      await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${fromSchedule}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ scheduledFor: iso(T0 + 2 * HOUR) }) });
      const early = await dispatch({ tags: { order: '9' }, scheduledFor: iso(T0 + HOUR) });
      t.clock.advance(60_000);
      const late = await dispatch({ tags: { order: '9', env: 'prod' }, scheduledFor: iso(T0 + 3 * HOUR) });
      // The other tenant: the same tags, times and a schedule, which p's key must not reach.
      const theirSchedule = (await post('/api/schedules', { cron: '@daily', payload: {} }, other.key)).json().scheduleId as string;
      await post(`/api/schedules/${theirSchedule}/trigger`, {}, other.key);
      await tagged(2, { order: '9', env: 'prod' }, {}, other.key);
      const matched = async (filter: Record<string, unknown>) => (await bulk({ action: 'cancel', filter, dryRun: true })).json().matched as number;
      expect(await matched({ status: 'QUEUED' })).toBe(3);
      expect(await matched({ tags: { order: '9' } })).toBe(2);
      expect(await matched({ tags: { order: '9', env: 'prod' } })).toBe(1);
      expect(await matched({ scheduleId: schedule })).toBe(1);
      expect(await matched({ scheduleId: theirSchedule })).toBe(0);
      expect(await matched({ createdAfter: iso(T0 + 60_000) })).toBe(1);
      expect(await matched({ createdBefore: iso(T0 + 60_000) })).toBe(2);
      expect(await matched({ dueAfter: iso(T0 + 2 * HOUR) })).toBe(2);
      expect(await matched({ dueBefore: iso(T0 + 2 * HOUR) })).toBe(1);
      expect(await matched({ dueAfter: iso(T0 + HOUR), dueBefore: iso(T0 + 3 * HOUR), tags: { order: '9' } })).toBe(1);
      expect(await matched({ createdBefore: iso(T0 + 60_000), dueAfter: iso(T0 + 2 * HOUR) })).toBe(1);
      // Cancelling by the other tenant's schedule and tags changes none of theirs, nor of p's other jobs.
      expect((await bulk({ action: 'cancel', filter: { scheduleId: theirSchedule } })).json()).toEqual({ matched: 0, changed: 0, hasMore: false });
      expect((await bulk({ action: 'cancel', filter: { dueBefore: iso(T0 + 2 * HOUR) } })).json()).toEqual({ matched: 1, changed: 1, hasMore: false });
      expect([await statusOf(early), await statusOf(late), await statusOf(fromSchedule)]).toEqual(['CANCELLED', 'QUEUED', 'QUEUED']);
      const theirs = (await get('/api/jobs', other.key)).json().jobs as { status: string }[];
      expect(theirs.map((job) => job.status)).toEqual(['QUEUED', 'QUEUED', 'QUEUED']);
      expect((await bulk({ action: 'cancel', filter: { tags: { order: '9', env: 'prod' } } }, other.key)).json()).toEqual({ matched: 2, changed: 2, hasMore: false });
      expect(await statusOf(late)).toBe('QUEUED');
    });

    it.each([
      ['no action', { filter: { status: 'QUEUED' } }, 'INVALID_REQUEST', 'action'],
      ['an unknown action', { action: 'delete', filter: { status: 'QUEUED' } }, 'INVALID_REQUEST', 'action'],
      ['no filter', { action: 'cancel' }, 'INVALID_REQUEST', 'filter'],
      ['an empty filter', { action: 'cancel', filter: {} }, 'INVALID_REQUEST', 'filter'],
      ['a filter of no tags', { action: 'cancel', filter: { tags: {} } }, 'INVALID_REQUEST', 'filter'],
      ['a null status', { action: 'cancel', filter: { status: null, tags: { order: '1' } } }, 'INVALID_REQUEST', 'filter.status'],
      ['a filter that is not an object', { action: 'cancel', filter: 'order:1' }, 'INVALID_REQUEST', 'filter'],
      ['"tag" for "tags" in the filter', { action: 'cancel', filter: { status: 'QUEUED', tag: { order: '1' } } }, 'INVALID_REQUEST', 'filter.tag'],
      ['"dry_run" for "dryRun"', { action: 'cancel', filter: { status: 'QUEUED' }, dry_run: true }, 'INVALID_REQUEST', 'dry_run'],
      ['an unknown status', { action: 'cancel', filter: { status: 'WAITING' } }, 'INVALID_REQUEST', 'filter.status'],
      ['tags as an array', { action: 'cancel', filter: { tags: ['order:1'] } }, 'INVALID_REQUEST', 'filter.tags'],
      ['a tag of a bad key', { action: 'cancel', filter: { tags: { 'a b': '1' } } }, 'INVALID_REQUEST', 'filter.tags'],
      ['a zoneless createdAfter', { action: 'cancel', filter: { createdAfter: '2027-01-01T00:00:00' } }, 'INVALID_REQUEST', 'filter.createdAfter'],
      ['a dueBefore that is a number', { action: 'cancel', filter: { dueBefore: 1 } }, 'INVALID_REQUEST', 'filter.dueBefore'],
      ['limit 0', { action: 'cancel', filter: { status: 'QUEUED' }, limit: 0 }, 'INVALID_REQUEST', 'limit'],
      ['limit 10,001', { action: 'cancel', filter: { status: 'QUEUED' }, limit: 10_001 }, 'INVALID_REQUEST', 'limit'],
      ['a fractional limit', { action: 'cancel', filter: { status: 'QUEUED' }, limit: 1.5 }, 'INVALID_REQUEST', 'limit'],
      ['dryRun "yes"', { action: 'cancel', filter: { status: 'QUEUED' }, dryRun: 'yes' }, 'INVALID_REQUEST', 'dryRun'],
      ['a reschedule without scheduledFor', { action: 'reschedule', filter: { status: 'QUEUED' } }, 'INVALID_SCHEDULE', 'scheduledFor'],
      ['a reschedule to a zoneless time', { action: 'reschedule', filter: { status: 'QUEUED' }, scheduledFor: '2027-01-02T00:00:00' }, 'INVALID_SCHEDULE', 'scheduledFor'],
      ['a reschedule 367 days ahead', { action: 'reschedule', filter: { status: 'QUEUED' }, scheduleFor: '2028-01-03T00:00:00Z' }, 'INVALID_SCHEDULE', 'scheduleFor'],
      ['scheduledFor with cancel', { action: 'cancel', filter: { status: 'QUEUED' }, scheduledFor: null }, 'INVALID_REQUEST', 'scheduledFor'],
    ])('refuses %s, changing nothing', async (_what, body, code, field) => {
      const jobs = await tagged(2, { order: '1' });
      const res = await bulk(body);
      expectContractError(res, 400, code);
      expect(res.json().data.field).toBe(field);
      expect(await Promise.all(jobs.map((job) => statusOf(job)))).toEqual(['QUEUED', 'QUEUED']);
      expect((await get(`/api/jobs/${jobs[0]}`)).json().nextAttemptAt).toBe(iso(T0 + HOUR));
    });

    it('acts on up to 10,000 at a time, a transaction of a hundred after another, each job once', async () => {
      const jobs: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        const items = Array.from({ length: 100 }, () => ({ payload: {}, tags: { load: 'x' }, scheduledFor: iso(T0 + HOUR) }));
        jobs.push(...(await post('/api/jobs/dispatch/batch', { jobs: items })).json().jobs.map((job: { jobId: string }) => job.jobId));
      }
      expect((await bulk({ action: 'cancel', filter: { tags: { load: 'x' } }, limit: 10_000 })).json()).toEqual({ matched: 600, changed: 600, hasMore: false });
      expect(await listed('?tag=load:x&status=QUEUED')).toEqual([]);
      expect((await get('/api/jobs?tag=load:x&status=CANCELLED&limit=100')).json().nextCursor).not.toBeNull();
    });

    it('keeps bulk replay (POST /api/jobs/retry) answering as before, on the same mechanism', async () => {
      const jobs = await tagged(3, { replay: 'r' });
      for (const [i, job] of jobs.entries()) await setJobState(t.databaseUrl, job, { status: 'FAILED', attemptCount: 1, lastError: 'HTTP 500', failedAt: T0 + i });
      const res = await post('/api/jobs/retry', { status: 'FAILED', failedAfter: iso(T0 + 1), limit: 1 });
      expect(res.json()).toEqual({ retried: 1, hasMore: true });
      expect(await Promise.all(jobs.map((job) => statusOf(job)))).toEqual(['FAILED', 'QUEUED', 'FAILED']);
    });

    it('is described in /openapi.json: the bulk route, tags in bodies and answers, the list filters', async () => {
      const spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const bulkRoute = spec.paths['/api/jobs/bulk'].post;
      const body = bulkRoute.requestBody.content['application/json'].schema;
      expect(body.required).toEqual(['action', 'filter']);
      expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['action', 'filter', 'scheduledFor', 'dryRun', 'limit']));
      expect(Object.keys(body.properties.filter.properties)).toEqual(['status', 'tags', 'scheduleId', 'concurrencyKey', 'createdAfter', 'createdBefore', 'dueAfter', 'dueBefore']);
      expect(Object.keys(bulkRoute.responses['200'].content['application/json'].schema.properties)).toEqual(['matched', 'changed', 'hasMore']);
      expect(spec.paths['/api/jobs/dispatch'].post.requestBody.content['application/json'].schema.properties.tags.type).toBe('object');
      expect(spec.paths['/api/jobs/{jobId}'].get.responses['200'].content['application/json'].schema.properties.tags.type).toBe('object');
      const params = spec.paths['/api/jobs'].get.parameters.map((param: { name: string }) => param.name);
      expect(params).toEqual(expect.arrayContaining(['tag', 'dueAfter', 'dueBefore']));
    });
  });
});
