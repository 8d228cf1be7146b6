/**
 * The query of a cursor-paginated list (`GET /api/jobs`, `GET /api/schedules`): each parameter
 * given at most once, `limit` 1..max, and an opaque cursor, base64url of the last row's insertion
 * sequence (for jobs by creation window or schedule, of its creation time and insertion sequence).
 */
import { InvalidRequestError } from '../../errors.js';
import { parseTimestamp } from '../../timestamp.js';

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 100;

export const encodeSeqCursor = (seq: number): string => Buffer.from(`s${seq}`).toString('base64url');

/** The sequence a cursor this server gave stands for, else null. */
export function decodeSeqCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^s[1-9]\d{0,15}$/.test(text) || encodeSeqCursor(Number(text.slice(1))) !== cursor) return null;
  return Number(text.slice(1));
}

/** The cursor of a jobs list by creation window or schedule (ordered by both): the last job's creation time and sequence. */
export const encodeJobCursor = (job: { createdAt: number; seq: number }): string => Buffer.from(`c${job.createdAt}s${job.seq}`).toString('base64url');

/**
 * A page from rows read with limit + 1 (newest first): the first `limit`, and the cursor of the
 * last one when the extra row shows that more follow.
 */
export function pageOf<R extends { seq: number }>(
  rows: R[],
  limit: number,
  cursorOf: (row: R) => string = (row) => encodeSeqCursor(row.seq),
): { page: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { page, nextCursor: rows.length > limit ? cursorOf(page[page.length - 1]!) : null };
}

/** The cursor's sequence, or INVALID_REQUEST on the cursor field. */
export function readSeqCursor(cursor: string): number {
  const seq = decodeSeqCursor(cursor);
  if (seq === null) throw new InvalidRequestError('cursor is not one this API returned', { field: 'cursor' });
  return seq;
}

/**
 * A jobs list's cursor: its job's seq, and its creation time when it is one of a list by creation
 * window or schedule (null for a cursor of seq alone). Anything else is INVALID_REQUEST.
 */
export function readJobCursor(cursor: string): { seq: number; createdAt: number | null } {
  const match = /^c(0|[1-9]\d{0,15})s([1-9]\d{0,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (match) {
    const job = { createdAt: Number(match[1]), seq: Number(match[2]) };
    if (encodeJobCursor(job) === cursor) return job;
  }
  return { seq: readSeqCursor(cursor), createdAt: null };
}

/** These query parameters as strings; one given twice (an array) is INVALID_REQUEST. */
export function singleValues<K extends string>(query: Record<string, unknown>, names: readonly K[]): Partial<Record<K, string>> {
  const values: Partial<Record<K, string>> = {};
  for (const name of names) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new InvalidRequestError(`${name} may be given once`, { field: name });
    values[name] = value;
  }
  return values;
}

/** A timestamp (RFC 3339, SPEC section 2) of a query or a body as epoch ms, absent or null as null; anything else is INVALID_REQUEST. */
export function readTimestampParam(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  const ms = typeof value === 'string' ? parseTimestamp(value) : null;
  if (ms === null) throw new InvalidRequestError(`${field} must be an RFC 3339 timestamp with a zone, e.g. 2027-01-05T09:30:00Z`, { field });
  return ms;
}

/** `limit` as given, else the default; outside 1..LIST_MAX_LIMIT is INVALID_REQUEST. */
export function readListLimit(text: string | undefined): number {
  if (text === undefined) return LIST_DEFAULT_LIMIT;
  const limit = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(limit >= 1 && limit <= LIST_MAX_LIMIT)) throw new InvalidRequestError(`limit must be an integer from 1 to ${LIST_MAX_LIMIT}`, { field: 'limit' });
  return limit;
}
