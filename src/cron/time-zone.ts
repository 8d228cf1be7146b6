/**
 * An IANA time zone through the runtime's own database (Intl), as a map between instants and
 * local wall-clock times. A local time is written as the epoch milliseconds it would be in UTC
 * ("local milliseconds"), so calendar arithmetic on it is plain UTC arithmetic.
 */
import { InvalidTimezoneError } from '../errors.js';

const DAY_MS = 86_400_000;

/** What a local time is on the instant line: once, twice (clocks went back) or never (skipped). */
export type LocalTimeInstants =
  | { kind: 'once'; instant: number }
  | { kind: 'twice'; first: number; second: number }
  /** `jump`: the first instant after the clocks jumped over this local time. */
  | { kind: 'skipped'; jump: number };

/**
 * Zones by lower-case name: Intl takes a zone name in any letter case, so keyed as typed, every
 * spelling of one zone (`eUrOpE/pArIs`, and its 2^n siblings) would add an entry. Only names the
 * runtime knows are kept, and never more than MAX_ZONES: the database holds about 600 zones and
 * links, so the bound is never reached by real names and only caps what a flood of odd ones costs.
 */
const zones = new Map<string, { name: string; format: Intl.DateTimeFormat }>();
export const MAX_ZONES = 1_000;

/** The zone's format and canonical name (the runtime's own, e.g. `Europe/Paris`), or null when unknown. */
function zoneFor(typed: string): { name: string; format: Intl.DateTimeFormat } | null {
  const key = typed.toLowerCase();
  const cached = zones.get(key);
  if (cached) return cached;
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: typed,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    return null;
  }
  const zone = { name: format.resolvedOptions().timeZone, format };
  if (zones.size < MAX_ZONES) zones.set(key, zone);
  return zone;
}

/** How many zones are cached (a test checks the bound). */
export const cachedZoneCount = (): number => zones.size;

export class TimeZone {
  private readonly format: Intl.DateTimeFormat;

  private constructor(readonly name: string, format: Intl.DateTimeFormat) {
    this.format = format;
  }

  /**
   * The zone, named as the runtime names it (`europe/paris` is `Europe/Paris`, a link such as
   * `US/Eastern` its zone `America/New_York`), or INVALID_TIMEZONE (data.field "timezone") when the
   * runtime does not know the name.
   */
  static named(name: string): TimeZone {
    // Intl also takes offsets such as "+01:00" on some runtimes: the contract asks for a zone name.
    const zone = /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name) ? zoneFor(name) : null;
    if (!zone) throw new InvalidTimezoneError(`timezone "${name}" is not an IANA time zone name known to this server`, { field: 'timezone' });
    return new TimeZone(zone.name, zone.format);
  }

  /** Local minus UTC at this instant, in milliseconds (whole seconds). */
  offsetAt(instant: number): number {
    const whole = Math.floor(instant / 1000) * 1000;
    const parts = this.format.formatToParts(whole);
    const get = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((part) => part.type === type)!.value);
    const local = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
    return local - whole;
  }

  /** The local milliseconds of an instant. */
  localOf(instant: number): number {
    return instant + this.offsetAt(instant);
  }

  /**
   * Where a local time falls. Assumes at most one change of offset within a day of it, which
   * holds for every zone in the database.
   */
  instantsOf(local: number): LocalTimeInstants {
    const before = this.offsetAt(local - DAY_MS);
    const after = this.offsetAt(local + DAY_MS);
    const fits = (instant: number) => this.offsetAt(instant) === local - instant;
    const early = local - before;
    const late = local - after;
    const [first, second] = [Math.min(early, late), Math.max(early, late)];
    const firstFits = fits(first);
    if (first !== second && firstFits && fits(second)) return { kind: 'twice', first, second };
    if (firstFits) return { kind: 'once', instant: first };
    if (fits(second)) return { kind: 'once', instant: second };
    // Skipped: the offset grew from `before` to `after` somewhere in (late, early]; find the
    // first instant with the new offset, to the second.
    let lo = late;
    let hi = early;
    while (hi - lo > 1000) {
      const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
      if (this.offsetAt(mid) === after) hi = mid;
      else lo = mid;
    }
    return { kind: 'skipped', jump: hi };
  }
}

