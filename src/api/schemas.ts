/**
 * JSON schemas of the HTTP API. They validate requests (types only; no coercion, so "3" is not an
 * integer), serialise answers and produce /openapi.json. Rules a schema cannot say (timestamps,
 * payload bytes, alias conflicts) live in services/input/validate-job-input.ts.
 */
import { ERROR_CLASSES } from '../errors.js';
import { BULK_ACTIONS, BULK_DEFAULT_LIMIT, BULK_MAX_LIMIT } from '../services/input/bulk-input.js';
import { TAGS_MAX, TAG_VALUE_MAX } from '../services/input/tags-input.js';
import { JOB_STATUSES, type AttemptOutcome } from '../store/store.js';

/** An attempt's outcomes (SPEC section 4), for the schema's enum. */
const ATTEMPT_OUTCOMES = ['success', 'http_error', 'timeout', 'network_error', 'lease_expired'] as const satisfies readonly AttemptOutcome[];

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
/** SPEC section 15. */
const concurrencyKeyField = {
  type: 'string',
  description: "Of a project's jobs with one key, at most its keyConcurrency run at once; at 1, strictly in order (1 to 128 printable ASCII characters)",
  examples: ['customer-42'],
} as const;
const tagsAnswer = { type: 'object', additionalProperties: { type: 'string' } } as const;

export const dispatchBody = {
  type: 'object',
  required: ['payload'],
  properties: {
    payload: { type: 'object', additionalProperties: true, description: 'Any JSON object, at most 10,240 bytes as JSON' },
    scheduledFor: scheduleField,
    scheduleFor: { ...scheduleField, description: 'Alias of scheduledFor' },
    maxRetries: { type: 'integer', minimum: 0, description: 'Capped by the plan (at most 3)' },
    tags: tagsField,
    concurrencyKey: concurrencyKeyField,
    debounceKey: {
      type: 'string',
      description:
        'While a QUEUED job of this key exists in the project and has not started, a dispatch creates no job: that job takes its payload and moves to now + debounceMs (never later than its first dispatch + maxWaitMs), answered 200 with debounced. Not with scheduledFor; not on batch items.',
      examples: ['digest-user-42'],
    },
    debounceMs: { type: 'integer', minimum: 1_000, maximum: 86_400_000, description: 'Required with debounceKey' },
    maxWaitMs: { type: 'integer', minimum: 1_000, maximum: 31_622_400_000, description: 'At least debounceMs; the longest a debounced job waits from its first dispatch' },
  },
} as const;

export const dispatchAnswer = {
  type: 'object',
  required: ['jobId', 'status', 'scheduledFor', 'maxRetries'],
  properties: {
    jobId: { type: 'string' },
    status: { type: 'string', enum: ['QUEUED'] },
    scheduledFor: nullableTimestamp,
    maxRetries: { type: 'integer' },
    debounced: { type: 'boolean', description: 'Only on a dispatch absorbed by its debounceKey\'s job (answered 200): true' },
    debouncedCount: { type: 'integer', description: 'With debounced: the dispatches that job absorbed so far' },
  },
} as const;

export const jobStatus = {
  type: 'object',
  // completedAt, failedAt, cancelledAt appear once reached; scheduleId only on a schedule's job.
  required: ['jobId', 'status', 'scheduledFor', 'maxRetries', 'attemptCount', 'nextAttemptAt', 'createdAt', 'updatedAt', 'lastError', 'tags', 'payload'],
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
    concurrencyKey: { type: 'string', description: 'Only on a job with a key' },
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
    concurrencyKey: { type: 'string', description: 'Only the jobs of this concurrencyKey' },
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
  required: ['matched', 'changed', 'hasMore'],
  properties: {
    matched: { type: 'integer', description: "Jobs matched in the action's state (at most limit)" },
    changed: { type: 'integer', description: 'Jobs changed: 0 with dryRun; a job that left the state meanwhile is matched, not changed' },
    hasMore: { type: 'boolean', description: 'More jobs match: the same request again goes on with them' },
  },
} as const;

export const attempt = {
  type: 'object',
  required: ['attemptId', 'attemptNumber', 'startedAt', 'finishedAt', 'outcome', 'statusCode', 'durationMs', 'error', 'responseBody', 'acceptedAt', 'reportedAt'],
  properties: {
    attemptId: { type: 'string' },
    attemptNumber: { type: 'integer' },
    startedAt: timestamp,
    finishedAt: nullableTimestamp,
    outcome: { type: ['string', 'null'], enum: [...ATTEMPT_OUTCOMES, null], description: 'null while the attempt is under way (or accepted with 202 and waiting for its report)' },
    statusCode: { type: ['integer', 'null'] },
    durationMs: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
    responseBody: { type: ['string', 'null'] },
    acceptedAt: nullableTimestamp,
    reportedAt: nullableTimestamp,
  },
} as const;

