/**
 * The loop that fires schedules (SPEC section 9) in `punctual serve`: it claims the schedules
 * with a fire within FIRE_LEAD_MS (overlap "skip": due now), creates their jobs through
 * SchedulesService.fireClaimed, and sleeps until the next one needs it, looking again at least
 * every MAX_SLEEP_MS (for schedules another instance created) and at once after a change here.
 * Any number of instances run it: the lease of scheduleClaimDue keeps them apart, the unique key
 * of a fire keeps a fire's job single if a lease runs out mid-fire.
 */
import { BackgroundLoop } from './background-loop.js';
import type { Clock } from '../clock.js';
import type { ClaimedSchedule } from '../store/schedule-store.js';
import type { Store } from '../store/store.js';

/** Fires are created this far ahead of their instant, due at it. */
export const FIRE_LEAD_MS = 2_000;
/** How long a claim holds a schedule if its instance dies mid-fire: its fires wait that long, then are created late. */
export const LEASE_MS = 10_000;
/**
 * A lease that ran out unreleased, taken over within this of its end, was held by an instance
 * that stopped while the service was up (another instance, looking at least every second, took
 * it): its schedule's fires are judged as of when that instance claimed it (reachedAt).
 */
const TAKEOVER_WITHIN_MS = 5_000;
const CLAIM_LIMIT = 100;
const MAX_SLEEP_MS = 1_000;
/** Between two looks when the next fire is already due but held by another instance. */
const MIN_SLEEP_MS = 20;

/**
 * What creates a claimed schedule's jobs: SchedulesService (services/schedules-service.ts), given
 * by the wiring, so that this loop needs nothing above the store.
 */
export interface ScheduleFirer {
  fireClaimed(schedule: ClaimedSchedule, now: number, dueBy: number, reachedAt: number): Promise<void>;
}

interface ScheduleFiringDeps {
  store: Store;
  clock: Clock;
  schedules: ScheduleFirer;
  onError: (error: unknown) => void;
}

export class ScheduleFiring {
  private readonly loop: BackgroundLoop<number | null>;

  constructor(private readonly deps: ScheduleFiringDeps) {
    this.loop = new BackgroundLoop({
      pass: () => this.runOnce(),
      sleepMs: (wakeAt) => (wakeAt === null ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Math.max(MIN_SLEEP_MS, wakeAt - deps.clock.now()))),
      onError: deps.onError,
    });
  }

  /** Claims and fires everything due by now + FIRE_LEAD_MS; the next instant there is work, or null. */
  async runOnce(): Promise<number | null> {
    const { store, clock } = this.deps;
    for (;;) {
      const now = clock.now();
      const claimed = await store.scheduleClaimDue({ now, dueBy: now + FIRE_LEAD_MS, leaseUntil: now + LEASE_MS, limit: CLAIM_LIMIT });
      for (const schedule of claimed) {
        try {
          await this.deps.schedules.fireClaimed(schedule, now, now + FIRE_LEAD_MS, this.reachedAt(schedule, now));
        } catch (error) {
          // Its lease runs out and the fire is tried again (by any instance); the others go on.
          this.deps.onError(error);
        }
      }
      if (claimed.length < CLAIM_LIMIT) break;
    }
    const now = clock.now();
    return store.scheduleNextWakeAt({ leadMs: FIRE_LEAD_MS, horizon: now + FIRE_LEAD_MS + MAX_SLEEP_MS });
  }

  /**
   * When the service reached a claimed schedule's pending fires, for SchedulesService.fireClaimed:
   * now, unless an instance that claimed it stopped (kill -9, a crash) before it fired them and
   * another instance took it over as soon as that lease allowed: then when that instance claimed
   * it. Its fires were held by its lease, not missed by a service that was down (SPEC section 9:
   * one job per fire instant whatever the crashes); they are created late, due at once, whatever
   * catchUp says. Not for a store served by one process (SQLite): there, its end was the service's.
   */
  private reachedAt(schedule: ClaimedSchedule, now: number): number {
    const { heldUntil } = schedule;
    if (heldUntil === null || this.deps.store.soleInstance || now - heldUntil > TAKEOVER_WITHIN_MS) return now;
    return Math.min(now, heldUntil - LEASE_MS);
  }

  start(): void {
    this.loop.start();
  }

  /** Looks at once (a schedule was created or changed on this instance), or right after the look under way. */
  wake(): void {
    this.loop.wake();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
