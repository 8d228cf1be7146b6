/**
 * JSON schemas of the HTTP API. They validate requests (types only; no coercion, so "3" is not an
 * integer), serialise answers and produce /openapi.json. Rules a schema cannot say (timestamps,
 * payload bytes, alias conflicts) live in services/input/validate-job-input.ts.
 */
import { BULK_ACTIONS, BULK_DEFAULT_LIMIT, BULK_MAX_LIMIT } from '../services/input/bulk-input.js';
import { TAGS_MAX, TAG_VALUE_MAX } from '../services/input/tags-input.js';
import { JOB_STATUSES } from '../store/store.js';

const timestamp = { type: 'string', format: 'date-time' } as const;
const nullableTimestamp = { type: ['string', 'null'], format: 'date-time' } as const;
const scheduleField = {
  type: ['string', 'null'],
  description: 'RFC 3339 date-time with a zone; null or absent: at once; at most 366 days ahead',
} as const;

/**
 * Tags as a request gives them (SPEC section 14). Only the type is checked here (a failure is
 * INVALID_TAGS, error-handler.ts); keys, values and their number are checked by
 * services/input/tags-input.ts, with sentences that say what to fix.
 */
const tagsField = {
  type: 'object',
  additionalProperties: true,
  description: `Tags: an object of at most ${TAGS_MAX} entries, keys of 1 to 64 characters [A-Za-z0-9_.:-], values strings of 1 to ${TAG_VALUE_MAX} characters; returned in the status body and in deliveries. INVALID_TAGS otherwise.`,
  examples: [{ order: '123', customer: 'cus_42' }],
} as const;
/** Tags as an answer shows them: {} for none. */
const tagsAnswer = { type: 'object', additionalProperties: { type: 'string' } } as const;

const errorSchema = {
  type: 'object',
  properties: {
    error: { type: 'string' },
    data: { type: 'object', properties: { message: { type: 'string' }, field: { type: 'string' } }, additionalProperties: true },
  },
} as const;

export const dispatchBody = {
  type: 'object',
  required: ['payload'],
  properties: {
    payload: { type: 'object', additionalProperties: true, description: 'Any JSON object, at most 10,240 bytes as JSON' },
    scheduledFor: scheduleField,
    scheduleFor: { ...scheduleField, description: 'Alias of scheduledFor' },
    maxRetries: { type: 'integer', minimum: 0, description: 'Capped by the plan (at most 3)' },
    tags: tagsField,
  },
} as const;

export const dispatchAnswer = {
  type: 'object',
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string' },
    scheduledFor: nullableTimestamp,
    maxRetries: { type: 'integer' },
  },
} as const;

export const jobStatus = {
  type: 'object',
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string', enum: JOB_STATUSES },
    scheduledFor: nullableTimestamp,
    maxRetries: { type: 'integer' },
    attemptCount: { type: 'integer' },
    nextAttemptAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
    completedAt: timestamp,
    failedAt: timestamp,
    cancelledAt: timestamp,
    lastError: { type: ['string', 'null'] },
    scheduleId: { type: 'string', description: 'Only on a job a schedule created' },
    tags: { ...tagsAnswer, description: 'Its tags; {} when it has none' },
    payload: { type: 'object', additionalProperties: true },
  },
} as const;

/** The one filter (SPEC section 14) as a bulk action takes it: each field given narrows it; at least one is required. */
const jobFilter = {
  type: 'object',
  description: 'Every field given must match (every tag, for tags). An empty filter is INVALID_REQUEST, as is an unknown field.',
  properties: {
    status: { type: 'string', enum: JOB_STATUSES, description: "Only this status; other than the action's (QUEUED, or FAILED for retry), nothing matches" },
    tags: { type: 'object', additionalProperties: { type: 'string' }, description: 'Tags a job must all have', examples: [{ order: '123' }] },
    scheduleId: { type: 'string' },
    createdAfter: { type: 'string', format: 'date-time', description: 'inclusive' },
    createdBefore: { type: 'string', format: 'date-time', description: 'exclusive' },
    dueAfter: { type: 'string', format: 'date-time', description: "inclusive, against a QUEUED job's nextAttemptAt" },
    dueBefore: { type: 'string', format: 'date-time', description: 'exclusive' },
  },
} as const;

export const bulkBody = {
  type: 'object',
  required: ['action', 'filter'],
  properties: {
    action: { type: 'string', enum: BULK_ACTIONS, description: 'cancel and reschedule act on QUEUED jobs, retry on FAILED ones' },
    filter: jobFilter,
    scheduledFor: { ...scheduleField, description: 'reschedule only, and required with it: the new time; null runs them at once' },
    scheduleFor: { ...scheduleField, description: 'Alias of scheduledFor' },
    dryRun: { type: 'boolean', description: 'Count what would be matched; change nothing. Default false' },
    limit: { type: 'integer', minimum: 1, maximum: BULK_MAX_LIMIT, description: `At most this many jobs, oldest first; default ${BULK_DEFAULT_LIMIT}` },
  },
} as const;

