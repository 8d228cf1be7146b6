/**
 * Readers of management request bodies: each returns the value or throws INVALID_REQUEST naming the
 * field. Route schemas check types first; these check what a schema cannot say.
 */
import { InvalidRequestError } from '../../errors.js';
import { EVENTS_FORMATS, type EventsFormat, type ProjectPatch } from '../../store/store.js';
import { EVENT_TYPES } from '../../store/event-store.js';
import {
  ASYNC_COMPLETION_TIMEOUT_RANGE,
  KEY_CONCURRENCY_RANGE,
  DELIVERY_CONCURRENCY_RANGE,
  DELIVERY_RATE_RANGE,
  DELIVERY_TIMEOUT_RANGE,
  NAME_MAX,
  RETRY_FACTOR_RANGE,
  RETRY_INITIAL_DELAY_RANGE,
  RETRY_MAX_DELAY_RANGE,
} from '../project-settings.js';
import { isPlainObject } from './validate-job-input.js';
import { RETENTION_DAYS_RANGE } from '../../retention.js';
import { fieldSet, refuseUnknownFields, type FieldSet } from './known-fields.js';

/**
 * The fields of each management body (SPEC section 7): these bodies are strict, so a field not
 * listed here is refused, naming it (with didYouMean when a known one is near). A project's
 * creation takes every field its update does.
 */
export const PROJECT_FIELDS = fieldSet([
  'name',
  'webhookUrl',
  'retryPolicy',
  'deliveryTimeoutMs',
  'deliveryConcurrency',
  'acceptAny2xx',
  'retentionDays',
  'paused',
  'deliveryRatePerSecond',
  'asyncCompletion',
  'asyncCompletionTimeoutMs',
  'keyConcurrency',
  'eventsUrl',
  'eventsFormat',
  'holdOnFailure',
  'eventTypes',
]);
export const RETRY_POLICY_FIELDS = fieldSet(['maxRetries', 'initialDelayMs', 'factor', 'maxDelayMs', 'stopOn']);
export const TEAM_FIELDS = fieldSet(['name', 'plan']);
export const KEY_FIELDS = fieldSet(['name']);

/** A management body: a JSON object of the known fields only (`where` names it in a message: "a team"). */
/** What a webhook or events URL must be, when it is not even a string; manage-service.ts checks the URL itself. */
export const webhookUrlRule = (field: string): string => `${field} must be an absolute http(s) URL, or null to unset it`;

export function requireObject(body: unknown, fields: FieldSet, where: string): Record<string, unknown> {
  if (!isPlainObject(body)) throw new InvalidRequestError('The request body must be a JSON object');
  refuseUnknownFields(body, fields, where);
  return body;
}

export function readName(body: Record<string, unknown>, required: boolean): string | undefined {
  if (!('name' in body)) {
    if (required) throw new InvalidRequestError('name is required', { field: 'name' });
    return undefined;
  }
  const name = body.name;
  if (typeof name !== 'string' || name.trim().length === 0 || name.length > NAME_MAX) {
    throw new InvalidRequestError(`name must be a non-empty string of at most ${NAME_MAX} characters`, { field: 'name' });
  }
  // PostgreSQL text cannot hold U+0000, and a lone surrogate would be stored as U+FFFD: either way
  // the name kept would not be the name sent, so both stores refuse them alike.
  if (name.includes('\u0000') || /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(name)) {
    throw new InvalidRequestError('name must not contain U+0000 or unpaired surrogates', { field: 'name' });
  }
  return name.trim();
}

function readInteger(value: unknown, field: string, [min, max]: readonly [number, number]): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidRequestError(`${field} must be an integer from ${min} to ${max}`, { field });
  }
  return value;
}

/**
 * A project's settings as a creation or a PATCH gives them (strict: PROJECT_FIELDS): only the
 * fields present are in the patch.
 */
