/**
 * Reading a bulk action (SPEC section 14, `POST /api/jobs/bulk`) and bulk replay's body (SPEC
 * section 2, `POST /api/jobs/retry`). A bulk action changes many jobs at once, so its body is
 * strict where a dispatch is lenient: an unknown field is INVALID_REQUEST naming it, because a
 * misspelt one would otherwise be dropped and the action run wider than meant (`"tag"` for `"tags"`
 * widens the filter; `"dry_run"` runs it for real). An empty filter is refused for the same reason.
 */
import { InvalidRequestError, InvalidScheduleError } from '../../errors.js';
import type { JobBulkAction, JobStatus, JobTagPair } from '../../store/store.js';
import { fieldSet, refuseNearMisses, refuseUnknownFields } from './known-fields.js';
import { readTimestampParam } from './list-query.js';
import { readFilterTags } from './tags-input.js';
import { isPlainObject, readSchedule } from './validate-job-input.js';
import { JOB_STATUSES } from '../../store/store.js';

export const BULK_ACTIONS = ['cancel', 'reschedule', 'retry'] as const;
/** SPEC section 14: limit 1..10,000, default 1,000 (bulk replay's too, SPEC section 2). */
export const BULK_DEFAULT_LIMIT = 1_000;
export const BULK_MAX_LIMIT = 10_000;

/** The one filter as a bulk action takes it (job-store.ts, JobFilter), plus bulk replay's failure window. */
export interface BulkFilter {
  status: JobStatus | null;
  tags: JobTagPair[];
  scheduleId: string | null;
  /** Only the jobs of this concurrencyKey (SPEC section 15). */
  concurrencyKey?: string | null;
  createdFrom: number | null;
  createdBefore: number | null;
  dueFrom: number | null;
  dueBefore: number | null;
  /** Bulk replay only (POST /api/jobs/retry): FAILED jobs that failed in [failedFrom, failedBefore). */
  failedFrom?: number | null;
  failedBefore?: number | null;
}

export interface BulkRequest {
  action: JobBulkAction;
  filter: BulkFilter;
  dryRun: boolean;
  limit: number;
}

const BODY_FIELDS = fieldSet(['action', 'filter', 'scheduledFor', 'scheduleFor', 'dryRun', 'limit']);
export const FILTER_FIELDS = ['status', 'tags', 'scheduleId', 'concurrencyKey', 'createdAfter', 'createdBefore', 'dueAfter', 'dueBefore'] as const;
const FILTER_FIELD_SET = fieldSet(FILTER_FIELDS);
/** Bulk replay's body: a near miss is refused (`failed_after` dropped would replay every failure). */
const REPLAY_FIELDS = fieldSet(['status', 'failedAfter', 'failedBefore', 'limit']);

/** Whether the filter names anything: a bulk action is never "every job" by accident. */
export const filterIsEmpty = (filter: BulkFilter): boolean =>
  filter.status === null && filter.tags.length === 0 && filter.scheduleId === null && filter.concurrencyKey == null && filter.createdFrom === null && filter.createdBefore === null &&
  filter.dueFrom === null && filter.dueBefore === null && filter.failedFrom == null && filter.failedBefore == null;

/** A filter object (a bulk body's `filter`), each field checked; null stands for a field not given. */
export function readBulkFilter(value: unknown): BulkFilter {
  if (!isPlainObject(value)) throw new InvalidRequestError('filter must be a JSON object, such as {"tags": {"order": "123"}}', { field: 'filter' });
  refuseUnknownFields(value, FILTER_FIELD_SET, 'a bulk action', 'filter.');
  const { status, tags, scheduleId, concurrencyKey } = value;
  if (status != null && !JOB_STATUSES.includes(status as JobStatus)) {
    throw new InvalidRequestError(`filter.status must be one of ${JOB_STATUSES.join(', ')}`, { field: 'filter.status' });
  }
  if (scheduleId != null && (typeof scheduleId !== 'string' || scheduleId === '')) {
    throw new InvalidRequestError('filter.scheduleId must be a schedule id (a string)', { field: 'filter.scheduleId' });
  }
  if (concurrencyKey != null && (typeof concurrencyKey !== 'string' || concurrencyKey === '')) {
    throw new InvalidRequestError('filter.concurrencyKey must be a concurrencyKey (a string)', { field: 'filter.concurrencyKey' });
  }
  return {
    status: (status as JobStatus | null | undefined) ?? null,
    tags: tags == null ? [] : readFilterTags(tags),
    scheduleId: (scheduleId as string | null | undefined) ?? null,
    concurrencyKey: (concurrencyKey as string | null | undefined) ?? null,
    createdFrom: readTimestampParam(value.createdAfter, 'filter.createdAfter'),
    createdBefore: readTimestampParam(value.createdBefore, 'filter.createdBefore'),
    dueFrom: readTimestampParam(value.dueAfter, 'filter.dueAfter'),
    dueBefore: readTimestampParam(value.dueBefore, 'filter.dueBefore'),
  };
}

