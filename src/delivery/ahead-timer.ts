import type { Clock } from '../clock.js';
import type { StartQueue } from './start-queue.js';

/**
 * A job claimed ahead of its time starts this long before it: its STARTED commit (about 1 ms on
 * SQLite, a few on a busy PostgreSQL) then happens before the due time instead of delaying the
 * request, which deliverAttempt still sends no earlier than the due time. Below the claim loop's
 * claim lookahead (25 ms), so jobs are claimed early enough for it.
 */
export const START_AHEAD_MS = 10;
/**
 * When held jobs are released, those due within this much after the first go too: their starts
 * share one commit instead of one each (jobs due 2 ms apart), and each still waits for its own time.
 */
const START_BATCH_MS = 5;

/**
 * One timer for the jobs a worker holds ahead of their time (StartQueue): set for the earliest,
 * START_AHEAD_MS before it, it moves what is due by then to the due queues and says which projects
 * have jobs to start.
 */
export class AheadTimer {
  private timer: NodeJS.Timeout | null = null;
  private at = Number.POSITIVE_INFINITY;

  constructor(
    private readonly queue: StartQueue,
    private readonly clock: Clock,
    private readonly onDue: (projectId: string) => void,
  ) {}

  /** Sets the timer for the earliest job held ahead, if sooner than it is set for. */
  arm(): void {
    const next = this.queue.nextAheadAt();
    if (next === null || next >= this.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = next;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next - START_AHEAD_MS - this.clock.now()));
  }

  private fire(): void {
    const at = this.at;
    this.timer = null;
    this.at = Number.POSITIVE_INFINITY;
    const now = this.clock.now();
    // Timers run on a monotonic clock and may fire a hair before the application clock says so.
    if (now < at - START_AHEAD_MS) {
      this.at = at;
      this.timer = setTimeout(() => this.fire(), at - START_AHEAD_MS - now);
      return;
    }
    for (const projectId of this.queue.releaseAhead(Math.max(at, now + START_AHEAD_MS) + START_BATCH_MS)) this.onDue(projectId);
    this.arm();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.at = Number.POSITIVE_INFINITY;
  }
}
