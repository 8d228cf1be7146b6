import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { TestClock } from '../../src/clock.js';
import { RedisRateLimiter } from '../../src/rate-limits/redis-rate-limiter.js';
import { MemoryRateLimiter, type BucketRate, type RateDecision } from '../../src/rate-limits/token-bucket.js';
import { DEFAULT_PLANS } from '../../src/plans.js';
import { CuttableProxy } from '../support/cuttable-proxy.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { redisAvailable, REDIS_TEST_URL } from '../support/redis.js';

const small = { requestsPerSecond: 2, burst: 5 };
const pro: BucketRate = { requestsPerSecond: DEFAULT_PLANS.pro!.requestsPerSecond!, burst: DEFAULT_PLANS.pro!.burst! };

/** A limiter as the server makes one, counting its calls to Redis; errors fail the test. */
function instance(errors: unknown[]) {
  const counted = { roundTrips: 0, limiter: null as unknown as RedisRateLimiter };
  counted.limiter = new RedisRateLimiter(REDIS_TEST_URL, { onError: (error) => errors.push(error), onRoundTrip: () => (counted.roundTrips += 1) });
  return counted;
}

/** `count` takes issued in this event-loop turn, in order: what that many requests reading at once do. */
const takeAtOnce = (limiter: RedisRateLimiter, key: string, rate: BucketRate, now: number, count: number) =>
  Promise.all(Array.from({ length: count }, () => limiter.take(key, rate, now)));

const admitted = (decisions: RateDecision[]) => decisions.filter((d) => d.allowed).length;

