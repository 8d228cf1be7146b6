import type { FastifyInstance } from 'fastify';
import { InvalidRequestError, UnsupportedMediaTypeError } from '../errors.js';

/**
 * SPEC section 2: bodies are JSON (`application/json` or `application/*+json`, no charset or
 * utf-8); a body with no Content-Type is JSON too; an empty body is no error (routes that need a
 * body say INVALID_REQUEST). Fastify's own parser refuses empty JSON bodies and `__proto__` keys,
 * so it is replaced: payloads are data, never merged into objects, and must round-trip as sent.
 */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;

/**
 * Deeper JSON is refused before it is parsed: serialising, hashing (idempotency) and validating a
 * value are recursive, and a 64 KiB body of brackets nests 32,000 levels, past the stack. A
 * thousand levels leave room for any payload a client means to send.
 */
export const JSON_MAX_DEPTH = 1_000;

/** Whether `text` opens more than `limit` arrays or objects at once (brackets in strings do not count). */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  // Nesting needs as many brackets as levels: most bodies have a few, found by native searches
  // far faster than the walk below, which runs only when there are enough of them to matter.
  if (bracketsAtMost(text, limit)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > limit) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

function bracketsAtMost(text: string, limit: number): boolean {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) {
      if (++count > limit) return false;
    }
  }
  return true;
}

function isJsonContentType(header: string): boolean {
  const [mediaType, ...params] = header.split(';').map((part) => part.trim());
  if (!mediaType || !JSON_MEDIA_TYPE.test(mediaType)) return false;
  return params.every((param) => {
    if (param === '') return true;
    const [name, value] = param.split('=').map((s) => s.trim().toLowerCase());
    return name === 'charset' && (value === 'utf-8' || value === '"utf-8"');
  });
}

export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
    const contentType = request.headers['content-type'];
    if (contentType !== undefined && contentType !== '' && !isJsonContentType(contentType)) {
      done(new UnsupportedMediaTypeError(`Content-Type ${contentType} is not supported; send application/json`), undefined);
      return;
    }
    const text = body as string;
    if (!/\S/.test(text)) {
      done(null, undefined);
      return;
    }
    if (jsonNestsDeeperThan(text, JSON_MAX_DEPTH)) {
      done(new InvalidRequestError(`The request body nests arrays and objects more than ${JSON_MAX_DEPTH} levels deep`), undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new InvalidRequestError('The request body is not valid JSON'), undefined);
    }
  });
}
