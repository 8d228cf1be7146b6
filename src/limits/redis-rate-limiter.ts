import { Redis } from 'ioredis';
import { decision, MemoryRateLimiter, type BucketRate, type RateDecision, type RateLimiter } from './token-bucket.js';

/**
 * The token bucket of token-bucket.ts, applied atomically in Redis: one round trip per request
 * (EVALSHA), so the limit holds across instances. The application clock is passed in, as
 * everywhere else. Tokens come back as a string because Redis truncates Lua numbers to integers.
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
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
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'u', tostring(updated))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
`;

/** A Redis that does not answer within this costs a request no more than this. */
const COMMAND_TIMEOUT_MS = 200;
const WARN_EVERY_MS = 10_000;

type TakeCommand = (key: string, rate: number, burst: number, now: number) => Promise<[number, string]>;

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  /** While Redis is unreachable each instance limits alone, as without REDIS_URL: never "reject everything". */
  private readonly fallback = new MemoryRateLimiter();
  private lastWarning = 0;

  constructor(
    url: string,
    private readonly hooks: { onError: (error: unknown, warn: boolean) => void },
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
    try {
      const take = (this.redis as unknown as { punctualTake: TakeCommand }).punctualTake;
      const [allowed, tokens] = await take.call(this.redis, `punctual:rate:${key}`, rate.requestsPerSecond, rate.burst, now);
      return decision(Number(tokens), allowed === 1, rate);
    } catch (error) {
      const warn = now - this.lastWarning >= WARN_EVERY_MS;
      if (warn) this.lastWarning = now;
      this.hooks.onError(error, warn);
      return this.fallback.takeNow(key, rate, now);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
