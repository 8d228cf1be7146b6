import { Redis } from 'ioredis';
import { decision, MemoryRateLimiter, peekTokens, type BucketRate, type RateDecision, type RateLimiter } from './token-bucket.js';

/**
 * The token bucket of token-bucket.ts, kept in Redis so that the limit holds across instances.
 * The application clock is passed in, as everywhere else.
 *
 * A round trip per request costs more than the rest of a dispatch's CPU on a small machine, so an
 * instance takes tokens in leases: the atomic script hands out up to `want` tokens at once, which
 * the instance then spends locally. Every token still comes from the one bucket in Redis, so
 * instances together never admit more than the plan allows. What a lease can cost is the other
 * way: tokens an instance holds and does not spend. That is kept small three ways: a lease is sized
 * to the requests the instance saw in the last LEASE_SIZING_MS (one token at low rates, so a quiet
 * team still makes one round trip per request, exactly as without leases); it never takes more than
 * 1/LEASE_SHARE of what the bucket holds, so near the limit leases shrink to single tokens and the
 * buckets behave exactly; and unspent tokens lapse LEASE_TTL_MS after the grant.
 *
 * Tokens come back as a string because Redis truncates Lua numbers to integers.
 */
const LEASE_SHARE = 8;
const LEASE_SIZING_MS = 50;
const LEASE_TTL_MS = 100;
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 't', 'u')
local tokens = tonumber(state[1])
local updated = tonumber(state[2])
if tokens == nil then
  tokens = burst
  updated = now
elseif now > updated then
  tokens = math.min(burst, tokens + (now - updated) * rate / 1000)
  updated = now