export const bulkAnswer = {
  type: 'object',
  properties: {
    matched: { type: 'integer', description: "Jobs matched in the action's state (at most limit)" },
    changed: { type: 'integer', description: 'Jobs changed: 0 with dryRun; a job that left the state meanwhile is matched, not changed' },
    hasMore: { type: 'boolean', description: 'More jobs match: the same request again goes on with them' },
  },
} as const;

export const attempt = {
  type: 'object',
  properties: {
    attemptId: { type: 'string' },
    attemptNumber: { type: 'integer' },
    startedAt: timestamp,
    finishedAt: nullableTimestamp,
    outcome: { type: ['string', 'null'] },
    statusCode: { type: ['integer', 'null'] },
    durationMs: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
    responseBody: { type: ['string', 'null'] },
    acceptedAt: nullableTimestamp,
    reportedAt: nullableTimestamp,
  },
} as const;

export const jobIdParams = { type: 'object', properties: { jobId: { type: 'string' } }, required: ['jobId'] } as const;

export const retryPolicy = {
  type: 'object',
  properties: {
    maxRetries: { type: ['integer', 'null'] },
    initialDelayMs: { type: 'integer' },
    factor: { type: 'number' },
    maxDelayMs: { type: 'integer' },
  },
} as const;

export const team = {
  type: 'object',
  properties: { teamId: { type: 'string' }, name: { type: 'string' }, plan: { type: 'string' }, createdAt: timestamp },
} as const;

export const project = {
  type: 'object',
  properties: {
    projectId: { type: 'string' },
    teamId: { type: 'string' },
    name: { type: 'string' },
    webhookUrl: { type: ['string', 'null'] },
    retryPolicy,
    deliveryTimeoutMs: { type: 'integer' },
    deliveryConcurrency: { type: 'integer' },
    acceptAny2xx: { type: 'boolean' },
    paused: { type: 'boolean' },
    deliveryRatePerSecond: { type: ['number', 'null'] },
    asyncCompletion: { type: 'boolean' },
    asyncCompletionTimeoutMs: { type: 'integer' },
    eventsUrl: { type: ['string', 'null'] },
    eventsFormat: { type: 'string', enum: ['json', 'slack'] },
    retentionDays: { type: ['integer', 'null'] },
    createdAt: timestamp,
  },
} as const;

export const event = {
  type: 'object',
  properties: {
    eventId: { type: 'string' },
    type: { type: 'string', enum: ['job.failed', 'webhook.failing', 'webhook.recovered', 'schedule.skipped'] },
    occurredAt: timestamp,
    projectId: { type: 'string' },
    data: { type: 'object', additionalProperties: true },
    status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED'] },
    attemptCount: { type: 'integer' },
    nextAttemptAt: nullableTimestamp,
    lastError: { type: ['string', 'null'] },
    deliveredAt: nullableTimestamp,
  },
} as const;

export const apiKey = {
  type: 'object',
  properties: {
    keyId: { type: 'string' },
    name: { type: 'string' },
    prefix: { type: 'string' },
    createdAt: timestamp,
    lastUsedAt: nullableTimestamp,
    revokedAt: nullableTimestamp,
  },
} as const;

/** Error answers a route may give, for the docs. */
export function errors(...codes: number[]): Record<number, typeof errorSchema> {
  return Object.fromEntries(codes.map((code) => [code, errorSchema]));
}

// Recurring schedules (SPEC section 9). Fields are checked by services/input/schedule-input.ts, with the contract's codes.
const scheduleFields = {
  cron: { type: 'string', description: '5 or 6 fields (seconds first), names, steps, @daily and friends' },
  timezone: { type: 'string', description: 'An IANA zone name; default UTC' },
  payload: { type: 'object', additionalProperties: true, description: 'Any JSON object, at most 10,240 bytes as JSON' },
  maxRetries: { type: ['integer', 'null'], minimum: 0 },
  name: { type: ['string', 'null'] },
  catchUp: { type: 'string', enum: ['latest', 'none', 'all'] },
  overlap: { type: 'string', enum: ['allow', 'skip'] },
  paused: { type: 'boolean' },
  tags: { ...tagsField, description: `${tagsField.description} The schedule's jobs carry them; {} in a PATCH removes them.` },
} as const;

export const scheduleBody = { type: 'object', properties: scheduleFields } as const;

export const schedule = {
  type: 'object',
  properties: {
    scheduleId: { type: 'string' },
    ...scheduleFields,
    nextRunAt: nullableTimestamp,
    lastRunAt: nullableTimestamp,
    lastJobId: { type: ['string', 'null'] },
    skippedCount: { type: 'integer' },
    tags: { ...tagsAnswer, description: 'The tags its jobs carry; {} for none' },
    createdAt: timestamp,
    updatedAt: timestamp,
  },
} as const;

export const scheduleIdParams = { type: 'object', properties: { scheduleId: { type: 'string' } }, required: ['scheduleId'] } as const;
