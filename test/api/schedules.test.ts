import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIRE_LEAD_MS, LEASE_MS } from '../../src/maintenance/schedule-firing.js';
import { makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';

/** SPEC section 9 through the HTTP API, with an injected clock; fires made by ScheduleFiring.runOnce. */
describe('recurring schedules: /api/schedules', () => {
  const T0 = Date.parse('2027-01-01T00:00:00.000Z');
  const SECOND = 1000;
  const MINUTE = 60 * SECOND;
  const iso = (ms: number) => new Date(ms).toISOString();
  let t: TestApp;
  let p: TestProject;

  const json = (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, key = p.key) =>
    t.api(key, { method, url, headers: { 'content-type': 'application/json' }, ...(body !== undefined && { payload: JSON.stringify(body) }) });
  const get = (url: string, key = p.key) => t.api(key, { method: 'GET', url });
  const create = async (body: Record<string, unknown>) => {
    const res = await json('POST', '/api/schedules', { payload: { report: 'daily' }, ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as Record<string, unknown> & { scheduleId: string };
  };
  /** The project's jobs made by this schedule, oldest first. */
  const jobsOf = async (scheduleId: string) => {
    const res = await get('/api/jobs?limit=100');
    const jobs = (res.json().jobs as Record<string, unknown>[]).filter((job) => job.scheduleId === scheduleId);
    return jobs.reverse();
  };
  const fire = () => t.services.scheduleFiring.runOnce();

  beforeEach(async () => {
    t = await makeTestApp({ now: T0 });
    p = await t.makeProject();
  });
  afterEach(() => t.close());

  it('answers and stores a zone by its canonical name, whatever its letter case', async () => {
    const created = await create({ cron: '30 9 * * *', timezone: 'eUrOpE/pArIs' });
    expect(created.timezone).toBe('Europe/Paris');
    expect((await get(`/api/schedules/${created.scheduleId}`)).json().timezone).toBe('Europe/Paris');
    const updated = await json('PATCH', `/api/schedules/${created.scheduleId}`, { timezone: 'america/NEW_york' });
    expect(updated.json().timezone).toBe('America/New_York');
  });

  it('creates a schedule with the contract defaults and its next run, and reads, lists and updates it', async () => {
    const created = await create({ cron: '30 9 * * MON-FRI', timezone: 'Europe/Paris', name: 'weekday report' });
    expect(created).toEqual({
      scheduleId: expect.stringMatching(/^sch_[A-Za-z0-9]{22}$/),
      name: 'weekday report',
      cron: '30 9 * * MON-FRI',
      timezone: 'Europe/Paris',
      payload: { report: 'daily' },
      maxRetries: null,
      catchUp: 'latest',
      overlap: 'allow',
      paused: false,
      // 2027-01-01 is a Friday; 09:30 in Paris is 08:30 UTC.
      nextRunAt: '2027-01-01T08:30:00.000Z',
      lastRunAt: null,
      lastJobId: null,
      skippedCount: 0,
      tags: {},
      concurrencyKey: null,
      createdAt: iso(T0),
      updatedAt: iso(T0),
    });
    expect((await get(`/api/schedules/${created.scheduleId}`)).json()).toEqual(created);
    const second = await create({ cron: '@hourly' });
    const list = (await get('/api/schedules?limit=1')).json();
    expect(list.schedules.map((s: { scheduleId: string }) => s.scheduleId)).toEqual([second.scheduleId]);
    const rest = (await get(`/api/schedules?limit=1&cursor=${list.nextCursor}`)).json();
    expect(rest).toEqual({ schedules: [created], nextCursor: null });

    t.clock.advance(10 * SECOND);
    const patched = await json('PATCH', `/api/schedules/${created.scheduleId}`, { cron: '0 12 * * *', catchUp: 'none', maxRetries: 1 });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ cron: '0 12 * * *', timezone: 'Europe/Paris', catchUp: 'none', maxRetries: 1, nextRunAt: '2027-01-01T11:00:00.000Z', updatedAt: iso(T0 + 10 * SECOND) });
  });

  it.each([
    [{ cron: '61 * * * *' }, 400, 'INVALID_CRON', 'cron'],
    [{ cron: '0 0 30 2 *' }, 400, 'INVALID_CRON', 'cron'],
    [{ cron: 5 }, 400, 'INVALID_CRON', 'cron'],
    [{ cron: '* * * * *', timezone: 'Mars/Olympus' }, 400, 'INVALID_TIMEZONE', 'timezone'],
    [{ cron: '* * * * *', payload: [1] }, 400, 'INVALID_PAYLOAD', 'payload'],
    [{ cron: '* * * * *', payload: { big: 'x'.repeat(10_300), note: 'over 10,240 bytes' } }, 413, 'PAYLOAD_TOO_LARGE', 'payload'],
    [{ cron: '* * * * *', maxRetries: '3' }, 400, 'INVALID_MAX_RETRIES', 'maxRetries'],
    [{ cron: '* * * * *', catchUp: 'some' }, 400, 'INVALID_REQUEST', 'catchUp'],
    [{ cron: '* * * * *', overlap: 'never' }, 400, 'INVALID_REQUEST', 'overlap'],
  ])('refuses body %# with %i %s on %s, creating nothing', async (body, status, code, field) => {
    const res = await json('POST', '/api/schedules', { payload: { a: 1 }, ...body });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ error: code, data: { field } });
    expect((await get('/api/schedules')).json().schedules).toEqual([]);
  });

  it('refuses a schedule on a project without a webhook URL', async () => {
    const bare = await t.makeProject({ webhookUrl: null });
    const res = await json('POST', '/api/schedules', { cron: '* * * * *', payload: {} }, bare.key);
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('WEBHOOK_NOT_CONFIGURED');
  });

  it("answers SCHEDULE_NOT_FOUND for an unknown id and for another project's schedule, on every route", async () => {
    const theirs = await create({ cron: '* * * * *' });
    const other = await t.makeProject();
    for (const res of [
      await get(`/api/schedules/${theirs.scheduleId}`, other.key),
      await json('PATCH', `/api/schedules/${theirs.scheduleId}`, { name: 'x' }, other.key),
      await json('DELETE', `/api/schedules/${theirs.scheduleId}`, undefined, other.key),
      await json('POST', `/api/schedules/${theirs.scheduleId}/trigger`, undefined, other.key),
      await get('/api/schedules/sch_unknown'),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('SCHEDULE_NOT_FOUND');
    }
    expect((await get('/api/schedules', other.key)).json().schedules).toEqual([]);
    expect((await get(`/api/schedules/${theirs.scheduleId}`)).json().name).toBeNull();
  });

  it('documents every schedule route in /openapi.json', async () => {
    const paths = Object.keys((await t.app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<string, unknown>);
    expect(paths).toEqual(
      expect.arrayContaining(['/api/schedules', '/api/schedules/preview', '/api/schedules/{scheduleId}', '/api/schedules/{scheduleId}/trigger']),
    );
  });

  it('previews fire instants with the daylight-saving rules', async () => {
    const res = await get(`/api/schedules/preview?cron=${encodeURIComponent('30 2 * * *')}&timezone=Europe/Paris&from=2027-03-27T12:00:00Z&count=2`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ runs: ['2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z'] });
    expect((await get('/api/schedules/preview?cron=*+*+*+*+*')).json().runs).toEqual([1, 2, 3, 4, 5].map((n) => iso(T0 + n * MINUTE)));
    expect((await get('/api/schedules/preview?cron=*+*+*+*+*&count=101')).json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'count' } });
    expect((await get('/api/schedules/preview?cron=nope')).json()).toMatchObject({ error: 'INVALID_CRON' });
  });

  it('creates each fire’s job ahead of its instant, due at it, once however often the loop runs', async () => {
    const schedule = await create({ cron: '*/10 * * * * *', maxRetries: 2 });
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toEqual([]);
    t.clock.set(T0 + 8_500);
    await fire();
    await fire();
    const jobs = await jobsOf(schedule.scheduleId);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ status: 'QUEUED', scheduledFor: iso(T0 + 10 * SECOND), nextAttemptAt: iso(T0 + 10 * SECOND), maxRetries: 2, payload: { report: 'daily' } });
    const after = (await get(`/api/schedules/${schedule.scheduleId}`)).json();
    expect(after).toMatchObject({ nextRunAt: iso(T0 + 20 * SECOND), lastRunAt: iso(T0 + 10 * SECOND), lastJobId: jobs[0]!.jobId });
  });

  it.each([
    ['latest', [9]],
    ['none', []],
    ['all', [1, 2, 3, 4, 5, 6, 7, 8, 9]],
  ] as const)('catchUp %s: after 9 missed minutes, creates jobs for minutes %j, due at once, then goes on', async (catchUp, minutes) => {
    const schedule = await create({ cron: '* * * * *', catchUp });
    // The service was down from before the first fire until 9 minutes and 30 seconds later.
    t.clock.set(T0 + 9 * MINUTE + 30 * SECOND);
    await fire();
    const jobs = await jobsOf(schedule.scheduleId);
    expect(jobs.map((job) => job.scheduledFor)).toEqual(minutes.map((m) => iso(T0 + m * MINUTE)));
    for (const job of jobs) expect(job.nextAttemptAt).toBe(iso(T0 + 9 * MINUTE + 30 * SECOND));
    expect((await get(`/api/schedules/${schedule.scheduleId}`)).json().nextRunAt).toBe(iso(T0 + 10 * MINUTE));
  });

  it('fires nothing while paused, and catches up on resume', async () => {
    const schedule = await create({ cron: '* * * * *' });
    expect((await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true })).json().paused).toBe(true);
    t.clock.set(T0 + 5 * MINUTE + 30 * SECOND);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toEqual([]);
    const resumed = await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: false });
    expect(resumed.json()).toMatchObject({ paused: false, nextRunAt: iso(T0 + MINUTE) });
    await fire();
    expect((await jobsOf(schedule.scheduleId)).map((job) => job.scheduledFor)).toEqual([iso(T0 + 5 * MINUTE)]);
  });

  it('after a week paused, an every-second schedule catches up its latest second only, and goes on from now', async () => {
    const schedule = await create({ cron: '* * * * * *' });
    await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true });
    const weekLater = T0 + 7 * 86_400_000 + 500;
    t.clock.set(weekLater);
    await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: false });
    await fire();
    const jobs = await jobsOf(schedule.scheduleId);
    // The latest missed second (more than half a second late), then the second reached 500 ms
    // late (not missed: due at once) and the fires within the lead, due at their instants.
    const second = weekLater - 500;
    expect(jobs[0]!.scheduledFor).toBe(iso(second - SECOND));
    expect(jobs.slice(1).map((job) => job.scheduledFor)).toEqual([0, 1, 2].map((n) => iso(second + n * SECOND)));
  });

  it('catchUp "latest": back from a 20 s outage, an every-second schedule creates one job for its missed seconds, the latest, then goes on', async () => {
    const schedule = await create({ cron: '* * * * * *' });
    await fire();
    expect((await jobsOf(schedule.scheduleId)).map((job) => job.scheduledFor)).toEqual([1, 2].map((n) => iso(T0 + n * SECOND)));
    // Down 20 s: seconds 3 to 21 are reached more than 500 ms late (missed), second 22 only 200 ms late.
    const now = T0 + 22 * SECOND + 200;
    t.clock.set(now);
    await fire();
    const jobs = (await jobsOf(schedule.scheduleId)).slice(2);
    expect(jobs.map((job) => [job.scheduledFor, job.nextAttemptAt])).toEqual([
      [iso(T0 + 21 * SECOND), iso(now)],
      [iso(T0 + 22 * SECOND), iso(now)],
      [iso(T0 + 23 * SECOND), iso(T0 + 23 * SECOND)],
      [iso(T0 + 24 * SECOND), iso(T0 + 24 * SECOND)],
    ]);
  });

  it.each([
    ['an every-second schedule', 400, 'fires at once', '* * * * * *', T0 + SECOND],
    ['an every-second schedule', 600, 'is missed', '* * * * * *', T0 + SECOND],
    ['an every-4-seconds schedule', 1_900, 'fires at once', '*/4 * * * * *', T0 + 4 * SECOND],
    ['an every-4-seconds schedule', 2_100, 'is missed', '*/4 * * * * *', T0 + 4 * SECOND],
    ['a daily schedule', 3_000, 'fires at once', '0 0 * * *', T0 + 86_400_000],
    ['a daily schedule', 6_000, 'is missed', '0 0 * * *', T0 + 86_400_000],
  ] as const)('%s reached %i ms late %s (catchUp "none" skips a missed instant)', async (_, lateMs, outcome, cron, instant) => {
    // Missed: later than the lesser of 5 s and half the time to the next instant.
    const schedule = await create({ cron, catchUp: 'none' });
    t.clock.set(instant + lateMs);
    await fire();
    const job = (await jobsOf(schedule.scheduleId)).find((j) => j.scheduledFor === iso(instant));
    if (outcome === 'fires at once') expect(job).toMatchObject({ status: 'QUEUED', nextAttemptAt: iso(instant + lateMs) });
    else expect(job).toBeUndefined();
  });

  it.each([
    ['none', [], [4, 5]],
    ['latest', [3], [4, 5]],
    ['all', [1, 2, 3], [4, 5]],
  ] as const)(
    'pausing cancels the jobs created ahead for seconds after it, one claimed for delivery included; resumed, catchUp %s makes jobs for seconds %j at once, then %j',
    async (catchUp, caughtUp, onTime) => {
      const schedule = await create({ cron: '* * * * * *', catchUp });
      t.clock.set(T0 + 500);
      await fire();
      // A delivery worker claims second 1's job ahead of it (up to 25 ms before).
      t.clock.set(T0 + 975);
      const claimed = await t.store.jobClaimDue({ now: T0 + 975, dueBy: T0 + SECOND, limit: 10, workerId: 'wrk_test', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      expect(claimed.map((job) => job.scheduledFor)).toEqual([T0 + SECOND]);
      // Paused 10 ms before second 1: nothing of it may be delivered for seconds 1 and 2.
      t.clock.set(T0 + 990);
      const paused = await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true });
      expect(paused.json()).toMatchObject({ paused: true, nextRunAt: iso(T0 + SECOND) });
      expect((await jobsOf(schedule.scheduleId)).map((job) => [job.scheduledFor, job.status])).toEqual([
        [iso(T0 + SECOND), 'CANCELLED'],
        [iso(T0 + 2 * SECOND), 'CANCELLED'],
      ]);
      // The worker that claimed second 1's job finds it no longer its own: it sends nothing.
      expect(await t.store.attemptStart({ jobId: claimed[0]!.id, attemptId: 'att_paused', workerId: 'wrk_test', now: T0 + SECOND, leaseExpiresAt: T0 + 40 * SECOND })).toBeNull();
      expect((await get(`/api/jobs/${claimed[0]!.id}`)).json()).toMatchObject({ status: 'CANCELLED', attemptCount: 0 });
      // Nothing while paused.
      t.clock.set(T0 + 2_500);
      await fire();
      expect(await jobsOf(schedule.scheduleId)).toHaveLength(2);
      // Resumed at 3.6 s: seconds 1 to 3 were missed (second 3 by 600 ms), 4 and 5 come within the lead.
      const resumedAt = T0 + 3_600;
      t.clock.set(resumedAt);
      expect((await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: false })).json()).toMatchObject({ paused: false, nextRunAt: iso(T0 + SECOND) });
      await fire();
      const jobs = (await jobsOf(schedule.scheduleId)).slice(2);
      expect(jobs.map((job) => [job.scheduledFor, job.status, job.nextAttemptAt])).toEqual([
        ...caughtUp.map((n) => [iso(T0 + n * SECOND), 'QUEUED', iso(resumedAt)]),
        ...onTime.map((n) => [iso(T0 + n * SECOND), 'QUEUED', iso(T0 + n * SECOND)]),
      ]);
    },
  );

  it('resumed before the instant of a job its pause cancelled, a schedule fires that instant again', async () => {
    const schedule = await create({ cron: '* * * * * *', catchUp: 'none' });
    t.clock.set(T0 + 500);
    await fire();
    await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true });
    t.clock.set(T0 + 700);
    await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: false });
    await fire();
    expect((await jobsOf(schedule.scheduleId)).map((job) => [job.scheduledFor, job.status])).toEqual([
      [iso(T0 + SECOND), 'CANCELLED'],
      [iso(T0 + 2 * SECOND), 'CANCELLED'],
      [iso(T0 + SECOND), 'QUEUED'],
      [iso(T0 + 2 * SECOND), 'QUEUED'],
    ]);
  });

  it('a pause answers no earlier than the instant of a job started ahead of it (its request about to leave), and leaves that job be', async () => {
    const schedule = await create({ cron: '* * * * * *' });
    t.clock.set(T0 + 500);
    await fire();
    // A worker starts second 1's job ahead of its instant (10 ms ahead in a running service; 300 here, to be measured).
    t.clock.set(T0 + 700);
    const [claimed] = await t.store.jobClaimDue({ now: T0 + 700, dueBy: T0 + SECOND, limit: 10, workerId: 'wrk_test', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    expect(await t.store.attemptStart({ jobId: claimed!.id, attemptId: 'att_ahead', workerId: 'wrk_test', now: T0 + SECOND, leaseExpiresAt: T0 + 40 * SECOND })).toEqual({ attemptNumber: 1 });
    const asked = performance.now();
    const paused = await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true });
    expect(paused.statusCode).toBe(200);
    expect(performance.now() - asked).toBeGreaterThanOrEqual(250);
    expect((await jobsOf(schedule.scheduleId)).map((job) => [job.scheduledFor, job.status])).toEqual([
      [iso(T0 + SECOND), 'STARTED'],
      [iso(T0 + 2 * SECOND), 'CANCELLED'],
    ]);
    // Paused again (it is already): no job to wait for, no wait.
    const again = performance.now();
    await json('PATCH', `/api/schedules/${schedule.scheduleId}`, { paused: true, name: 'renamed' });
    expect(performance.now() - again).toBeLessThan(250);
  });

  it('overlap "skip": a fire while the previous job is not final creates nothing and is counted', async () => {
    const schedule = await create({ cron: '* * * * *', overlap: 'skip' });
    // Decided at the instant, not ahead of it.
    t.clock.set(T0 + MINUTE - SECOND);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toEqual([]);
    t.clock.set(T0 + MINUTE);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toHaveLength(1);
    // Its job is still QUEUED (nothing delivers in this test) at the next fire.
    t.clock.set(T0 + 2 * MINUTE);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toHaveLength(1);
    expect((await get(`/api/schedules/${schedule.scheduleId}`)).json()).toMatchObject({ skippedCount: 1, nextRunAt: iso(T0 + 3 * MINUTE) });
    // The project has no eventsUrl: the event is listed, not sent.
    expect((await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}/events` })).json().events).toMatchObject([
      { type: 'schedule.skipped', status: 'NOT_SENT', data: { scheduleId: schedule.scheduleId } },
    ]);
    // Once it is final, the next fire creates its job.
    const [first] = await jobsOf(schedule.scheduleId);
    expect((await json('DELETE', `/api/jobs/${first!.jobId as string}`)).statusCode).toBe(200);
    t.clock.set(T0 + 3 * MINUTE);
    await fire();
    expect((await jobsOf(schedule.scheduleId)).map((job) => job.scheduledFor)).toEqual([iso(T0 + MINUTE), iso(T0 + 3 * MINUTE)]);
  });

  it('overlap "skip" records schedule.skipped (SPEC section 10) for a project with an eventsUrl', async () => {
    await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { eventsUrl: 'http://127.0.0.1:9/events' } });
    const schedule = await create({ cron: '* * * * *', overlap: 'skip' });
    t.clock.set(T0 + MINUTE);
    await fire();
    t.clock.set(T0 + 2 * MINUTE);
    await fire();
    const events = (await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}/events` })).json().events;
    expect(events).toEqual([
      expect.objectContaining({
        type: 'schedule.skipped',
        occurredAt: iso(T0 + 2 * MINUTE),
        projectId: p.projectId,
        data: { scheduleId: schedule.scheduleId, fireAt: iso(T0 + 2 * MINUTE) },
        status: 'PENDING',
      }),
    ]);
  });

  describe('an instance that claimed a schedule and died before firing it (kill -9 mid-fire)', () => {
    /** Another instance's claim, as its firing loop makes it; it never fires nor lets go. */
    const claimAndDie = (now: number) => t.store.scheduleClaimDue({ now, dueBy: now + FIRE_LEAD_MS, leaseUntil: now + LEASE_MS, limit: 100 });
    // PostgreSQL: several instances, one died and the others are up; SQLite: one process serves the
    // file, so its death is the service's, and the fires it held are missed like any downtime's.
    const severalInstances = TEST_STORE === 'postgres';

    it.each([
      // Every second, catchUp "latest" (the default): the died instance held seconds 1 to 10.
      // On SQLite seconds 1 to 9 are missed (over half a second late), 9 caught up as the latest; 10 is reached 500 ms late: on time.
      { cron: '* * * * * *', catchUp: 'latest', claimedAt: 0, seconds: severalInstances ? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] : [9, 10, 11, 12] },
      // Every minute, catchUp "none": its minute's fire, claimed 2 s ahead.
      { cron: '* * * * *', catchUp: 'none', claimedAt: 58, seconds: severalInstances ? [60] : [] },
    ] as const)('$cron, catchUp $catchUp: the instance that takes its lease over creates every fire it held', async ({ cron, catchUp, claimedAt, seconds }) => {
      const schedule = await create({ cron, catchUp });
      t.clock.set(T0 + claimedAt * SECOND);
      expect((await claimAndDie(t.clock.now())).map((s) => s.id)).toEqual([schedule.scheduleId]);
      // Its lease runs out; another instance, looking at least every second, takes it over.
      const takenOver = T0 + claimedAt * SECOND + LEASE_MS + 500;
      t.clock.set(takenOver);
      await fire();
      const jobs = await jobsOf(schedule.scheduleId);
      expect(jobs.map((job) => job.scheduledFor)).toEqual(seconds.map((n) => iso(T0 + n * SECOND)));
      // Those past are due at once; those ahead at their instants.
      for (const job of jobs) expect(job.nextAttemptAt).toBe(iso(Math.max(takenOver, Date.parse(job.scheduledFor as string))));
    });

    it('taken over long after its lease ran out (every instance was down), missed fires follow catchUp', async () => {
      const schedule = await create({ cron: '* * * * * *', catchUp: 'latest' });
      await claimAndDie(T0);
      t.clock.set(T0 + LEASE_MS + 30 * SECOND + 500);
      await fire();
      // The latest second missed (more than half a second late), then second 40 (reached 500 ms after it) and those within the lead.
      expect((await jobsOf(schedule.scheduleId)).map((job) => job.scheduledFor)).toEqual([39, 40, 41, 42].map((n) => iso(T0 + n * SECOND)));
    });
  });

  it('triggers one extra job now, and deleting the schedule cancels its QUEUED jobs and stops its fires', async () => {
    const schedule = await create({ cron: '0 * * * *' });
    const triggered = await json('POST', `/api/schedules/${schedule.scheduleId}/trigger`);
    expect(triggered.statusCode).toBe(201);
    expect(triggered.json()).toEqual({ jobId: expect.stringMatching(/^job_/), status: 'QUEUED', scheduledFor: null, maxRetries: 3 });
    t.clock.set(T0 + 60 * MINUTE - SECOND);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toHaveLength(2);
    const deleted = await json('DELETE', `/api/schedules/${schedule.scheduleId}`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toMatchObject({ scheduleId: schedule.scheduleId, nextRunAt: iso(T0 + 2 * 60 * MINUTE) });
    expect((await jobsOf(schedule.scheduleId)).map((job) => job.status)).toEqual(['CANCELLED', 'CANCELLED']);
    t.clock.set(T0 + 3 * 60 * MINUTE);
    await fire();
    expect(await jobsOf(schedule.scheduleId)).toHaveLength(2);
    expect((await get(`/api/schedules/${schedule.scheduleId}`)).statusCode).toBe(404);
  });
});
