import { createHmac, timingSafeEqual } from 'node:crypto';
import type { TraceContext } from '../tracing/trace-context.js';

/** Decoded keys of the secrets in use (a project has one or two): not decoded again for every request. */
const decodedKeys = new Map<string, Buffer>();
const DECODED_KEYS_MAX = 1_000;

/** The HMAC key of a `whsec_…` secret is its base64-decoded bytes (Standard Webhooks). */
function secretBytes(secret: string): Buffer {
  let key = decodedKeys.get(secret);
  if (!key) {
    if (decodedKeys.size >= DECODED_KEYS_MAX) decodedKeys.clear();
    key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
    decodedKeys.set(secret, key);
  }
  return key;
}

function sign(secret: string, id: string, timestamp: number, body: string): string {
  return createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** `v1,<sig>` for every active secret, newest first, space-separated (two during a rotation). */
function webhookSignature(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets.map((secret) => `v1,${sign(secret, id, timestamp, body)}`).join(' ');
}

/** What one signed request is made of. */
export interface SignedContent {
  webhookId: string;
  /** Active secrets, newest first. */
  secrets: string[];
  body: string;
  /** Send the newest secret as `Authorization: Bearer` too (deliveries, never events). */
  bearer: boolean;
  trace?: TraceContext | null;
}

/**
 * The signed headers of one request: Standard Webhooks with all active secrets, Authorization with
 * the newest where asked for; and the attempt's trace context when its job has one (SPEC section
 * 4), outside the signature as the spec's signed content is id, timestamp and body.
 */
export function webhookHeaders({ webhookId, secrets, body, bearer, trace }: SignedContent, nowMs: number): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  const headers: Record<string, string> = {
    ...(bearer && { authorization: `Bearer ${secrets[0] ?? ''}` }),
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': webhookSignature(secrets, webhookId, timestamp, body),
  };
  if (trace) {
    headers.traceparent = trace.traceparent;
    if (trace.tracestate !== null) headers.tracestate = trace.tracestate;
  }
  return headers;
}

/** A receiver's check: does any v1 entry match this secret? (Used by `punctual listen`.) */
export function verifyWebhookSignature(secret: string, id: string, timestamp: number, body: string, header: string): boolean {
  const expected = Buffer.from(sign(secret, id, timestamp, body));
  return header.split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
