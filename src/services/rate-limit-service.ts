import { RateLimitedError } from '../errors.js';
import type { RateDecision, RateLimiter } from '../rate-limits/token-bucket.js';
import type { Metrics } from '../metrics.js';
import type { Plan } from '../plans.js';

/** A team's request rate against its plan (SPEC section 6); every key of the team shares one bucket. */
export class RateLimitService {
  constructor(private readonly deps: { limiter: RateLimiter; metrics: Metrics }) {}

  /** The bucket as it stands now (see currentRateLimit). */
  current(teamId: string, plan: Plan, now: number): Promise<RateDecision | null> {
    return currentRateLimit(this.deps.limiter, teamId, plan, now);
  }

  /** Null when the plan has no rate limit; throws RATE_LIMITED (with the headers) when over it. */
  async check(teamId: string, plan: Plan, now: number): Promise<RateDecision | null> {
    if (plan.requestsPerSecond === null || plan.burst === null) return null;
    const decision = await this.deps.limiter.take(`team:${teamId}`, { requestsPerSecond: plan.requestsPerSecond, burst: plan.burst }, now);
    if (!decision.allowed) {
      this.deps.metrics.rateLimited.inc();
      throw new RateLimitedError(
        `This team's plan allows ${plan.requestsPerSecond} requests per second (bursts of ${plan.burst}); retry in ${decision.retryAfterSeconds} s`,
        { limit: plan.burst, requestsPerSecond: plan.requestsPerSecond },
        { ...rateLimitHeaders(decision), 'retry-after': String(decision.retryAfterSeconds) },
      );
    }
    return decision;
  }
}

/** Where the team stands against its plan's rate limit, without spending a request; null when the plan has none. */
async function currentRateLimit(
  limiter: RateLimiter,
  teamId: string,
  plan: Plan,
  now: number,
): Promise<RateDecision | null> {
  if (plan.requestsPerSecond === null || plan.burst === null) return null;
  return limiter.peek(`team:${teamId}`, { requestsPerSecond: plan.requestsPerSecond, burst: plan.burst }, now);
}

export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(decision.limit),
    'ratelimit-remaining': String(decision.remaining),
    'ratelimit-reset': String(decision.resetSeconds),
  };
}
