/**
 * Reading a schedule from a request (SPEC section 9): each field checked with the contract's
 * error code, the cron expression parsed in its zone and refused when it never fires.
 */
import { parseCron, type CronExpression } from '../../cron/cron-expression.js';
import { nextFireAfter } from '../../cron/fire-times.js';
import { TimeZone } from '../../cron/time-zone.js';
import { InvalidCronError, InvalidRequestError } from '../../errors.js';
import { CATCH_UP_MODES, OVERLAP_MODES, type ScheduleSettings } from '../../store/schedule-store.js';
import { fieldSet, JOB_FIELD_ALIASES, refuseNearMisses } from './known-fields.js';
import { readTags } from './tags-input.js';
import { isPlainObject, readKey, readMaxRetries, readPayload } from './validate-job-input.js';

export const SCHEDULE_NAME_MAX = 200;

/**
 * The fields of a schedule body, POST and PATCH (SPEC section 9): a near miss of one is refused as a
 * dispatch's is. `tz` sent for timezone would otherwise leave the schedule firing in UTC.
 */
export const SCHEDULE_FIELDS = fieldSet(['cron', 'timezone', 'payload', 'maxRetries', 'name', 'catchUp', 'overlap', 'paused', 'tags', 'concurrencyKey'], {
  ...JOB_FIELD_ALIASES,
  tz: 'timezone',
  zone: 'timezone',
});
const CRON_MAX = 200;

/** What a schedule's cron and timezone must be; the error handler says the same of a schema's type check. */
export const CRON_RULES = {
  cron: () => `cron must be a string of at most ${CRON_MAX} characters, such as "30 2 * * *"`,
  timezone: () => 'timezone must be a string (an IANA zone name such as "Europe/Paris")',
} as const;

/** A schedule's expression and zone, both checked. */
export interface CronInZone {
  expr: CronExpression;
  zone: TimeZone;
}

/**
 * Parses both, or INVALID_CRON / INVALID_TIMEZONE; an expression with no fire after `now` is
 * INVALID_CRON. With the first fire after `now`.
 */
export function readCronInZone(cron: unknown, timezone: unknown, now: number): CronInZone & { firstFire: number } {
  if (typeof cron !== 'string' || cron.length > CRON_MAX) {
    throw new InvalidCronError(CRON_RULES.cron(), { field: 'cron' });
  }
  const expr = parseCron(cron);
  if (timezone !== undefined && typeof timezone !== 'string') throw timezoneNotString();
  const zone = TimeZone.named((timezone as string | undefined) ?? 'UTC');
  const firstFire = nextFireAfter(expr, zone, now);
  if (firstFire === null) throw new InvalidCronError(`cron "${cron}" never fires`, { field: 'cron' });
  return { expr, zone, firstFire };
}

function timezoneNotString() {
  return new InvalidRequestError(CRON_RULES.timezone(), { field: 'timezone' });
}

function readEnum<T extends string>(body: Record<string, unknown>, field: string, allowed: readonly T[]): T | undefined {
  if (!(field in body)) return undefined;
  const value = body[field];
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new InvalidRequestError(`${field} must be one of ${allowed.join(', ')}`, { field });
  }
  return value as T;
}

function readName(body: Record<string, unknown>): string | null | undefined {
  if (!('name' in body)) return undefined;
  const name = body.name;
  if (name === null) return null;
  if (typeof name !== 'string' || name.length > SCHEDULE_NAME_MAX) {
    throw new InvalidRequestError(`name must be a string of at most ${SCHEDULE_NAME_MAX} characters, or null`, { field: 'name' });
  }
  return name;
}

function readPaused(body: Record<string, unknown>): boolean | undefined {
  if (!('paused' in body)) return undefined;
  if (typeof body.paused !== 'boolean') throw new InvalidRequestError('paused must be true or false', { field: 'paused' });
  return body.paused;
}

/** maxRetries: an integer >= 0, or null (as an enqueue without it). */
function readScheduleMaxRetries(body: Record<string, unknown>): number | null | undefined {
  if (!('maxRetries' in body)) return undefined;
  return body.maxRetries === null ? null : readMaxRetries(body);
}

/** POST /api/schedules: every field, with the defaults of the contract. */
export function readNewSchedule(body: unknown, now: number): { settings: ScheduleSettings; firstFire: number } {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object');
  refuseNearMisses(body, SCHEDULE_FIELDS, 'a schedule');
  const cron = readCronInZone(body.cron, body.timezone, now);
  const settings: ScheduleSettings = {
    cron: body.cron as string,
    timezone: cron.zone.name,
    payload: readPayload(body),
    maxRetries: readScheduleMaxRetries(body) ?? null,
    name: readName(body) ?? null,
    catchUp: readEnum(body, 'catchUp', CATCH_UP_MODES) ?? 'latest',
    overlap: readEnum(body, 'overlap', OVERLAP_MODES) ?? 'allow',
    paused: false,
    tags: readTags(body) ?? null,
    concurrencyKey: readKey(body, 'concurrencyKey') ?? null,
  };
  return { settings, firstFire: cron.firstFire };
}

/** PATCH /api/schedules/:id: the fields given, over the schedule's. */
export function readSchedulePatch(body: unknown, current: ScheduleSettings, now: number): { settings: ScheduleSettings; firstFire: number } {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object');
  refuseNearMisses(body, SCHEDULE_FIELDS, 'a schedule');
  const cronText = 'cron' in body ? body.cron : current.cron;
  const timezone = 'timezone' in body ? body.timezone : current.timezone;
  const cron = readCronInZone(cronText, timezone, now);
  const settings: ScheduleSettings = {
    cron: cronText as string,
    timezone: cron.zone.name,
    payload: 'payload' in body ? readPayload(body) : current.payload,
    maxRetries: readScheduleMaxRetries(body) ?? ('maxRetries' in body ? null : current.maxRetries),
    name: readName(body) ?? ('name' in body ? null : current.name),
    catchUp: readEnum(body, 'catchUp', CATCH_UP_MODES) ?? current.catchUp,
    overlap: readEnum(body, 'overlap', OVERLAP_MODES) ?? current.overlap,
    paused: readPaused(body) ?? current.paused,
    // Given, they replace the schedule's tags ({} for none) for the jobs it creates from now on.
    tags: 'tags' in body ? (readTags(body) ?? null) : current.tags,
    // Given, it replaces the schedule's key (null for none) for the jobs it creates from now on.
    concurrencyKey: 'concurrencyKey' in body ? (readKey(body, 'concurrencyKey') ?? null) : current.concurrencyKey,
  };
  return { settings, firstFire: cron.firstFire };
}
