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
