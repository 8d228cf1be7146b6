import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { ProjectRow } from '../store/store.js';
import type { BucketRate, RateLimiter } from '../rate-limits/token-bucket.js';
import type { Capacity } from './capacity.js';

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

/**
 * The starts of rated projects: what a project's free slots allow of its due jobs is counted as
 * started at once (so that the slots are not offered twice), then waits for that many tokens; the
 * refused are given back and wait for the next token. One take at a time per project.
 */
export class RatedStarts {
  private readonly takes = new Set<string>();

  constructor(
    private readonly deps: {
      limiter: RateLimiter;
      capacity: Capacity;
      clock: Clock;
      log: FastifyBaseLogger;
      /** Runs the project's next due job, its start counted. */
      runNext: (projectId: string) => void;
      /** Nothing of the project starts before `until`. */
      holdUntil: (projectId: string, until: number) => void;
      /** The take is over: the project's due jobs may start. */
      done: (projectId: string) => void;
    },
  ) {}

  /** Whether a take of the project's tokens is under way: its starts wait for it. */
  taking(projectId: string): boolean {
    return this.takes.has(projectId);
  }

  /** Starts what the project's free slots allow of its `waiting` due jobs, once their tokens are taken. */
  start(project: ProjectRow, waiting: number): void {
    const { capacity, clock } = this.deps;
    let wanted = 0;
    while (wanted < waiting && capacity.mayStart(project, clock.now())) {
      capacity.start(project.id);
      wanted += 1;
    }
    this.takes.add(project.id);
    void takeStartTokens(this.deps.limiter, project, wanted, clock.now())
      .then(({ granted, retryAfterMs }) => {
        for (let i = granted; i < wanted; i++) capacity.unstart(project.id);
        for (let i = 0; i < granted; i++) this.deps.runNext(project.id);
        if (retryAfterMs !== null) this.deps.holdUntil(project.id, clock.now() + retryAfterMs);
      })
      .catch((error: unknown) => {
        // The limiter answers from memory when Redis is away; a failure here is unexpected: wait a little.
        this.deps.log.error({ err: error }, 'taking delivery rate tokens failed');
        for (let i = 0; i < wanted; i++) capacity.unstart(project.id);
        this.deps.holdUntil(project.id, clock.now() + 1_000);
      })
      .finally(() => {
        this.takes.delete(project.id);
        this.deps.done(project.id);
      });
  }
}
