import type { Clock } from '../clock.js';
import type { Capacity } from './capacity.js';

/**
 * The timers that end projects' holds (a receiver's Retry-After, the rate's next token): the hold
 * is the capacity model's (Capacity.holdBack), its end is timed here, one timer per project.
 */
export class HoldTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly capacity: Capacity,
    private readonly clock: Clock,
    /** The hold ended: the project's waiting jobs may start. */
    private readonly onEnd: (projectId: string) => void,
  ) {}

  /** The project's next attempt waits until `until`; a later hold wins. */
  hold(projectId: string, until: number): void {
    if (!this.capacity.holdBack(projectId, until)) return;
    clearTimeout(this.timers.get(projectId));
    const timer = setTimeout(() => {
      this.timers.delete(projectId);
      this.capacity.endHold(projectId, until, this.clock.now());
      this.onEnd(projectId);
    }, Math.max(0, until - this.clock.now()));
    this.timers.set(projectId, timer);
  }

  stop(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }
}
