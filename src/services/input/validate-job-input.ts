import {
  InvalidMaxRetriesError,
  InvalidPayloadError,
  InvalidRequestError,
  InvalidScheduleError,
  PayloadTooLargeError,
} from '../../errors.js';
import { parseTimestamp } from '../../timestamp.js';
import { fieldSet, JOB_FIELD_ALIASES, refuseNearMisses } from './known-fields.js';
import { readTags } from './tags-input.js';

const PAYLOAD_LIMIT_BYTES = 10_240;
/** 366 × 86,400,000 ms after the moment the request was received, inclusive. */
const MAX_SCHEDULE_AHEAD_MS = 366 * 86_400_000;

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The fields of a dispatch body and of a batch item (SPEC sections 2, 14 and 15): a near miss of one is refused. */
export const DISPATCH_FIELDS = fieldSet(
  ['payload', 'scheduledFor', 'scheduleFor', 'maxRetries', 'tags', 'concurrencyKey', 'debounceKey', 'debounceMs', 'maxWaitMs'],
  JOB_FIELD_ALIASES,
);
/** SPEC section 15: a debounce's window, and its longest wait (366 days, as scheduledFor's reach). */
export const DEBOUNCE_MS_RANGE = [1_000, 86_400_000] as const;
const MAX_WAIT_MS_MAX = MAX_SCHEDULE_AHEAD_MS;
/** The body of PATCH /api/jobs/:jobId. */
export const RESCHEDULE_FIELDS = fieldSet(['scheduledFor', 'scheduleFor'], JOB_FIELD_ALIASES);

/**
 * The sentences that say what a job field must be: the readers below throw them, and the error
 * handler gives them for a route schema's type check of the same field, so a mistake reads the
 * same wherever it is made.
 */
export const FIELD_RULES = {
  payload: () => 'payload must be a JSON object (not an array, string, number, boolean or null)',
  schedule: (field: string) => `${field} must be an RFC 3339 timestamp string with a time zone, such as 2027-01-05T09:30:00Z, or null to run at once`,
  maxRetries: () => 'maxRetries must be an integer >= 0 (a number, not a string)',
} as const;

/**
 * Reads scheduledFor or its alias scheduleFor. `undefined` when neither is present.
 * Errors name the field as the client sent it.
 */
export function readSchedule(body: Record<string, unknown>, receivedAt: number): { value: number | null; field: string } | undefined {
  const hasLong = 'scheduledFor' in body;
  const hasShort = 'scheduleFor' in body;
  if (hasLong && hasShort) {
    throw new InvalidRequestError('Send scheduledFor or scheduleFor, not both', { field: 'scheduledFor' });
  }
  if (!hasLong && !hasShort) return undefined;
  const field = hasLong ? 'scheduledFor' : 'scheduleFor';
  const raw = body[field];
  if (raw === null) return { value: null, field };
  if (typeof raw !== 'string') throw new InvalidScheduleError(FIELD_RULES.schedule(field), { field });
  const value = parseTimestamp(raw);
  if (value === null) {
    throw new InvalidScheduleError(
      `${field} must be an RFC 3339 date-time with a time zone, such as 2027-01-05T09:30:00Z`,
      { field },
    );
  }
  if (value - receivedAt > MAX_SCHEDULE_AHEAD_MS) {
    throw new InvalidScheduleError(`${field} must be at most 366 days ahead`, { field });
  }
  return { value, field };
}

export interface EnqueueInput {
  payload: string;
  scheduledFor: number | null;
  /** As asked; null when the request did not say. */
  maxRetries: number | null;
  /** As stored (tags-input.ts); absent for none. */
  tags?: string;
  /** SPEC section 15; absent for none. */
  concurrencyKey?: string;
  /** SPEC section 15: a dispatch with a debounceKey; absent for none. */
  debounce?: { key: string; debounceMs: number; maxWaitMs: number | null };
}

/**
 * Validates one body of POST /api/jobs/dispatch (SPEC section 2); the batch endpoint calls it per
 * item, where a debounce is refused (`single` false: SPEC section 15 debounces dispatches).
 */
