/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): reading an enqueue request's `traceparent` and
 * `tracestate`, and continuing that trace on a delivery with a span id of its own. No OpenTelemetry
 * here: this is what runs when export is off.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { newSpanId } from '../crypto/random-ids.js';

/** A trace to continue, as stored with a job: `traceparent` always in version 00's form. */
export interface TraceContext {
  traceparent: string;
  tracestate: string | null;
}

/** version-traceid-parentid-flags; a version above 00 may append fields after another "-". */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);

/**
 * A tracestate list member: a key (simple, or tenant@system) and a value of up to 256 printable
 * characters other than "," and "=", not ending in a space.
 */
const TRACESTATE_MEMBER =
  /^(?:[a-z0-9][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
const TRACESTATE_MAX_MEMBERS = 32;
/** What is stored: the spec asks vendors to pass on at least 512 characters; a longer header is dropped whole. */
const TRACESTATE_MAX_LENGTH = 512;

/**
 * The `traceparent` header in version 00's form, or null when absent or invalid: an invalid header
 * is ignored, never an error, as the spec asks of a vendor. A later version is read by its first
 * four fields (the spec's forward compatibility); "ff" is no version. Two headers arrive joined by
 * Node with ", " and fail the pattern, as the spec wants of a repeated traceparent.
 */
export function parseTraceparent(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = TRACEPARENT.exec(header);
  if (!match) return null;
  const [, version, traceId, parentId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE_ID || parentId === ZERO_PARENT_ID) return null;
  return version === '00' && rest === undefined ? header : `00-${traceId}-${parentId}-${flags}`;
}

/** The `tracestate` header's members, trimmed and rejoined; null when absent, empty or invalid. */
export function parseTracestate(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.length > TRACESTATE_MAX_LENGTH) return null;
  const members = text
    .split(',')
    .map((member) => member.trim())
    .filter((member) => member !== '');
  if (members.length === 0 || members.length > TRACESTATE_MAX_MEMBERS) return null;
  if (!members.every((member) => TRACESTATE_MEMBER.test(member))) return null;
  return members.join(',');
}

/**
 * The trace context of an enqueue request, or null when it carried no valid traceparent (the
 * common case costs one property read). tracestate is read only beside a valid traceparent.
 */
export function readTraceContext(headers: IncomingHttpHeaders): TraceContext | null {
  if (headers.traceparent === undefined) return null;
  const traceparent = parseTraceparent(headers.traceparent);
  if (traceparent === null) return null;
  return { traceparent, tracestate: parseTracestate(headers.tracestate) };
}

/** The trace id of a valid (stored) traceparent: `00-<trace id>-<span id>-<flags>`. */
export function traceIdOf(traceparent: string): string {
  return traceparent.slice(3, 35);
}

/** The same trace id and flags, with a new span id: a delivery's own place in the job's trace. */
export function continueTrace(traceparent: string): string {
  return `${traceparent.slice(0, 36)}${newSpanId()}${traceparent.slice(52)}`;
}
