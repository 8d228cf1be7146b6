/**
 * Every error the contract (SPEC.md section 5) names, once, with its code and HTTP status.
 * Routes and services throw these; only api/error-handler.ts turns them into response bodies.
 */
export type ErrorData = { message: string; field?: string } & Record<string, unknown>;

export abstract class PunctualError extends Error {
  abstract readonly code: string;
  abstract readonly statusCode: number;
  readonly data: ErrorData;
  /** Extra response headers, e.g. Retry-After. */
  readonly headers: Record<string, string>;

  constructor(message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    super(message);
    this.data = { message, ...extra };
    this.headers = headers;
  }

  toBody(): { error: string; data: ErrorData } {
    return { error: this.code, data: this.data };
  }
}

export class UnauthorizedError extends PunctualError {
  readonly code = 'UNAUTHORIZED';
  readonly statusCode = 401;
}
export class InvalidRequestError extends PunctualError {
  readonly code = 'INVALID_REQUEST';
  readonly statusCode = 400;
}
export class InvalidPayloadError extends PunctualError {
  readonly code = 'INVALID_PAYLOAD';
  readonly statusCode = 400;
}
export class PayloadTooLargeError extends PunctualError {
  readonly code = 'PAYLOAD_TOO_LARGE';
  readonly statusCode = 413;
}
export class InvalidScheduleError extends PunctualError {
  readonly code = 'INVALID_SCHEDULE';
  readonly statusCode = 400;
}
export class InvalidMaxRetriesError extends PunctualError {
  readonly code = 'INVALID_MAX_RETRIES';
  readonly statusCode = 400;
}
export class InvalidWebhookUrlError extends PunctualError {
  readonly code = 'INVALID_WEBHOOK_URL';
  readonly statusCode = 400;
}
export class UnsupportedMediaTypeError extends PunctualError {
  readonly code = 'UNSUPPORTED_MEDIA_TYPE';
  readonly statusCode = 415;
}
export class NotFoundError extends PunctualError {
  readonly code = 'NOT_FOUND';
  readonly statusCode = 404;
}
export class JobNotQueuedError extends PunctualError {
  readonly code = 'JOB_NOT_QUEUED';
  readonly statusCode = 409;
}
export class JobNotFailedError extends PunctualError {
  readonly code = 'JOB_NOT_FAILED';
  readonly statusCode = 409;
}
export class IdempotencyKeyReusedError extends PunctualError {
  readonly code = 'IDEMPOTENCY_KEY_REUSED';
  readonly statusCode = 422;
}
export class WebhookNotConfiguredError extends PunctualError {
  readonly code = 'WEBHOOK_NOT_CONFIGURED';
  readonly statusCode = 422;
}
export class RateLimitedError extends PunctualError {
  readonly code = 'RATE_LIMITED';
  readonly statusCode = 429;
}
export class QuotaExceededError extends PunctualError {
  readonly code = 'QUOTA_EXCEEDED';
  readonly statusCode = 429;
}
export class InternalError extends PunctualError {
  readonly code = 'INTERNAL_ERROR';
  readonly statusCode = 500;
}
export class UnavailableError extends PunctualError {
  readonly code = 'UNAVAILABLE';
  readonly statusCode = 503;
}
export class InvalidCronError extends PunctualError {
  readonly code = 'INVALID_CRON';
  readonly statusCode = 400;
}
/** Tags that are not an object of at most 10 valid entries (SPEC section 14). */
export class InvalidTagsError extends PunctualError {
  readonly code = 'INVALID_TAGS';
  readonly statusCode = 400;
}
export class InvalidTimezoneError extends PunctualError {
  readonly code = 'INVALID_TIMEZONE';
  readonly statusCode = 400;
}
export class ScheduleNotFoundError extends PunctualError {
  readonly code = 'SCHEDULE_NOT_FOUND';
  readonly statusCode = 404;
}
export class AttemptNotPendingError extends PunctualError {
  readonly code = 'ATTEMPT_NOT_PENDING';
  readonly statusCode = 409;
}

/** The contract's error table, for the test that keeps it and SPEC.md in step. */
export const ERROR_CLASSES = [
  UnauthorizedError,
  InvalidRequestError,
  InvalidPayloadError,
  PayloadTooLargeError,
  InvalidScheduleError,
  InvalidMaxRetriesError,
  InvalidWebhookUrlError,
  UnsupportedMediaTypeError,
  NotFoundError,
  JobNotQueuedError,
  JobNotFailedError,
  IdempotencyKeyReusedError,
  WebhookNotConfiguredError,
  RateLimitedError,
  QuotaExceededError,
  InternalError,
  UnavailableError,
  InvalidCronError,
  InvalidTagsError,
  InvalidTimezoneError,
  ScheduleNotFoundError,
  AttemptNotPendingError,
] as const;
