/**
 * The application clock is the clock of record: services read `now()` from here and pass it to the
 * store, which never calls Date.now() or SQL now() itself. Tests inject a TestClock.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class TestClock implements Clock {
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
