import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { RedisRateLimiter } from '../../src/limits/redis-rate-limiter.js';
import { CuttableProxy } from '../support/cuttable-proxy.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { redisAvailable, REDIS_TEST_URL } from '../support/redis.js';
import { DEFAULT_PLANS } from '../../src/plans.js';

const rate = { requestsPerSecond: 2, burst: 5 };
const T0 = Date.parse('2027-01-01T00:00:00Z');

describe.runIf(await redisAvailable())('rate limits in Redis', () => {
  it('two instances sharing Redis enforce one limit between them', async () => {
    const errors: unknown[] = [];
    const a = new RedisRateLimiter(REDIS_TEST_URL, { onError: (e) => errors.push(e) });
    const b = new RedisRateLimiter(REDIS_TEST_URL, { onError: (e) => errors.push(e) });
    const key = `test:${randomBytes(6).toString('hex')}`;
    try {
      expect(await a.ready()).toBe(true);
      expect(await b.ready()).toBe(true);
      const taken = [];
      for (let i = 0; i < 8; i++) taken.push((await (i % 2 ? a : b).take(key, rate, T0)).allowed);
      expect(taken.filter(Boolean)).toHaveLength(5);
      expect(taken.slice(5)).toEqual([false, false, false]);
      const later = await a.take(key, rate, T0 + 500);
      expect(later).toMatchObject({ allowed: true, remaining: 0, limit: 5 });
      expect((await b.take(key, rate, T0 + 500)).retryAfterSeconds).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('takes tokens in leases under concurrent load: far fewer round trips, and between two instances exactly the bucket, no more and no less', async () => {
    const big = { requestsPerSecond: 1, burst: 400 };
    let roundTrips = 0;
    const hooks = { onError: (e: unknown) => errors.push(e), onRoundTrip: () => (roundTrips += 1) };
    const errors: unknown[] = [];
    const a = new RedisRateLimiter(REDIS_TEST_URL, hooks);
    const b = new RedisRateLimiter(REDIS_TEST_URL, hooks);
    const key = `test:${randomBytes(6).toString('hex')}`;
    try {
      expect(await a.ready()).toBe(true);
      expect(await b.ready()).toBe(true);
      let allowed = 0;
      // Waves of 60 requests at once on each instance, three times what the bucket holds in all;
      // the clock stands still, so nothing refills and no lease lapses.
      for (let wave = 0; wave < 10; wave++) {
        const answers = await Promise.all(Array.from({ length: 120 }, (_, i) => (i % 2 ? a : b).take(key, big, T0)));
        allowed += answers.filter((d) => d.allowed).length;
        for (const d of answers) expect(d.limit).toBe(400);
      }
      expect(allowed).toBeLessThanOrEqual(400);
      expect(roundTrips).toBeLessThan(1200 / 5);
      // What is still leased (taken ahead for the next requests) is spent by the next requests,
      // one at a time, until both instances are refused: every token of the bucket, once.
      for (const limiter of [a, b]) while ((await limiter.take(key, big, T0)).allowed) allowed += 1;
      expect(allowed).toBe(400);
      expect(await a.take(key, big, T0)).toMatchObject({ allowed: false, remaining: 0 });
      expect(errors).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('makes one round trip per request for a team that sends one request at a time at a low rate', async () => {
    let roundTrips = 0;
    const limiter = new RedisRateLimiter(REDIS_TEST_URL, { onError: () => {}, onRoundTrip: () => (roundTrips += 1) });
    const key = `test:${randomBytes(6).toString('hex')}`;
    try {
      expect(await limiter.ready()).toBe(true);
      const remaining = [];
      for (let i = 0; i < 4; i++) {
        remaining.push((await limiter.take(key, { requestsPerSecond: 1000, burst: 2000 }, T0 + i * 1000)).remaining);
        // A quiet team: its requests come further apart than the lease sizing window.
        await new Promise((r) => setTimeout(r, 60));
      }
      expect(roundTrips).toBe(4);
      // Nothing held back: each answer is the bucket in Redis (full again after a second at 1000/s).
      expect(remaining).toEqual([1999, 1999, 1999, 1999]);
    } finally {
      await limiter.close();
    }
  });

  describe('when Redis stops answering', () => {
    let proxy: CuttableProxy;
    let t: TestApp;
    beforeAll(async () => {
      const target = new URL(REDIS_TEST_URL);
      proxy = await new CuttableProxy({ host: target.hostname, port: Number(target.port || 6379) }).start();
      t = await makeTestApp({
        plans: { ...DEFAULT_PLANS, small: { ...rate, jobsPerMonth: null, maxRetriesCap: 3 } },
        env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}` },
      });
    });
    afterAll(async () => {
      await t.close();
      await proxy.close();
    });

    it('keeps serving requests (limited per instance), counts the failures, and recovers by itself', async () => {
      const p = await t.makeProject({ plan: 'small' });
      const list = () => t.api(p.key, { method: 'GET', url: '/api/jobs' });
      // Through Redis.
      expect((await list()).headers['ratelimit-remaining']).toBe('4');

      proxy.cut();
      t.clock.advance(60_000);
      const during = [];
      for (let i = 0; i < 3; i++) during.push(await list());
      expect(during.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(during.every((r) => r.headers['ratelimit-limit'] === '5')).toBe(true);
      const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.body).toMatch(/punctual_rate_limit_redis_errors_total [1-9]/);

      proxy.restore();
      t.clock.advance(60_000);
      const deadline = Date.now() + 10_000;
      // Back on Redis: its bucket (4 left, then refilled by the minute) answers again.
      for (;;) {
        const before = Number((await t.app.inject({ method: 'GET', url: '/metrics' })).body.match(/punctual_rate_limit_redis_errors_total (\d+)/)![1]);
        await list();
        const after = Number((await t.app.inject({ method: 'GET', url: '/metrics' })).body.match(/punctual_rate_limit_redis_errors_total (\d+)/)![1]);
        if (after === before) break;
        if (Date.now() > deadline) throw new Error('never went back to Redis');
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  });
});