/** Deterministic pseudo-random numbers in [0, 1), so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

describe.runIf(await redisAvailable())('rate limits in Redis', () => {
  const errors: unknown[] = [];
  const opened: RedisRateLimiter[] = [];
  let key: string;
  let clock: TestClock;

  /** Two instances of Punctual on one team's bucket in Redis, on the clock of the test. */
  async function twoInstances() {
    const a = instance(errors);
    const b = instance(errors);
    opened.push(a.limiter, b.limiter);
    expect(await a.limiter.ready()).toBe(true);
    expect(await b.limiter.ready()).toBe(true);
    key = `test:${randomBytes(6).toString('hex')}`;
    clock = new TestClock();
    return { a, b };
  }

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((limiter) => limiter.close()));
    expect(errors.splice(0)).toEqual([]);
  });

  it('admits exactly the burst in one turn from two instances together, each turn of an instance in one call, then refuses', async () => {
    const { a, b } = await twoInstances();
    // 150 requests at once on each instance: 300, against a bucket of 200.
    const [fromA, fromB] = await Promise.all([takeAtOnce(a.limiter, key, pro, clock.now(), 150), takeAtOnce(b.limiter, key, pro, clock.now(), 150)]);
    expect(admitted(fromA) + admitted(fromB)).toBe(200);
    expect([a.roundTrips, b.roundTrips]).toEqual([1, 1]);
    // Redis ran one call before the other: the first got all it asked for, the second what was left.
    const [first, second] = admitted(fromA) === 150 ? [fromA, fromB] : [fromB, fromA];
    expect(admitted(first)).toBe(150);
    expect(first.map((d) => d.remaining)).toEqual(Array.from({ length: 150 }, (_, i) => 199 - i));
    // The second instance's first 50 waiting requests pass, in the order they came, and the rest are refused.
    expect(second.map((d) => d.allowed)).toEqual([...Array<boolean>(50).fill(true), ...Array<boolean>(100).fill(false)]);
    expect(second.slice(0, 50).map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i));
    for (const refused of second.slice(50)) expect(refused).toEqual({ allowed: false, limit: 200, remaining: 0, resetSeconds: 2, retryAfterSeconds: 1, retryAfterMs: expect.any(Number) });

    // The clock stands still: nothing more for either.
    const [againA, againB] = await Promise.all([takeAtOnce(a.limiter, key, pro, clock.now(), 3), takeAtOnce(b.limiter, key, pro, clock.now(), 3)]);
    expect(admitted([...againA, ...againB])).toBe(0);
  });

  it('shares the refill between the instances: after t ms exactly floor(rate × t / 1000) more, across both', async () => {
    const { a, b } = await twoInstances();
    const start = clock.now();
    expect(admitted(await takeAtOnce(a.limiter, key, pro, start, 200))).toBe(200);
    let since = 0;
    // Steps that leave fractions of a token behind (100/s is 0.1 token a millisecond), up to 1.5 s.
    for (const step of [3, 7, 9, 1, 13, 37, 30, 250, 1, 99, 551, 499]) {
      clock.advance(step);
      const [fromA, fromB] = await Promise.all([takeAtOnce(a.limiter, key, pro, clock.now(), 80), takeAtOnce(b.limiter, key, pro, clock.now(), 80)]);
      since += admitted(fromA) + admitted(fromB);
      const elapsed = clock.now() - start;
      expect(since, `after ${elapsed} ms`).toBe(Math.floor((pro.requestsPerSecond * elapsed) / 1000));
    }
    expect(since).toBe(150);
  });

  it('one instance steady below the rate, the other in bursts: never more than burst + rate × elapsed, refused only when the bucket is empty, as one bucket decides', async () => {
    const { a: steady, b: bursty } = await twoInstances();
    // The same requests, each step's in one row, on a single bucket in memory: the one-bucket model.
    const oneBucket = new MemoryRateLimiter();
    const random = seeded(5);
    const start = clock.now();
    let total = 0;
    let refusedSteady = 0;
    let nextSteady = start;
    while (clock.now() - start < 4_000) {
      clock.advance(1 + Math.floor(random() * 12));
      const now = clock.now();
      // 50 requests a second, every 20 ms: half the plan's rate.
      const steadyCount = now >= nextSteady ? 1 : 0;
      if (steadyCount) nextSteady += 20;
      const burstCount = random() < 0.04 ? 40 + Math.floor(random() * 160) : 0;
      if (steadyCount + burstCount === 0) continue;
      // The burst is issued first, so that it mostly reaches Redis first when both come at one instant.
      const [fromBursty, fromSteady] = await Promise.all([
        takeAtOnce(bursty.limiter, key, pro, now, burstCount),
        takeAtOnce(steady.limiter, key, pro, now, steadyCount),
      ]);
      const answers = [...fromBursty, ...fromSteady];
      total += admitted(answers);
      refusedSteady += fromSteady.length - admitted(fromSteady);
      expect(total).toBeLessThanOrEqual(pro.burst + (pro.requestsPerSecond * (now - start)) / 1000);
      // Who went first at one instant changes who is refused, not how many: as many as one bucket admits.
      const model = await Promise.all(answers.map(() => oneBucket.take(key, pro, now)));
      expect(admitted(answers), `at +${now - start} ms`).toBe(admitted(model));
      if (admitted(answers) < answers.length) {
        const left = await steady.limiter.peek(key, pro, now);
        expect(left.remaining, `refused at +${now - start} ms with tokens left`).toBe(0);
      }
    }
    // The bursts did empty the bucket under the steady instance now and then: that was tested.
    expect(refusedSteady).toBeGreaterThan(0);
    expect(total).toBeGreaterThan(pro.burst);
  });

  it("tells each request the RateLimit-Remaining, Reset and Retry-After that one bucket taking them one by one would", async () => {
    const { a, b } = await twoInstances();
    const rate: BucketRate = { requestsPerSecond: 3, burst: 7 };
    // Two single buckets kept in step: one takes the instants' requests A's first, the other B's first.
    // Both end every instant the same (the same number granted), so both stay valid models.
    const aFirst = new MemoryRateLimiter();
    const bFirst = new MemoryRateLimiter();
    const random = seeded(11);
    let sawRefusal = false;
    for (let step = 0; step < 60; step++) {
      clock.advance(Math.floor(random() * 900));
      const now = clock.now();
      const [countA, countB] = [Math.floor(random() * 4), Math.floor(random() * 4)];
      const [fromA, fromB] = await Promise.all([takeAtOnce(a.limiter, key, rate, now, countA), takeAtOnce(b.limiter, key, rate, now, countB)]);
      const inOrder = async (model: MemoryRateLimiter, first: number, second: number) => {
        const decisions: RateDecision[] = [];
        for (let i = 0; i < first + second; i++) decisions.push(await model.take(key, rate, now));
        return [decisions.slice(0, first), decisions.slice(first)];
      };
      const [modelAFirst, modelBFirst] = [await inOrder(aFirst, countA, countB), await inOrder(bFirst, countB, countA)];
      expect([modelAFirst, [modelBFirst[1], modelBFirst[0]]]).toContainEqual([fromA, fromB]);
      sawRefusal ||= [...fromA, ...fromB].some((d) => !d.allowed && d.retryAfterSeconds === 1);
    }
    expect(sawRefusal).toBe(true);
  });

  it('a request that arrives while its team is waiting on Redis goes in the next call, with the others that arrived meanwhile', async () => {
    const { a } = await twoInstances();
    const first = a.limiter.take(key, small, clock.now());
    // After the check phase in which the first call was sent; its answer can come no sooner than the next poll.
    await new Promise((resolve) => setImmediate(resolve));
    expect(a.roundTrips).toBe(1);
    const meanwhile = takeAtOnce(a.limiter, key, small, clock.now(), 6);
    expect((await first).remaining).toBe(4);
    expect((await meanwhile).map((d) => d.remaining)).toEqual([3, 2, 1, 0, 0, 0]);
    expect(a.roundTrips).toBe(2);
  });

  it('decides the requests of one turn at the rate each came with when the plan changes between them', async () => {
    const { a } = await twoInstances();
    const bigger: BucketRate = { requestsPerSecond: 4, burst: 10 };
    const answers = await Promise.all([a.limiter.take(key, small, clock.now()), a.limiter.take(key, bigger, clock.now())]);
    expect(answers.map((d) => [d.limit, d.remaining])).toEqual([
      [5, 4],
      [10, 3],
    ]);
    expect(a.roundTrips).toBe(2);
  });

  it('makes one round trip per request for a team that sends one request at a time', async () => {
    const { a } = await twoInstances();
    const remaining = [];
    for (let i = 0; i < 4; i++) {
      remaining.push((await a.limiter.take(key, { requestsPerSecond: 1000, burst: 2000 }, clock.now())).remaining);
      clock.advance(1000);
    }
    expect(a.roundTrips).toBe(4);
    // Each answer is the bucket in Redis (full again after a second at 1000/s).
    expect(remaining).toEqual([1999, 1999, 1999, 1999]);
  });

  it('lets the dashboard read the bucket without taking from it', async () => {
    const { a, b } = await twoInstances();
    expect(await b.limiter.peek(key, small, clock.now())).toMatchObject({ remaining: 5, resetSeconds: 0 });
    await takeAtOnce(a.limiter, key, small, clock.now(), 3);
    expect(await b.limiter.peek(key, small, clock.now())).toMatchObject({ remaining: 2, resetSeconds: 2 });
    clock.advance(500);
    expect(await b.limiter.peek(key, small, clock.now())).toMatchObject({ remaining: 3, resetSeconds: 1 });
    expect(b.roundTrips).toBe(0);
  });

  describe('when Redis stops answering', () => {
    let proxy: CuttableProxy;
    let t: TestApp;
    beforeAll(async () => {
      const target = new URL(REDIS_TEST_URL);
      proxy = await new CuttableProxy({ host: target.hostname, port: Number(target.port || 6379) }).start();
      t = await makeTestApp({
        plans: { ...DEFAULT_PLANS, small: { ...small, jobsPerMonth: null, maxRetriesCap: 3 } },
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
      const redisErrors = async () =>
        Number(/punctual_rate_limit_redis_errors_total (\d+)/.exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)![1]);
      // Through Redis.
      expect((await list()).headers['ratelimit-remaining']).toBe('4');

      proxy.cut();
      t.clock.advance(60_000);
      const during = [];
      for (let i = 0; i < 3; i++) during.push(await list());
      expect(during.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(during.every((r) => r.headers['ratelimit-limit'] === '5')).toBe(true);
      expect(await redisErrors()).toBeGreaterThan(0);

      proxy.restore();
      t.clock.advance(60_000);
      // Polled to a deadline: the client reconnects on its own backoff, in real time.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const before = await redisErrors();
        const answer = await list();
        if ((await redisErrors()) === before) {
          // Back on Redis: its bucket, full again after the minute.
          expect(answer.headers['ratelimit-remaining']).toBe('4');
          break;
        }
        if (Date.now() > deadline) throw new Error('never went back to Redis');
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  });
});
