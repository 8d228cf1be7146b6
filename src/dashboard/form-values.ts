/**
 * What the dashboard's forms type, read into what the services take: numbers, JSON objects, tags,
 * durations with a unit, and dates and times in UTC. A value that cannot be read is either passed
 * on as typed (for the service to refuse in its own words) or refused here, naming its field.
 */
import { InvalidRequestError } from '../errors.js';
import { parseTimestamp } from '../timestamp.js';

/** A number typed in a form, as a number; anything else is passed on as typed, for the service to refuse with its own message. */
export function formNumber(text: string | undefined): unknown {
  const value = (text ?? '').trim();
  return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
}

/** A JSON value typed in a textarea; text that is not JSON is refused naming the field, with the parser's reason. */
export function formJson(text: string | undefined, field: string): unknown {
  try {
    return JSON.parse((text ?? '').trim() || 'null');
  } catch (error) {
    throw new InvalidRequestError(`${field} is not valid JSON (${(error as Error).message}); write an object such as {"hello": "world"}`, { field });
  }
}

/** Tags typed one `key:value` per line, as the object a body carries (checked by the service); undefined for none. */
export function formTags(text: string | undefined): Record<string, string> | undefined {
  const lines = (text ?? '').split('\n').map((line) => line.trim()).filter((line) => line !== '');
  if (lines.length === 0) return undefined;
  const tags: Record<string, string> = {};
  for (const line of lines) {
    const at = line.indexOf(':');
    if (at < 1) throw new InvalidRequestError(`tags: "${line.slice(0, 80)}" is not key:value (one tag per line, e.g. order:123)`, { field: 'tags' });
    tags[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return tags;
}

/** The units a duration field offers, largest first. */
export const DURATION_UNITS = [
  { unit: 'h', label: 'hours', ms: 3_600_000 },
  { unit: 'min', label: 'minutes', ms: 60_000 },
  { unit: 's', label: 'seconds', ms: 1_000 },
  { unit: 'ms', label: 'milliseconds', ms: 1 },
] as const;
export type DurationUnit = (typeof DURATION_UNITS)[number]['unit'];

/** A duration in ms as a form shows it: in the largest unit that says it exactly (30000 → 30 s). */
export function durationParts(ms: number): { value: string; unit: DurationUnit } {
  const unit = DURATION_UNITS.find((u) => ms !== 0 && ms % u.ms === 0) ?? DURATION_UNITS[2];
  return { value: String(ms / unit.ms), unit: unit.unit };
}

/** A duration typed as a number and a unit, in ms (whole); anything else is passed on as typed, for the service to refuse. */
export function formDuration(value: string | undefined, unit: string | undefined): unknown {
  const number = formNumber(value);
  const factor = DURATION_UNITS.find((u) => u.unit === unit)?.ms ?? 1;
  return typeof number === 'number' ? Math.round(number * factor) : number;
}

/** "2027-01-05 09:30", with or without seconds, "T" or a space between, "Z" or " UTC" after. */
const UTC_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?)?(?:\s*(?:Z|UTC))?$/i;

/**
 * A date and time typed in UTC, as the filters and the reschedule forms say ("2027-01-05 09:30",
 * a date alone for its midnight), or any RFC 3339 timestamp with its own zone: epoch ms, or null
 * when empty. Anything else is refused, naming the field and the form it takes.
 */
export function formUtcTime(value: string | undefined, field: string): number | null {
  const text = (value ?? '').trim();
  if (text === '') return null;
  const typed = UTC_DATE_TIME.exec(text);
  const ms = typed ? parseTimestamp(`${typed[1]}T${typed[2] ?? '00:00'}${typed[3] ?? ':00'}Z`) : parseTimestamp(text);
  if (ms === null) {
    throw new InvalidRequestError(`${field} must be a date and time in UTC, such as 2027-01-05 09:30 (or a date alone, or a timestamp with its zone)`, { field });
  }
  return ms;
}

/** A time as the UTC fields show it and take it back: "2027-01-05 09:30" (seconds when it has any). */
export function utcFieldValue(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.endsWith(':00.000Z') ? iso.slice(0, 16).replace('T', ' ') : iso.slice(0, 19).replace('T', ' ');
}
