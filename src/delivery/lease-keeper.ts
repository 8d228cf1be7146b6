import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';

/** Held leases are renewed this often; far inside the shortest lease (1 s timeout + 30 s margin). */
const LEASE_RENEW_INTERVAL_MS = 10_000;

/**
 * The leases a worker holds (jobs claimed, waiting or running), each with its length, renewed
 * together every LEASE_RENEW_INTERVAL_MS so that a live worker's jobs are never rescued.
 */
export class LeaseKeeper {
  private readonly leases = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: { store: Store; clock: Clock; workerId: string; log: FastifyBaseLogger }) {}

  hold(jobId: string, leaseMs: number): void {
    this.leases.set(jobId, leaseMs);
  }

  drop(jobId: string): void {
    this.leases.delete(jobId);
  }

  holds(jobId: string): boolean {
    return this.leases.has(jobId);
  }

  start(): void {
    this.timer = setInterval(() => void this.renew(), LEASE_RENEW_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async renew(): Promise<void> {
    if (this.leases.size === 0) return;
    const now = this.deps.clock.now();
    const leases = [...this.leases].map(([jobId, leaseMs]) => ({ jobId, leaseExpiresAt: now + leaseMs }));
    try {
      await this.deps.store.jobLeaseRenew({ workerId: this.deps.workerId, leases });
    } catch (error) {
      this.deps.log.warn({ err: error }, 'lease renewal failed; will retry');
    }
  }
}