/** A list's cursor for the next page; null on the last. */
export const nextCursor = { type: ['string', 'null'], description: 'Pass it back as `cursor` for the next page; null on the last' } as const;

export const jobList = { type: 'object', required: ['jobs', 'nextCursor'], properties: { jobs: { type: 'array', items: jobStatus }, nextCursor } } as const;

export const attemptList = { type: 'object', required: ['attempts'], properties: { attempts: { type: 'array', items: attempt } } } as const;

/** The answer of a cancel (CANCELLED) or a retry (QUEUED). */
export const jobStatusChange = (status: 'CANCELLED' | 'QUEUED') =>
  ({ type: 'object', required: ['jobId', 'status'], properties: { jobId: { type: 'string' }, status: { type: 'string', enum: [status] } } }) as const;

export const rescheduleAnswer = {
  type: 'object',
  required: ['jobId', 'scheduledFor', 'status'],
  properties: { jobId: { type: 'string' }, scheduledFor: nullableTimestamp, status: { type: 'string', enum: ['QUEUED'] } },
} as const;

/** An error body as a batch item carries it (SPEC section 5's shape). */
const itemError = {
  type: 'object',
  required: ['error', 'data'],
  properties: { error: { type: 'string' }, data: { type: 'object', required: ['message'], properties: { message: { type: 'string' }, field: { type: 'string' } }, additionalProperties: true } },
} as const;

/** Sent as rendered by the jobs service (never serialised by this schema): each item a dispatch answer or an error. */
export const batchAnswer = {
  type: 'object',
  required: ['jobs'],
  properties: { jobs: { type: 'array', description: 'In request order: each job as dispatch answers it, or its error', items: { anyOf: [dispatchAnswer, itemError] } } },
} as const;

export const jobIdParams = { type: 'object', properties: { jobId: { type: 'string' } }, required: ['jobId'] } as const;

export const retryPolicy = {
  type: 'object',
  properties: {
    maxRetries: { type: ['integer', 'null'] },
    initialDelayMs: { type: 'integer' },
    factor: { type: 'number' },
    maxDelayMs: { type: 'integer' },
    stopOn: { type: 'array', items: { type: 'integer' }, description: 'HTTP statuses (400..599) that end a job at once, FAILED with no further retries (SPEC section 13)' },
  },
} as const;

/** A project's delivery health (SPEC section 13). */
export const health = {
  type: 'object',
  required: ['state', 'since', 'consecutiveFailures', 'nextProbeAt'],
  properties: {
    state: { type: 'string', enum: ['healthy', 'failing', 'held'] },
    since: nullableTimestamp,
    consecutiveFailures: { type: 'integer' },
    nextProbeAt: { ...nullableTimestamp, description: 'While held: when the receiver is probed next' },
  },
} as const;

export const team = {
  type: 'object',
  required: ['teamId', 'name', 'plan', 'createdAt'],
  properties: { teamId: { type: 'string' }, name: { type: 'string' }, plan: { type: 'string' }, createdAt: timestamp },
} as const;

const projectProperties = {
  projectId: { type: 'string' },
  teamId: { type: 'string' },
  name: { type: 'string' },
  webhookUrl: { type: ['string', 'null'] },
  retryPolicy: { ...retryPolicy, required: ['maxRetries', 'initialDelayMs', 'factor', 'maxDelayMs', 'stopOn'] },
  deliveryTimeoutMs: { type: 'integer' },
  deliveryConcurrency: { type: 'integer' },
  acceptAny2xx: { type: 'boolean' },
  paused: { type: 'boolean' },
  deliveryRatePerSecond: { type: ['number', 'null'] },
  asyncCompletion: { type: 'boolean' },
  asyncCompletionTimeoutMs: { type: 'integer' },
  keyConcurrency: { type: 'integer', description: "Attempts of one concurrencyKey's jobs at once; at 1 (the default) a key's jobs run in strict order" },
  eventsUrl: { type: ['string', 'null'] },
  eventsFormat: { type: 'string', enum: ['json', 'slack'] },
  retentionDays: { type: ['integer', 'null'] },
  holdOnFailure: { type: 'boolean' },
  eventTypes: { type: 'array', items: { type: 'string' } },
  health,
  createdAt: timestamp,
} as const;

/** A project as the management API shows it: every setting, never a secret. */
export const project = { type: 'object', required: Object.keys(projectProperties), properties: projectProperties } as const;

/** A created project: the project and, this once, its webhook secret. */
export const createdProject = {
  type: 'object',
  required: [...Object.keys(projectProperties), 'webhookSecret'],
  properties: { ...projectProperties, webhookSecret: { type: 'string', description: 'whsec_…: signs deliveries; readable again at …/webhook-secrets' } },
} as const;

