/**
 * The application clock is the clock of record: services read `now()` from here and pass it to the
 * store, which never calls Date.now() or SQL now() itself. Tests inject a TestClock.
 */
export interface Clock {
  now(): number;
  /**
   * True for a clock that moves only when told (TestClock): its times do not map onto the wall
   * clock, so whatever waits for one of them waits on this clock, not on a wall-clock timer.
   */
  readonly manual?: boolean;
}

export const systemClock: Clock = { now: () => Date.now() };

export class TestClock implements Clock {
  readonly manual = true;
  constructor(private current: number = Date.parse('2027-01-01T00:00:00.000Z')) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