export async function readProjectPatch(
  input: unknown,
  options: { maxRetriesCap: number; readWebhookUrl: (value: unknown, field?: string) => Promise<string | null> },
): Promise<ProjectPatch> {
  const body = requireObject(input, PROJECT_FIELDS, 'a project');
  const patch: ProjectPatch = {};
  const name = readName(body, false);
  if (name !== undefined) patch.name = name;
  if ('webhookUrl' in body) patch.webhookUrl = await options.readWebhookUrl(body.webhookUrl);
  if ('retryPolicy' in body) {
    const policy = body.retryPolicy;
    if (!isPlainObject(policy)) {
      throw new InvalidRequestError('retryPolicy must be an object, such as {"maxRetries": 3, "initialDelayMs": 30000}', { field: 'retryPolicy' });
    }
    refuseUnknownFields(policy, RETRY_POLICY_FIELDS, 'a retry policy', 'retryPolicy.');
    if ('maxRetries' in policy) {
      patch.retryMaxRetries =
        policy.maxRetries === null ? null : readInteger(policy.maxRetries, 'retryPolicy.maxRetries', [0, options.maxRetriesCap]);
    }
    if ('initialDelayMs' in policy) patch.retryInitialDelayMs = readInteger(policy.initialDelayMs, 'retryPolicy.initialDelayMs', RETRY_INITIAL_DELAY_RANGE);
    if ('maxDelayMs' in policy) patch.retryMaxDelayMs = readInteger(policy.maxDelayMs, 'retryPolicy.maxDelayMs', RETRY_MAX_DELAY_RANGE);
    if ('factor' in policy) {
      const factor = policy.factor;
      if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < RETRY_FACTOR_RANGE[0] || factor > RETRY_FACTOR_RANGE[1]) {
        throw new InvalidRequestError(`retryPolicy.factor must be a number from ${RETRY_FACTOR_RANGE[0]} to ${RETRY_FACTOR_RANGE[1]}`, {
          field: 'retryPolicy.factor',
        });
      }
      patch.retryFactor = factor;
    }
    if ('stopOn' in policy) patch.retryStopOn = readStopOn(policy.stopOn);
  }
  if ('deliveryTimeoutMs' in body) patch.deliveryTimeoutMs = readInteger(body.deliveryTimeoutMs, 'deliveryTimeoutMs', DELIVERY_TIMEOUT_RANGE);
  if ('deliveryConcurrency' in body) {
    patch.deliveryConcurrency = readInteger(body.deliveryConcurrency, 'deliveryConcurrency', DELIVERY_CONCURRENCY_RANGE);
  }
  if ('acceptAny2xx' in body) {
    if (typeof body.acceptAny2xx !== 'boolean') throw new InvalidRequestError('acceptAny2xx must be true or false', { field: 'acceptAny2xx' });
    patch.acceptAny2xx = body.acceptAny2xx;
  }
  if ('retentionDays' in body) {
    patch.retentionDays = body.retentionDays === null ? null : readInteger(body.retentionDays, 'retentionDays', RETENTION_DAYS_RANGE);
  }
  if ('deliveryRatePerSecond' in body) {
    const rate = body.deliveryRatePerSecond;
    const [min, max] = DELIVERY_RATE_RANGE;
    if (rate !== null && (typeof rate !== 'number' || !Number.isFinite(rate) || rate < min || rate > max)) {
      throw new InvalidRequestError(`deliveryRatePerSecond must be null (no limit) or a number from ${min} to ${max}`, { field: 'deliveryRatePerSecond' });
    }
    patch.deliveryRatePerSecond = rate;
  }
  if ('asyncCompletion' in body) {
    if (typeof body.asyncCompletion !== 'boolean') throw new InvalidRequestError('asyncCompletion must be true or false', { field: 'asyncCompletion' });
    patch.asyncCompletion = body.asyncCompletion;
  }
  if ('asyncCompletionTimeoutMs' in body) {
    patch.asyncCompletionTimeoutMs = readInteger(body.asyncCompletionTimeoutMs, 'asyncCompletionTimeoutMs', ASYNC_COMPLETION_TIMEOUT_RANGE);
  }
  if ('keyConcurrency' in body) patch.keyConcurrency = readInteger(body.keyConcurrency, 'keyConcurrency', KEY_CONCURRENCY_RANGE);
  if ('paused' in body) {
    if (typeof body.paused !== 'boolean') throw new InvalidRequestError('paused must be true or false', { field: 'paused' });
    patch.paused = body.paused;
  }
  // Any URL a webhook URL may be (SPEC section 10), checked by the same reader.
  if ('eventsUrl' in body) patch.eventsUrl = await options.readWebhookUrl(body.eventsUrl, 'eventsUrl');
  if ('eventsFormat' in body) {
    if (!EVENTS_FORMATS.includes(body.eventsFormat as EventsFormat)) {
      throw new InvalidRequestError(`eventsFormat must be one of ${EVENTS_FORMATS.join(', ')}`, { field: 'eventsFormat' });
    }
    patch.eventsFormat = body.eventsFormat as EventsFormat;
  }
  if ('holdOnFailure' in body) {
    if (typeof body.holdOnFailure !== 'boolean') throw new InvalidRequestError('holdOnFailure must be true or false', { field: 'holdOnFailure' });
    patch.holdOnFailure = body.holdOnFailure;
  }
  if ('eventTypes' in body) patch.eventTypes = readEventTypes(body.eventTypes);
  return patch;
}

/** SPEC section 13: HTTP statuses that end a job at once, each once, in the order given. */
function readStopOn(value: unknown): number[] {
  const rule = 'retryPolicy.stopOn must be an array of HTTP status codes from 400 to 599, such as [410]';
  if (!Array.isArray(value) || value.some((code) => typeof code !== 'number' || !Number.isInteger(code) || code < 400 || code > 599)) {
    throw new InvalidRequestError(rule, { field: 'retryPolicy.stopOn' });
  }
  return [...new Set(value as number[])];
}

/** SPEC section 13: the event types sent to the eventsUrl, each once; null for the default set. */
function readEventTypes(value: unknown): string[] | null {
  if (value === null) return null;
  const known: readonly string[] = EVENT_TYPES;
  if (!Array.isArray(value) || value.some((type) => typeof type !== 'string' || !known.includes(type))) {
    throw new InvalidRequestError(`eventTypes must be null (the default set) or an array of event types: ${EVENT_TYPES.join(', ')}`, { field: 'eventTypes' });
  }
  return [...new Set(value as string[])];
}
