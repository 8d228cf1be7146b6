/** SPEC section 7 defaults and bounds for a project's delivery settings. */
export const PROJECT_DEFAULTS = {
  retryMaxRetries: null,
  retryInitialDelayMs: 30_000,
  retryFactor: 4,
  retryMaxDelayMs: 3_600_000,
  deliveryTimeoutMs: 30_000,
  deliveryConcurrency: 100,
  acceptAny2xx: false,
  retentionDays: null,
  paused: false,
  eventsUrl: null,
  eventsFormat: 'json',
  deliveryRatePerSecond: null,
  asyncCompletion: false,
  asyncCompletionTimeoutMs: 3_600_000,
  keyConcurrency: 1,
  holdOnFailure: false,
  eventTypes: null,
  retryStopOn: [] as number[],
} as const;
/** SPEC section 11: attempts a project may start per second, when it sets a rate. */
export const DELIVERY_RATE_RANGE = [0.1, 10_000] as const;
/** SPEC section 11: how long an attempt accepted with 202 waits for its report. */
export const ASYNC_COMPLETION_TIMEOUT_RANGE = [1_000, 604_800_000] as const;
export const DELIVERY_TIMEOUT_RANGE = [1_000, 300_000] as const;
export const DELIVERY_CONCURRENCY_RANGE = [1, 1_000] as const;
/** SPEC section 15: attempts of one concurrencyKey's jobs at once. */
export const KEY_CONCURRENCY_RANGE = [1, 1_000] as const;
/** Our bounds where the contract is silent: up to a day before the first retry, a week at most between two. */
export const RETRY_INITIAL_DELAY_RANGE = [0, 86_400_000] as const;
export const RETRY_MAX_DELAY_RANGE = [0, 604_800_000] as const;
export const RETRY_FACTOR_RANGE = [1, 100] as const;
/** A rotated-out secret keeps signing this long. */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;
/** Names of teams, projects and keys, in characters. */
export const NAME_MAX = 200;