const eventProperties = {
  eventId: { type: 'string' },
  type: { type: 'string', enum: ['job.failed', 'job.completed', 'webhook.failing', 'webhook.held', 'webhook.recovered', 'schedule.skipped'] },
  occurredAt: timestamp,
  projectId: { type: 'string' },
  data: { type: 'object', additionalProperties: true },
  status: { type: 'string', enum: ['PENDING', 'DELIVERED', 'FAILED', 'NOT_SENT'], description: 'NOT_SENT: listed, but the project has no eventsUrl or does not subscribe to its type' },
  attemptCount: { type: 'integer' },
  nextAttemptAt: nullableTimestamp,
  lastError: { type: ['string', 'null'] },
  deliveredAt: nullableTimestamp,
} as const;

/** An event (SPEC section 10) as listed: what was sent, and how its delivery stands. */
export const event = { type: 'object', required: Object.keys(eventProperties), properties: eventProperties } as const;

const apiKeyProperties = {
  keyId: { type: 'string' },
  name: { type: 'string' },
  prefix: { type: 'string' },
  createdAt: timestamp,
  lastUsedAt: nullableTimestamp,
  revokedAt: nullableTimestamp,
} as const;

export const apiKey = { type: 'object', required: Object.keys(apiKeyProperties), properties: apiKeyProperties } as const;

/** A code of the contract's error table (SPEC section 5, src/errors.ts). */
export type ErrorCode = InstanceType<(typeof ERROR_CLASSES)[number]>['code'];

const STATUS_OF = new Map<string, number>(ERROR_CLASSES.map((ErrorClass) => {
  const error = new ErrorClass('');
  return [error.code, error.statusCode];
}));

/** What every route may answer whatever it is asked: a fault, and storage out of reach or the instance shutting down. */
const ANY_ROUTE: ErrorCode[] = ['INTERNAL_ERROR', 'UNAVAILABLE'];
/** Every /api/ route: the key is checked first, then the team's rate limit (SPEC section 2's order). */
export const API_KEY_ERRORS: ErrorCode[] = ['UNAUTHORIZED', 'RATE_LIMITED', ...ANY_ROUTE];
/** Every /manage/v1 route: an admin token or a session (with its CSRF token when it changes something). */
export const MANAGE_ERRORS: ErrorCode[] = ['UNAUTHORIZED', ...ANY_ROUTE];
/** A route that reads a JSON body: too large, not JSON, or not an object. */
export const BODY_ERRORS: ErrorCode[] = ['INVALID_REQUEST', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];

/**
 * The error answers a route may give, by status, for /openapi.json and the typed client: each
 * status lists its codes (in the description and as the enum of `error`). Error bodies are sent
 * as they are (error-handler.ts), so these schemas describe and never serialise.
 */
export function errors(...codes: ErrorCode[]): Record<number, object> {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const code of codes) {
    const status = STATUS_OF.get(code);
    if (status === undefined) throw new Error(`errors(): ${code} is not in src/errors.ts`);
    byStatus.set(status, (byStatus.get(status) ?? new Set<ErrorCode>()).add(code));
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, set]) => {
      const list = [...set];
      return [
        status,
        {
          description: list.join(', '),
          type: 'object',
          required: ['error', 'data'],
          properties: {
            error: { type: 'string', enum: list },
            data: {
              type: 'object',
              required: ['message'],
              properties: {
                message: { type: 'string', description: 'A sentence a person can act on' },
                field: { type: 'string', description: 'The field at fault, as the client named it (dotted when nested)' },
              },
              additionalProperties: true,
            },
          },
        },
      ];
    }),
  );
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
  concurrencyKey: { ...concurrencyKeyField, type: ['string', 'null'], description: "The concurrencyKey the schedule's jobs carry; null in a PATCH removes it" },
} as const;

export const scheduleBody = { type: 'object', properties: scheduleFields } as const;

const scheduleProperties = {
  scheduleId: { type: 'string' },
  ...scheduleFields,
  nextRunAt: nullableTimestamp,
  lastRunAt: nullableTimestamp,
  lastJobId: { type: ['string', 'null'] },
  skippedCount: { type: 'integer' },
  tags: { ...tagsAnswer, description: 'The tags its jobs carry; {} for none' },
  concurrencyKey: { type: ['string', 'null'], description: 'The concurrencyKey its jobs carry; null for none' },
  createdAt: timestamp,
  updatedAt: timestamp,
} as const;

export const schedule = { type: 'object', required: Object.keys(scheduleProperties), properties: scheduleProperties } as const;

export const scheduleIdParams = { type: 'object', properties: { scheduleId: { type: 'string' } }, required: ['scheduleId'] } as const;
