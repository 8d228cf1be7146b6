/**
 * When a schedule fires, by SPEC.md section 9's daylight-saving rules:
 *  - fire times are local wall-clock times in the schedule's zone;
 *  - an expression whose hour field is not `*` (wallClock) fires a local time skipped by a jump
 *    forward once, at the first instant after the jump (02:30 on a night that goes 02:00→03:00
 *    fires at 03:00), and a local time that occurs twice only at its first occurrence;
 *  - an expression whose hour field is `*` fires at every real instant whose local time matches:
 *    both occurrences of a repeated hour, nothing in a skipped one.
 * croner 11 fires `0 0,30 2 * * *` on no instant of a spring-forward night and `0 * 1 * * *`
 * twice through a repeated hour; cron-parser 5 fires 02:30 at 03:30: hence this module.
 */
import type { CronExpression } from './cron-expression.js';
import type { TimeZone } from './time-zone.js';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

/**
 * How far ahead a fire is looked for before the expression is taken to never fire. The longest
 * real gap is February 29 between two leap years across a century (8 years).
 */
export const SEARCH_YEARS = 30;

function dayMatches(expr: CronExpression, date: Date): boolean {
  const dom = expr.daysOfMonth[date.getUTCDate()]!;
  const dow = expr.daysOfWeek[date.getUTCDay()]!;
  return expr.eitherDay ? dom || dow : dom && dow;
}

/** The first local time strictly after `local` (local milliseconds) that the fields match, or null within SEARCH_YEARS. */
export function nextLocalMatch(expr: CronExpression, local: number): number | null {
  const d = new Date(Math.floor(local / SECOND_MS) * SECOND_MS + SECOND_MS);
  const limit = local + SEARCH_YEARS * 366 * DAY_MS;
  while (d.getTime() <= limit) {
    if (!expr.months[d.getUTCMonth() + 1]) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(expr, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!expr.hours[d.getUTCHours()]) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0, 0);
    } else if (!expr.minutes[d.getUTCMinutes()]) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0, 0);
    } else if (!expr.seconds[d.getUTCSeconds()]) {
      d.setUTCSeconds(d.getUTCSeconds() + 1, 0);
    } else {
      return d.getTime();
    }
  }
  return null;
}

/**
 * The first fire strictly after the instant `after`, or null if the expression never fires again.
 * Wall-clock expressions walk local times and place each on the instant line; the others walk
 * the instant line one offset at a time, so that a repeated hour's second pass is walked too.
 */
export function nextFireAfter(expr: CronExpression, zone: TimeZone, after: number): number | null {
  return expr.wallClock ? nextWallClockFire(expr, zone, after) : nextRealFire(expr, zone, after);
}

function nextWallClockFire(expr: CronExpression, zone: TimeZone, after: number): number | null {
  let local = zone.localOf(after);
  for (;;) {
    const next = nextLocalMatch(expr, local);
    if (next === null) return null;
    const at = zone.instantsOf(next);
    // A repeated time fires at its first occurrence only, which is already past when `after`
    // lies in the second pass: walk on.
    const instant = at.kind === 'once' ? at.instant : at.kind === 'twice' ? at.first : at.jump;
    if (instant > after) return instant;
    local = next;
  }
}

function nextRealFire(expr: CronExpression, zone: TimeZone, after: number): number | null {
  let from = Math.floor(after / SECOND_MS) * SECOND_MS + SECOND_MS;
  for (;;) {
    const offset = zone.offsetAt(from);
    const local = nextLocalMatch(expr, from + offset - SECOND_MS);
    if (local === null) return null;
    const instant = local - offset;
    if (zone.offsetAt(instant) === offset) return instant;
    // The offset changes before that instant: go on from the change, with the new offset.
    let lo = from;
    let hi = instant;
    while (hi - lo > SECOND_MS) {
      const mid = lo + Math.floor((hi - lo) / (2 * SECOND_MS)) * SECOND_MS;
      if (zone.offsetAt(mid) === offset) lo = mid;
      else hi = mid;
    }
    from = hi;
  }
}

/** The next `count` fires strictly after `after`, fewer if the expression stops firing. */
export function nextFires(expr: CronExpression, zone: TimeZone, after: number, count: number): number[] {
  const fires: number[] = [];
  let from = after;
  while (fires.length < count) {
    const next = nextFireAfter(expr, zone, from);
    if (next === null) break;
    fires.push(next);
    from = next;
  }
  return fires;
}
