/**
 * SPEC section 6: a token bucket per team, `burst` tokens, refilled at `requestsPerSecond`.
 * The arithmetic lives here once; the Redis script (redis-rate-limiter.ts) applies the same steps,
 * in the same order, atomically.
 *
 * The bucket is counted in thousandths of a token: a millisecond then refills exactly
 * `requestsPerSecond` of them, so for whole-number rates (every default plan) the bucket is exact
 * integer arithmetic. Counted in tokens, a rate of 100/s adds 0.1 a millisecond, which binary
 * floating point cannot hold: the sums drift by an ulp, and a bucket that should hold exactly 1
 * token could hold 0.9999999999999999 and refuse a request exact arithmetic admits.
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
  /** The same to the millisecond (at least 1): when the next whole token is in the bucket. */
  retryAfterMs: number;
}

/** Thousandths of a token in one token. */
export const MILLI_PER_TOKEN = 1000;

interface BucketState {
  /** What the bucket held at `updatedAt`, in thousandths of a token. */
  milliTokens: number;
  updatedAt: number;
}

/** The bucket at `now`: full when never used; a clock that went back refills nothing. */
export function refill(state: BucketState | undefined, rate: BucketRate, now: number): BucketState {
  const fullMilli = rate.burst * MILLI_PER_TOKEN;
  if (!state) return { milliTokens: fullMilli, updatedAt: now };
  if (now <= state.updatedAt) return state;
  // A millisecond refills `requestsPerSecond` thousandths of a token.
  return { milliTokens: Math.min(fullMilli, state.milliTokens + (now - state.updatedAt) * rate.requestsPerSecond), updatedAt: now };
}

/**
 * Whole tokens in `milliTokens`. The correction keeps a division that rounds up to the next
 * integer (a fractional count just below it) from granting a token the bucket does not hold.
 */
function wholeTokens(milliTokens: number): number {
  let whole = Math.floor(milliTokens / MILLI_PER_TOKEN);
  if (whole * MILLI_PER_TOKEN > milliTokens) whole -= 1;
  return Math.max(0, whole);
}

/**
 * `wanted` takes in a row at one instant: refills to `now`, then grants one token to each take
 * while whole tokens last, which is min(wanted, whole tokens) of them. `milliTokensBefore` is the
 * bucket after the refill, before the first take (see decisionInRow).
 */
export function takeTokens(
  state: BucketState | undefined,
  rate: BucketRate,
  now: number,
  wanted: number,
): { state: BucketState; milliTokensBefore: number; granted: number } {
  const bucket = refill(state, rate, now);
  const granted = Math.min(wanted, wholeTokens(bucket.milliTokens));
  return {
    state: { milliTokens: bucket.milliTokens - granted * MILLI_PER_TOKEN, updatedAt: bucket.updatedAt },
    milliTokensBefore: bucket.milliTokens,
    granted,
  };
}

/**
 * What the take at `position` (0 first) of a row of takes at one instant is told, given the
 * bucket before the first and how many were granted: the first `granted` pass, each seeing one
 * token fewer than the one before it; the rest are refused and see what the granted left. This is
 * exactly what each would be told taking alone, one after the other.
 */
export function decisionInRow(milliTokensBefore: number, granted: number, position: number, rate: BucketRate): RateDecision {
  if (position < granted) return decision(milliTokensBefore - (position + 1) * MILLI_PER_TOKEN, true, rate);
  return decision(milliTokensBefore - granted * MILLI_PER_TOKEN, false, rate);
}

/** The answer's figures for a bucket holding `milliTokens` after the take. */
export function decision(milliTokens: number, allowed: boolean, rate: BucketRate): RateDecision {
  // Thousandths of a token refilled per second.
  const milliPerSecond = rate.requestsPerSecond * MILLI_PER_TOKEN;
  return {
    allowed,
    limit: rate.burst,
    remaining: wholeTokens(milliTokens),
    resetSeconds: Math.max(0, Math.ceil((rate.burst * MILLI_PER_TOKEN - milliTokens) / milliPerSecond)),
    retryAfterSeconds: Math.max(1, Math.ceil((MILLI_PER_TOKEN - milliTokens) / milliPerSecond)),
    // A millisecond refills requestsPerSecond thousandths of a token.
    retryAfterMs: Math.max(1, Math.ceil((MILLI_PER_TOKEN - milliTokens) / rate.requestsPerSecond)),
  };
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
    const { milliTokens } = refill(this.buckets.get(key), rate, now);
    return decision(milliTokens, milliTokens >= MILLI_PER_TOKEN, rate);
  }

  takeNow(key: string, rate: BucketRate, now: number): RateDecision {
    const { state, milliTokensBefore, granted } = takeTokens(this.buckets.get(key), rate, now, 1);
    this.buckets.set(key, state);
    return decisionInRow(milliTokensBefore, granted, 0, rate);
  }

  async close(): Promise<void> {}
}
