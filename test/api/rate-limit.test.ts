import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/plans.js';
import { UNKNOWN_PLAN_WARNING } from '../../src/services/plans-service.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

/** SPEC section 6 with an injected clock: a bucket of 5, refilled at 2 per second. */
describe('rate limits', () => {
  let t: TestApp;
  let p: TestProject;
  const plans = {
    ...DEFAULT_PLANS,
    small: { requestsPerSecond: 2, burst: 5, jobsPerMonth: null, maxRetriesCap: 3 },
    single: { requestsPerSecond: 100, burst: 1, jobsPerMonth: null, maxRetriesCap: 3 },
  };
  const list = (key = p.key) => t.api(key, { method: 'GET', url: '/api/jobs' });

  beforeAll(async () => {
    t = await makeTestApp({ plans });
    p = await t.makeProject({ plan: 'small' });
  });
  afterAll(() => t.close());

  it('accepts exactly the burst at once, then answers 429 with Retry-After; refills at the plan rate', async () => {
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await list());
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.map((a) => a.headers['ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0']);
    expect(answers[0]!.headers['ratelimit-limit']).toBe('5');
    expect(answers[0]!.headers['ratelimit-reset']).toBe('1'); // 1 token missing at 2/s: 0.5 s, rounded up
    expect(answers[4]!.headers['ratelimit-reset']).toBe('3'); // 5 missing: 2.5 s

    const refused = await list();
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ error: 'RATE_LIMITED', data: { message: expect.any(String) } });
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['ratelimit-remaining']).toBe('0');

    t.clock.advance(499);
    expect((await list()).statusCode).toBe(429);
    t.clock.advance(1);
    const refilled = await list();
    expect(refilled.statusCode).toBe(200);
    expect(refilled.headers['ratelimit-remaining']).toBe('0');
    expect((await list()).statusCode).toBe(429);

    t.clock.advance(10_000);
    expect((await list()).headers['ratelimit-remaining']).toBe('4');
  });

  it('refills exactly at a whole-number rate: at 100/s the token due 10 ms after the last is there at the 10th millisecond', async () => {
    const single = await t.makeProject({ plan: 'single' });
    const get = () => t.api(single.key, { method: 'GET', url: '/api/jobs' });
    expect((await get()).statusCode).toBe(200);
    const statuses = [];
    // A refused request stores the refill so far: in tokens, ten sums of 0.1 make 0.9999999999999999.
    for (let ms = 1; ms <= 10; ms++) {
      t.clock.advance(1);
      statuses.push((await get()).statusCode);
    }
    expect(statuses).toEqual([...Array<number>(9).fill(429), 200]);
  });

  it('puts RateLimit-Limit, -Remaining and -Reset on authenticated error answers too, each of which took a token', async () => {
    t.clock.advance(10_000);
    const json = { 'content-type': 'application/json' };
    const answers = [
      await t.api(p.key, { method: 'GET', url: '/api/jobs/job_doesnotexist00000000' }),
      await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: '{"payload":', headers: json }),
      await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: JSON.stringify({ payload: { text: 'x'.repeat(70_000) } }), headers: json }),
      await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: 'payload=1', headers: { 'content-type': 'text/plain' } }),
      await t.api(p.key, { method: 'GET', url: '/api/no-such-route' }),
    ];
    expect(answers.map((a) => [a.statusCode, a.json().error])).toEqual([
      [404, 'NOT_FOUND'],
      [400, 'INVALID_REQUEST'],
      [413, 'PAYLOAD_TOO_LARGE'],
      [415, 'UNSUPPORTED_MEDIA_TYPE'],
      [404, 'NOT_FOUND'],
    ]);
    expect(answers.map((a) => a.headers['ratelimit-limit'])).toEqual(['5', '5', '5', '5', '5']);
    expect(answers.map((a) => a.headers['ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0']);
    // 1 to 5 tokens missing at 2 per second: 0.5, 1, 1.5, 2 and 2.5 s, rounded up.
    expect(answers.map((a) => a.headers['ratelimit-reset'])).toEqual(['1', '1', '2', '2', '3']);
    for (const answer of answers) expect(answer.headers['retry-after']).toBeUndefined();
  });

  it('is checked before the body is read, and is shared by every key of the team', async () => {
    t.clock.advance(10_000);
    const other = await t.services.manage.createKey(p.projectId, { name: 'second' });
    for (let i = 0; i < 5; i++) expect((await list(i % 2 ? other.key : p.key)).statusCode).toBe(200);
    const malformed = await t.api(other.key, { method: 'POST', url: '/api/jobs/dispatch', payload: '{"payload":', headers: { 'content-type': 'application/json' } });
    expect(malformed.statusCode).toBe(429);
    expect(malformed.json().error).toBe('RATE_LIMITED');
  });

  it('counts a batch as one request', async () => {
    t.clock.advance(10_000);
    const batch = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs: Array.from({ length: 50 }, () => ({ payload: {} })) } });
    expect(batch.statusCode).toBe(200);
    expect(batch.headers['ratelimit-remaining']).toBe('4');
  });

  it('sends no rate-limit headers on a plan without a limit, and a plan change applies at once', async () => {
    t.clock.advance(10_000);
    for (let i = 0; i < 5; i++) await list();
    expect((await list()).statusCode).toBe(429);
    await t.services.manage.updateTeam(p.teamId, { plan: 'unlimited' });
    const free = await list();
    expect(free.statusCode).toBe(200);
    expect(free.headers['ratelimit-limit']).toBeUndefined();
    await t.services.manage.updateTeam(p.teamId, { plan: 'small' });
  });

  it('counts refusals in /metrics', async () => {
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/punctual_requests_rate_limited_total [1-9]/);
  });
});

describe('a team whose plan is no longer configured', () => {
  let t: TestApp;
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => {
    if ((warning as Error & { code?: string }).code === UNKNOWN_PLAN_WARNING) warnings.push(warning);
  };

  beforeAll(async () => {
    t = await makeTestApp({ plans: { ...DEFAULT_PLANS, small: { requestsPerSecond: 2, burst: 5, jobsPerMonth: null, maxRetriesCap: 3 } } });
    process.on('warning', onWarning);
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await t.close();
  });

  it('is served on the default plan, and the operator is warned once per team', async () => {
    const [first, second] = [await t.makeProject({ plan: 'small' }), await t.makeProject({ plan: 'small' })];
    // What the database holds after a restart with a PUNCTUAL_PLANS file that no longer has the plan.
    for (const p of [first, second]) await t.store.teamUpdate({ teamId: p.teamId, plan: 'retired' });

    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await t.api(first.key, { method: 'GET', url: '/api/jobs' }));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(8).fill(200));
    expect(answers.every((a) => a.headers['ratelimit-limit'] === undefined)).toBe(true);
    // Process warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.map((w) => w.message)).toEqual([
      `team ${first.teamId} is on plan "retired", which is not among the configured plans (free, pro, scale, unlimited, small): ` +
        'it gets the limits of plan "unlimited" until PUNCTUAL_PLANS defines "retired" again or the team is moved to another plan',
    ]);

    await t.api(second.key, { method: 'GET', url: '/api/jobs' });
    await t.api(second.key, { method: 'GET', url: '/api/jobs' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toHaveLength(2);
    expect(warnings[1]!.message).toContain(`team ${second.teamId} is on plan "retired"`);
  });
});
