import type { Clock } from '../../src/clock.js';

/**
 * Real time plus an offset that a test moves forward: everything runs on real timers (a receiver,
 * threads, the database), and `advance` stands for a long wait (a retry an hour away, a lease
 * running out) without spending it. Never moves backward.
 */
export class OffsetClock implements Clock {
  private offset: number;

  constructor(start: number = Date.parse('2027-01-01T00:00:00.000Z')) {
    this.offset = start - Date.now();
  }

  now(): number {
    return Date.now() + this.offset;
  }

  advance(ms: number): void {
    this.offset += ms;
  }
}
