import type { ProjectRow } from '../store/store.js';
import type { BucketRate, RateLimiter } from '../rate-limits/token-bucket.js';

/**
 * A project's delivery rate as a token bucket: refilled at the rate, holding a twentieth of a
 * second's worth (at least one token). The few tokens it can hold make up for timers that fire a
 * little late, which would otherwise add up over a long backlog (each start waiting for the next
 * token); they let a second start at most that many attempts over the rate.
 */
export function deliveryBucket(ratePerSecond: number): BucketRate {
  return { requestsPerSecond: ratePerSecond, burst: Math.max(1, Math.ceil(ratePerSecond / 20)) };
}

/**
 * Takes `wanted` start tokens of a rated project at once (SPEC section 11), from its bucket in
 * Redis (shared by every instance) with REDIS_URL, else in this process: how many were granted,
 * and when the next may be had if any were refused.
 */
export async function takeStartTokens(
  limiter: RateLimiter,
  project: Pick<ProjectRow, 'id' | 'deliveryRatePerSecond'>,
  wanted: number,
  now: number,
): Promise<{ granted: number; retryAfterMs: number | null }> {
  const rate = deliveryBucket(project.deliveryRatePerSecond!);
  const decisions = await Promise.all(Array.from({ length: wanted }, () => limiter.take(`delivery:${project.id}`, rate, now)));
  const refused = decisions.find((d) => !d.allowed);
  return { granted: decisions.filter((d) => d.allowed).length, retryAfterMs: refused ? refused.retryAfterMs : null };
}
