import type { FastifyInstance } from 'fastify';
import { InvalidRequestError, UnsupportedMediaTypeError } from '../errors.js';

/**
 * SPEC section 2: bodies are JSON (`application/json` or `application/*+json`, no charset or
 * utf-8); a body with no Content-Type is JSON too; an empty body is no error (routes that need a
 * body say INVALID_REQUEST). Fastify's own parser refuses empty JSON bodies and `__proto__` keys,
 * so it is replaced: payloads are data, never merged into objects, and must round-trip as sent.
 */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i;

export function isJsonContentType(header: string): boolean {
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
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new InvalidRequestError('The request body is not valid JSON'), undefined);
    }
  });
}
