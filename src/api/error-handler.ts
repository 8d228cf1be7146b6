import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  InternalError,
  InvalidCronError,
  InvalidMaxRetriesError,
  InvalidPayloadError,
  InvalidRequestError,
  InvalidScheduleError,
  InvalidTagsError,
  InvalidTimezoneError,
  InvalidWebhookUrlError,
  NotFoundError,
  PayloadTooLargeError,
  PunctualError,
  UnsupportedMediaTypeError,
} from '../errors.js';
import { CRON_RULES } from '../services/input/schedule-input.js';
import { tagsRule } from '../services/input/tags-input.js';
import { FIELD_RULES } from '../services/input/validate-job-input.js';
import { webhookUrlRule } from '../services/input/validate-manage-input.js';

type AjvError = { instancePath: string; keyword: string; params: Record<string, unknown>; message?: string };

/** Which contract error a schema failure on a job field is (SPEC section 5); the rest are INVALID_REQUEST. */
const FIELD_ERRORS: Record<string, new (message: string, extra: Record<string, unknown>) => PunctualError> = {
  payload: InvalidPayloadError,
  scheduledFor: InvalidScheduleError,
  scheduleFor: InvalidScheduleError,
  maxRetries: InvalidMaxRetriesError,
  webhookUrl: InvalidWebhookUrlError,
  eventsUrl: InvalidWebhookUrlError,
  cron: InvalidCronError,
  timezone: InvalidTimezoneError,
  tags: InvalidTagsError,
};

/**
 * What a body field must be, in the words its service reader uses (services/input/): a schema's
 * type check of the field says the same sentence, so one mistake has one message wherever it is
 * made (SPEC section 2).
 */
const FIELD_SENTENCES: Record<string, (field: string) => string> = {
  payload: FIELD_RULES.payload,
  scheduledFor: FIELD_RULES.schedule,
  scheduleFor: FIELD_RULES.schedule,
  maxRetries: FIELD_RULES.maxRetries,
  tags: tagsRule,
  cron: CRON_RULES.cron,
  timezone: CRON_RULES.timezone,
  webhookUrl: webhookUrlRule,
  eventsUrl: webhookUrlRule,
};

/** A JSON schema type, in words. */
const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

const listed = (items: string[], last: string) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} ${last} ${items[items.length - 1]}`);

/** A schema failure said as a sentence about the field, never in the validator's own terms ("must be string,null"). */
function sentence(error: AjvError, field: string): string {
  const { params } = error;
  switch (error.keyword) {
    case 'required':
      return `${field} is required`;
    case 'type':
      return `${field} must be ${listed([params.type].flat().map((type) => TYPE_WORDS[String(type)] ?? String(type)), 'or')}`;
    case 'minimum':
      return `${field} must be at least ${String(params.limit)}`;
    case 'maximum':
      return `${field} must be at most ${String(params.limit)}`;
    case 'minLength':
      return `${field} must be at least ${String(params.limit)} characters long`;
    case 'maxLength':
      return `${field} must be at most ${String(params.limit)} characters long`;
    case 'enum':
      return `${field} must be one of ${(params.allowedValues as unknown[]).map((value) => JSON.stringify(value)).join(', ')}`;
    case 'format':
      return params.format === 'date-time'
        ? `${field} must be an RFC 3339 date-time with a time zone, such as 2027-01-05T09:30:00Z`
        : `${field} must be ${String(params.format)}`;
    default:
      return `${field} is not valid`;
  }
}

/** Turns the first schema failure into the contract's error, naming the field as the client sent it. */
function fromValidation(errors: AjvError[], context: string | undefined): PunctualError {
  const first = errors[0];
  if (!first) return new InvalidRequestError('The request is not valid');
  const segments = first.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (first.keyword === 'required') segments.push(String(first.params.missingProperty));
  const field = segments.join('.');
  if (!field) {
    const what = context === 'querystring' ? 'The query string' : 'The request body';
    return new InvalidRequestError(`${what} must be a JSON object`);
  }
  const top = segments[0]!;
  const ownField = context === 'body' && segments.length === 1;
  const rule = ownField && first.keyword !== 'required' ? FIELD_SENTENCES[top] : undefined;
  const message = rule ? rule(field) : sentence(first, field);
  const ErrorClass = ownField ? FIELD_ERRORS[top] : undefined;
  return ErrorClass ? new ErrorClass(message, { field }) : new InvalidRequestError(message, { field });
}

/** Fastify's own failures (body parsing, limits, URL decoding) in the contract's shape. */
export function fromFrameworkError(error: FastifyError, bodyLimit: number | undefined): PunctualError | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError(`The request body is over its limit of ${bodyLimit ?? 'the allowed'} bytes`, { limit: bodyLimit });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaTypeError('Send the body as JSON (Content-Type: application/json)');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidRequestError('The request body is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new InvalidRequestError('Content-Length does not match the body sent');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return new NotFoundError('No such route');
    default:
      return null;
  }
}

function toPunctualError(error: unknown, request: FastifyRequest): PunctualError | null {
  if (error instanceof PunctualError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return fromValidation(fastifyError.validation as AjvError[], fastifyError.validationContext);
  const mapped = fromFrameworkError(fastifyError, request.routeOptions.bodyLimit);
  if (mapped) return mapped;
  // Any other client error Fastify raised (4xx) is the client's to fix, and says nothing internal.
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new InvalidRequestError('The request could not be read');
  }
  return null;
}

export function sendError(reply: FastifyReply, error: PunctualError): FastifyReply {
  return reply.code(error.statusCode).headers(error.headers).type('application/json').send(JSON.stringify(error.toBody()));
}

/**
 * The one place an error becomes a response. Contract errors go out as they are; anything else is
 * logged with its stack and leaves as a bare INTERNAL_ERROR.
 */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const known = toPunctualError(error, request);
    if (known) return sendError(reply, known);
    request.log.error({ err: error }, 'unhandled error');
    return sendError(reply, new InternalError('Something went wrong on our side; the request id identifies it in our logs', { requestId: request.id }));
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, new NotFoundError(`No route ${request.method} ${request.url.split('?')[0]}`)));
}
