import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/plans.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

describe('monthly job quota', () => {
  let t: TestApp;
  let p: TestProject;
  const plans = { ...DEFAULT_PLANS, tiny: { requestsPerSecond: null, burst: null, jobsPerMonth: 3, maxRetriesCap: 2 } };
  const dispatch = (body: unknown = { payload: {} }) => t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body as Record<string, unknown> });

  beforeAll(async () => {
    t = await makeTestApp({ plans, now: Date.parse('2027-01-31T23:59:00.000Z') });
    p = await t.makeProject({ plan: 'tiny' });
  });
  afterAll(() => t.close());

  it('counts cancelled jobs, not rejected requests, and refuses past the quota until the 1st at 00:00 UTC', async () => {
    const first = await dispatch();
    expect(first.statusCode).toBe(201);
    await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${first.json().jobId}` });
    expect((await dispatch({ payload: 'bad' })).statusCode).toBe(400);
    const batch = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs: [{ payload: {} }, { payload: [] }, { payload: {} }, { payload: {} }] } });
    expect(batch.statusCode).toBe(200);
    const items = batch.json().jobs;
    expect(items[0].status).toBe('QUEUED');
    expect(items[1].error).toBe('INVALID_PAYLOAD');
    expect(items[2].status).toBe('QUEUED');
    expect(items[3]).toMatchObject({ error: 'QUOTA_EXCEEDED', data: { quota: 3, used: 3, resetsAt: '2027-02-01T00:00:00.000Z' } });

    const refused = await dispatch();
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ error: 'QUOTA_EXCEEDED', data: { quota: 3, used: 3, resetsAt: '2027-02-01T00:00:00.000Z' } });
    expect(refused.headers['retry-after']).toBe('60');

    const usage = await t.services.manage.usage(p.teamId);
    expect(usage).toMatchObject({ plan: 'tiny', jobsCreated: 3, quota: 3 });
    expect(usage.daily).toHaveLength(31);
    expect(usage.daily[30]).toEqual({ date: '2027-01-31', jobsCreated: 3 });

    // The last millisecond of January is still January's quota; the first of February is a new one.
    t.clock.set(Date.parse('2027-01-31T23:59:59.999Z'));
    const lastMillisecond = await dispatch();
    expect(lastMillisecond.statusCode).toBe(429);
    expect(lastMillisecond.json()).toMatchObject({ error: 'QUOTA_EXCEEDED', data: { used: 3, resetsAt: '2027-02-01T00:00:00.000Z' } });
    expect(lastMillisecond.headers['retry-after']).toBe('1');
    t.clock.set(Date.parse('2027-02-01T00:00:00.000Z'));
    expect((await dispatch()).statusCode).toBe(201);
    const february = await t.services.manage.usage(p.teamId);
    expect(february).toMatchObject({ jobsCreated: 1, period: { start: '2027-02-01T00:00:00.000Z', end: '2027-03-01T00:00:00.000Z' } });
    expect(february.daily).toEqual([{ date: '2027-02-01', jobsCreated: 1 }]);
  });

  it('a plan change takes effect at the next request', async () => {
    await t.services.manage.updateTeam(p.teamId, { plan: 'unlimited' });
    for (let i = 0; i < 5; i++) expect((await dispatch()).statusCode).toBe(201);
    expect((await dispatch({ payload: {}, maxRetries: 3 })).json().maxRetries).toBe(3);
  });
});
