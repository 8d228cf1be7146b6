/**
 * A sub-millisecond wall clock that never disagrees with Date.now(), shared by the receiver
 * (arrival times) and the load generator of bench/compare.ts (the moment each 201 arrived), so
 * that a difference between the two processes' readings is not skewed by their clocks' rounding.
 */

/**
 * Wall-clock ms − performance.now(), to within a few µs. Date.now() is whole milliseconds, read
 * between two performance.now(): the largest Date.now() − before over many readings approaches the
 * offset from below, as long as readings cut by preemption (after − before over 20 µs) are dropped.
 */
function wallOffset(): number {
  let best = Number.NEGATIVE_INFINITY;
  const until = performance.now() + 5;
  while (performance.now() < until) {
    const before = performance.now();
    const wall = Date.now();
    if (performance.now() - before < 0.02) best = Math.max(best, wall - before);
  }
  return best;
}

export interface WallClock {
  /** Now on the wall clock, sub-millisecond, never outside the millisecond Date.now() gives. */
  now(): number;
  /** How far the anchor moved since start, ms (NTP slewing or a clock step shows here). */
  drift(): number;
  /** Readings at which the anchor had to move to agree with Date.now(). */
  adjusted(): number;
}

/** Calibrates for about 5 ms (a busy loop): call it once, at start. */
export function wallClock(): WallClock {
  const initialOffset = wallOffset();
  let offset = initialOffset;
  let adjusted = 0;
  return {
    now() {
      const precise = performance.now();
      const whole = Date.now();
      if (offset + precise < whole) {
        offset = whole - precise;
        adjusted += 1;
      } else if (offset + precise >= whole + 1) {
        offset = whole + 0.999 - precise;
        adjusted += 1;
      }
      return offset + precise;
    },
    drift: () => offset - initialOffset,
    adjusted: () => adjusted,
  };
}