function readLimit(body: Record<string, unknown>): number {
  const limit = body.limit === undefined ? BULK_DEFAULT_LIMIT : body.limit;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > BULK_MAX_LIMIT) {
    throw new InvalidRequestError(`limit must be an integer from 1 to ${BULK_MAX_LIMIT}`, { field: 'limit' });
  }
  return limit;
}

/** `POST /api/jobs/bulk`'s body (SPEC section 14); `receivedAt` bounds a reschedule's time as a dispatch's. */
export function readBulkRequest(body: unknown, receivedAt: number): BulkRequest {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object: {"action": ..., "filter": {...}}');
  refuseUnknownFields(body, BODY_FIELDS, 'a bulk action');
  if (!BULK_ACTIONS.includes(body.action as (typeof BULK_ACTIONS)[number])) {
    throw new InvalidRequestError(`action must be one of ${BULK_ACTIONS.join(', ')}`, { field: 'action' });
  }
  if (body.filter === undefined) throw new InvalidRequestError('filter is required: a bulk action applies to the jobs it matches', { field: 'filter' });
  const filter = readBulkFilter(body.filter);
  if (filterIsEmpty(filter)) {
    throw new InvalidRequestError(`filter must name at least one of ${FILTER_FIELDS.join(', ')}: a bulk action never applies to every job`, { field: 'filter' });
  }
  const schedule = readSchedule(body, receivedAt);
  let action: JobBulkAction;
  if (body.action === 'reschedule') {
    if (!schedule) throw new InvalidScheduleError('scheduledFor is required with reschedule (null means "run at once")', { field: 'scheduledFor' });
    action = { kind: 'reschedule', scheduledFor: schedule.value };
  } else {
    if (schedule) throw new InvalidRequestError(`${schedule.field} goes only with the reschedule action`, { field: schedule.field });
    action = { kind: body.action as 'cancel' | 'retry' };
  }
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw new InvalidRequestError('dryRun must be true or false', { field: 'dryRun' });
  return { action, filter, dryRun: body.dryRun === true, limit: readLimit(body) };
}

/**
 * Bulk replay's body (`POST /api/jobs/retry`, SPEC section 2): `{"status": "FAILED", "failedAfter"?,
 * "failedBefore"?, "limit"?}`, read as the bulk retry of that failure window.
 */
export function readReplayRequest(body: unknown): BulkRequest {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object: {"status": "FAILED", ...}');
  refuseNearMisses(body, REPLAY_FIELDS, 'a bulk replay');
  if (body.status !== 'FAILED') throw new InvalidRequestError('status must be "FAILED": only failed jobs can be replayed', { field: 'status' });
  const filter: BulkFilter = {
    status: 'FAILED',
    tags: [],
    scheduleId: null,
    createdFrom: null,
    createdBefore: null,
    dueFrom: null,
    dueBefore: null,
    // Always a window (all time when none is given), so that it is read oldest failure first.
    failedFrom: readTimestampParam(body.failedAfter, 'failedAfter') ?? 0,
    failedBefore: readTimestampParam(body.failedBefore, 'failedBefore') ?? Number.MAX_SAFE_INTEGER,
  };
  return { action: { kind: 'retry' }, filter, dryRun: false, limit: readLimit(body) };
}