end
local granted = 0
if tokens >= 1 then
  granted = math.min(want, math.max(1, math.floor(tokens / ${LEASE_SHARE})))
  tokens = tokens - granted
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'u', tostring(updated))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {granted, tostring(tokens)}
`;

/** A Redis that does not answer within this costs a request no more than this. */
const COMMAND_TIMEOUT_MS = 200;
const WARN_EVERY_MS = 10_000;

type TakeCommand = (key: string, rate: number, burst: number, now: number, want: number) => Promise<[number, string]>;

/** This instance's share of one team's bucket. */
interface Lease {
  /** Tokens taken from Redis and not yet spent here. */
  tokens: number;
  /** Application time of the last grant; unspent tokens lapse LEASE_TTL_MS after it. */
  grantedAt: number;
  /** The bucket in Redis at its last answer, and when (for RateLimit-Remaining and Retry-After). */
  remoteTokens: number;
  remoteAt: number;
  /** The size of the last lease asked for. */
  want: number;
  /** Requests here in the last full window of LEASE_SIZING_MS: the size of the next lease. */
  perWindow: number;
  /** Requests seen since `windowStart` (performance.now()), in the window under way. */
  seen: number;
  windowStart: number;
  /** Requests here waiting for a take from Redis. */
  waiting: number;
  /** A take from Redis under way; requests that find no token wait for it. */
  pending: Promise<'answered' | 'failed'> | null;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  /** While Redis is unreachable each instance limits alone, as without REDIS_URL: never "reject everything". */
  private readonly fallback = new MemoryRateLimiter();
  private readonly leases = new Map<string, Lease>();
  private lastWarning = 0;

  constructor(
    url: string,
    private readonly hooks: { onError: (error: unknown, warn: boolean) => void; onRoundTrip?: () => void },
  ) {
    this.redis = new Redis(url, {
      // Fail at once while disconnected instead of queueing requests behind a dead Redis.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      // Reconnect forever, backing off to a second.
      retryStrategy: (times) => Math.min(times * 100, 1_000),
      lazyConnect: false,
    });
    this.redis.on('error', () => {});
    this.redis.defineCommand('punctualTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  /** Resolves once connected, or after `timeoutMs` (checks fall back meanwhile): true when connected. */
  ready(timeoutMs = 2_000): Promise<boolean> {
    if (this.redis.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.redis.once('ready', onReady);
    });
  }

  async take(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    const lease = this.leaseOf(key, now);
    const at = performance.now();
    if (at - lease.windowStart >= LEASE_SIZING_MS) {
      lease.perWindow = (lease.seen * LEASE_SIZING_MS) / (at - lease.windowStart);
      lease.seen = 0;
      lease.windowStart = at;
    }
    lease.seen += 1;
    for (;;) {
      if (lease.tokens >= 1) {
        lease.tokens -= 1;
        // Ask for the next lease while this one lasts, so that a steady stream never waits on Redis.
        if (lease.want > 1 && lease.tokens < lease.want / 2 && !lease.pending) void this.refill(key, lease, rate, now);
        return decision(this.remaining(lease, rate, now), true, rate);
      }
      lease.waiting += 1;
      const outcome = await (lease.pending ?? this.refill(key, lease, rate, now));
      lease.waiting -= 1;
      if (outcome === 'failed') return this.fallback.takeNow(key, rate, now);
      // Redis had nothing to hand out when it answered: refused, as a single take would have been.
      if (lease.tokens < 1 && lease.remoteTokens < 1) return decision(lease.remoteTokens, false, rate);
    }
  }

  private leaseOf(key: string, now: number): Lease {
    let lease = this.leases.get(key);
    if (!lease) {
      lease = { tokens: 0, grantedAt: now, remoteTokens: 0, remoteAt: now, want: 1, perWindow: 0, seen: 0, windowStart: performance.now(), waiting: 0, pending: null };
      this.leases.set(key, lease);
    } else if (lease.tokens > 0 && now - lease.grantedAt >= LEASE_TTL_MS) {
      lease.tokens = 0;
    }
    return lease;
  }

  private refill(key: string, lease: Lease, rate: BucketRate, now: number): Promise<'answered' | 'failed'> {
    // As many tokens as requests came here in the last window, or are waiting now: never much
    // more than this instance has just shown it needs.
    lease.want = Math.max(1, Math.round(lease.perWindow), lease.waiting);
    const take = (this.redis as unknown as { punctualTake: TakeCommand }).punctualTake;
    this.hooks.onRoundTrip?.();
    const pending = take
      .call(this.redis, `punctual:rate:${key}`, rate.requestsPerSecond, rate.burst, now, lease.want)
      .then(([granted, tokens]) => {
        lease.tokens += granted;
        if (granted > 0) lease.grantedAt = now;
        lease.remoteTokens = Number(tokens);
        lease.remoteAt = now;
        return 'answered' as const;
      })
      .catch((error: unknown) => {
        const warn = now - this.lastWarning >= WARN_EVERY_MS;
        if (warn) this.lastWarning = now;
        this.hooks.onError(error, warn);
        return 'failed' as const;
      })
      .finally(() => {
        lease.pending = null;
      });
    lease.pending = pending;
    return pending;
  }

  /** What this instance can tell of the bucket: Redis's tokens refilled since its answer, plus those held here. */
  private remaining(lease: Lease, rate: BucketRate, now: number): number {
    const remote = peekTokens({ tokens: lease.remoteTokens, updatedAt: lease.remoteAt }, rate, now);
    return Math.min(rate.burst, remote + lease.tokens);
  }

  /** A plain read of the bucket; the refill arithmetic is token-bucket.ts's, as in the script. */
  async peek(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    try {
      const [tokens, updatedAt] = await this.redis.hmget(`punctual:rate:${key}`, 't', 'u');
      const state = tokens != null && updatedAt != null ? { tokens: Number(tokens), updatedAt: Number(updatedAt) } : undefined;
      const left = peekTokens(state, rate, now);
      return decision(left, left >= 1, rate);
    } catch {
      return this.fallback.peekNow(key, rate, now);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