export function validateEnqueueInput(body: unknown, receivedAt: number, single = true): EnqueueInput {
  if (!isPlainObject(body)) throw new InvalidRequestError('A dispatch must be a JSON object, such as {"payload": {"hello": "world"}}');
  refuseNearMisses(body, DISPATCH_FIELDS, 'a dispatch');
  // Alias conflicts are an envelope error, reported before any field.
  const schedule = readSchedule(body, receivedAt);
  const input: EnqueueInput = { payload: readPayload(body), scheduledFor: schedule?.value ?? null, maxRetries: readMaxRetries(body) };
  const tags = readTags(body);
  if (tags !== undefined) input.tags = tags;
  const concurrencyKey = readKey(body, 'concurrencyKey');
  if (concurrencyKey !== undefined) input.concurrencyKey = concurrencyKey;
  const debounce = readDebounce(body, schedule?.field ?? null, single);
  if (debounce !== undefined) input.debounce = debounce;
  return input;
}

/** debounceKey with debounceMs and maxWaitMs (SPEC section 15); undefined when none is given. */
function readDebounce(body: Record<string, unknown>, scheduleField: string | null, single: boolean): EnqueueInput['debounce'] {
  const key = readKey(body, 'debounceKey');
  if (key === undefined) {
    for (const field of ['debounceMs', 'maxWaitMs']) {
      if (body[field] !== undefined && body[field] !== null) throw new InvalidRequestError(`${field} goes with a debounceKey`, { field });
    }
    return undefined;
  }
  if (!single) throw new InvalidRequestError('debounceKey is taken by POST /api/jobs/dispatch, not by batch items', { field: 'debounceKey' });
  if (scheduleField !== null && body[scheduleField] !== null) {
    throw new InvalidRequestError(`${scheduleField} is not allowed with debounceKey: the job is due debounceMs after the last dispatch`, { field: scheduleField });
  }
  const [min, max] = DEBOUNCE_MS_RANGE;
  const debounceMs = body.debounceMs;
  if (typeof debounceMs !== 'number' || !Number.isInteger(debounceMs) || debounceMs < min || debounceMs > max) {
    throw new InvalidRequestError(`debounceMs is required with debounceKey: an integer from ${min} to ${max}`, { field: 'debounceMs' });
  }
  const maxWaitMs = body.maxWaitMs ?? null;
  if (maxWaitMs !== null && (typeof maxWaitMs !== 'number' || !Number.isInteger(maxWaitMs) || maxWaitMs < debounceMs || maxWaitMs > MAX_WAIT_MS_MAX)) {
    throw new InvalidRequestError(`maxWaitMs must be an integer from debounceMs (${debounceMs}) to ${MAX_WAIT_MS_MAX} (366 days)`, { field: 'maxWaitMs' });
  }
  return { key, debounceMs, maxWaitMs };
}

/** A key's characters (SPEC section 15): 1 to 128 printable ASCII. */
const KEY_PATTERN = /^[\x20-\x7e]{1,128}$/;

/** A concurrencyKey (or, the same characters, a debounceKey) as given; undefined when absent (null is absent too). */
export function readKey(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
    throw new InvalidRequestError(`${field} must be a string of 1 to 128 printable ASCII characters`, { field });
  }
  return value;
}

/** The payload as stored (SPEC section 2): a JSON object of at most 10,240 bytes as JSON. */
export function readPayload(body: Record<string, unknown>): string {
  if (!('payload' in body)) {
    throw new InvalidPayloadError('payload is required: a JSON object, such as {"payload": {"hello": "world"}}', { field: 'payload' });
  }
  if (!isPlainObject(body.payload)) throw new InvalidPayloadError(FIELD_RULES.payload(), { field: 'payload' });
  const payload = JSON.stringify(body.payload);
  const size = Buffer.byteLength(payload, 'utf8');
  if (size > PAYLOAD_LIMIT_BYTES) {
    throw new PayloadTooLargeError(`payload is ${size} bytes as JSON; the limit is ${PAYLOAD_LIMIT_BYTES}`, {
      field: 'payload',
      limit: PAYLOAD_LIMIT_BYTES,
      size,
    });
  }
  return payload;
}

/** maxRetries as asked; null when the body does not say. */
export function readMaxRetries(body: Record<string, unknown>): number | null {
  if (!('maxRetries' in body)) return null;
  const value = body.maxRetries;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new InvalidMaxRetriesError(FIELD_RULES.maxRetries(), { field: 'maxRetries' });
  }
  return value;
}

/** Idempotency-Key: 1 to 255 printable ASCII characters. */
export function validateIdempotencyKey(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (Array.isArray(header) || !/^[\x20-\x7e]{1,255}$/.test(header)) {
    throw new InvalidRequestError('Idempotency-Key must be 1 to 255 printable ASCII characters', { field: 'Idempotency-Key' });
  }
  return header;
}
