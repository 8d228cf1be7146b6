/**
 * SPEC section 6: a token bucket per team, `burst` tokens, refilled at `requestsPerSecond`.
 * The arithmetic lives here once; the Redis script applies the same steps atomically.
 */
export interface BucketRate {
  requestsPerSecond: number;
  burst: number;
}

export interface RateDecision {
  allowed: boolean;
  /** RateLimit-Limit: the burst. */
  limit: number;
  /** RateLimit-Remaining: whole tokens left. */
  remaining: number;
  /** RateLimit-Reset: seconds, rounded up, until the bucket is full. */
  resetSeconds: number;
  /** Retry-After on a refusal: seconds, at least 1, until a request would pass. */
  retryAfterSeconds: number;
}

export interface BucketState {
  tokens: number;
  updatedAt: number;
}

/** Refills `state` to `now` and takes a token if one is there. A clock that went back refills nothing. */
export function takeToken(state: BucketState | undefined, rate: BucketRate, now: number): { state: BucketState; allowed: boolean } {
  let tokens = state ? state.tokens : rate.burst;
  const updatedAt = state ? Math.max(state.updatedAt, now) : now;
  if (state && now > state.updatedAt) tokens = Math.min(rate.burst, tokens + ((now - state.updatedAt) * rate.requestsPerSecond) / 1000);
  const allowed = tokens >= 1;
  if (allowed) tokens -= 1;
  return { state: { tokens, updatedAt }, allowed };
}

export function decision(tokens: number, allowed: boolean, rate: BucketRate): RateDecision {
  return {
    allowed,
    limit: rate.burst,
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.max(0, Math.ceil((rate.burst - tokens) / rate.requestsPerSecond - 1e-9)),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / rate.requestsPerSecond - 1e-9)),
  };
}

/** The tokens a bucket holds at `now`, refilled but untouched (a full bucket when it was never used). */
export function peekTokens(state: BucketState | undefined, rate: BucketRate, now: number): number {
  if (!state) return rate.burst;
  if (now <= state.updatedAt) return state.tokens;
  return Math.min(rate.burst, state.tokens + ((now - state.updatedAt) * rate.requestsPerSecond) / 1000);
}

export interface RateLimiter {
  take(key: string, rate: BucketRate, now: number): Promise<RateDecision>;
  /** Where the bucket stands, taking nothing (the dashboard's usage page). */
  peek(key: string, rate: BucketRate, now: number): Promise<RateDecision>;
  close(): Promise<void>;
}

/** Buckets in this process: O(1) per request; with several instances each limits alone. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, BucketState>();

  async take(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    return this.takeNow(key, rate, now);
  }

  async peek(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    return this.peekNow(key, rate, now);
  }

  peekNow(key: string, rate: BucketRate, now: number): RateDecision {
    const tokens = peekTokens(this.buckets.get(key), rate, now);
    return decision(tokens, tokens >= 1, rate);
  }

  takeNow(key: string, rate: BucketRate, now: number): RateDecision {
    const { state, allowed } = takeToken(this.buckets.get(key), rate, now);
    this.buckets.set(key, state);
    return decision(state.tokens, allowed, rate);
  }

  async close(): Promise<void> {}
}
