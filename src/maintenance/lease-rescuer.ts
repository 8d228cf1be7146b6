import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Metrics } from '../metrics.js';
import type { ProjectRow, Store } from '../store/store.js';

/** How often every instance looks for leases that ran out (a worker that died). */
export const RESCUE_INTERVAL_MS = 5_000;
const RESCUE_BATCH = 100;

/**
 * Returns jobs whose worker died to the queue: a DISPATCHED one (never sent) is due at once with
 * no attempt counted; a STARTED one counts a lease_expired attempt and follows its retry policy.
 * It also ends attempts accepted with 202 whose report did not come by their deadline (timeout).
 */
export class LeaseRescuer {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      metrics: Metrics;
      log: FastifyBaseLogger;
      /** Rescued jobs are due: wake the claim loop. */
      onRequeued: (runAt: number) => void;
      /**
       * The wait before a rescued STARTED job's next attempt (the delivery layer's retry policy,
       * given by the engine so that maintenance needs nothing above the store).
       */
      retryDelayMs: (project: ProjectRow, attemptNumber: number) => number;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick().catch((error: unknown) => this.deps.log.error({ err: error }, 'lease rescue failed')), RESCUE_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Rescues every lease that ends before `expiredBefore` (default: now). Returns how many. */
  async tick(expiredBefore?: number): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const rescued = await this.deps.store.jobRescueExpiredLeases({
        now,
        expiredBefore: expiredBefore ?? now,
        limit: RESCUE_BATCH,
        retryAt: (lease, project) =>
          lease.attemptNumber !== null && lease.attemptNumber <= lease.job.maxRetries
            ? now + this.deps.retryDelayMs(project, lease.attemptNumber)
            : null,
      });
      total += rescued.length;
      let earliest = Number.POSITIVE_INFINITY;
      for (const lease of rescued) {
        if (lease.attemptNumber === null) earliest = now;
        else {
          this.deps.metrics.attempts.inc({ outcome: lease.awaitedReport ? 'timeout' : 'lease_expired' });
          if (lease.attemptNumber > lease.job.maxRetries) this.deps.metrics.jobsFailed.inc();
        }
      }
      if (rescued.length > 0) {
        const timedOut = rescued.filter((lease) => lease.awaitedReport).length;
        if (timedOut > 0) this.deps.log.info({ count: timedOut }, 'attempts accepted with 202 timed out waiting for their report');
        if (rescued.length > timedOut) this.deps.log.warn({ count: rescued.length - timedOut }, 'rescued jobs whose lease expired');
        this.deps.onRequeued(Number.isFinite(earliest) ? earliest : now);
      }
      if (rescued.length < RESCUE_BATCH) return total;
    }
  }
}
