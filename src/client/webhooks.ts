/**
 * A receiver's check of a delivery or an event (SPEC section 4): the Standard Webhooks signature
 * over the raw body, with the project's `whsec_…` secret, and a fresh timestamp. The signing and the
 * check are the server's own (src/delivery/signature.ts), so they cannot disagree.
 */
import { verifyWebhookSignature } from '../delivery/signature.js';

/** The body of a delivery (SPEC section 4). */
export interface Delivery<Payload = Record<string, unknown>> {
  jobId: string;
  attemptId: string;
  /** The attempt number, as `attemptNumber` (Dispatched's receivers read `attempt`). */
  attempt: number;
  attemptNumber: number;
  payload: Payload;
  /** On a schedule's job: the schedule, and the fire instant (null for a trigger). */
  scheduleId?: string;
  scheduledFor?: string | null;
  /** With async completion: report the result with it (client.reports.report). */
  callbackToken?: string;
}

/** The body of an event sent to a project's eventsUrl (SPEC section 10), in the json format. */
export interface PunctualEvent {
  eventId: string;
  type: 'job.failed' | 'webhook.failing' | 'webhook.recovered' | 'schedule.skipped';
  occurredAt: string;
  projectId: string;
  data: Record<string, unknown>;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** Standard Webhooks receivers refuse timestamps further than this from their clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: Headers, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value.join(' ') : value;
}

export interface VerifyOptions {
  /** Seconds a timestamp may be from now (default 300). */
  toleranceSeconds?: number;
  /** Now, in ms (a test's clock). */
  now?: number;
}

/**
 * Verifies a delivery or an event and answers its parsed body; throws WebhookVerificationError
 * when no `v1,` signature matches (any of a rotation's two may), a header is missing or the
 * timestamp is stale. `rawBody` is the body as received, before any JSON parsing. `secret` may be
 * several (the old and the new during a rotation of your own).
 */
export function verifyWebhook<Body = Delivery>(secret: string | string[], headers: Headers, rawBody: string | Uint8Array, options: VerifyOptions = {}): Body {
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures) throw new WebhookVerificationError('webhook-id, webhook-timestamp and webhook-signature are all required');
  const timestamp = Number(timestampText);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!/^\d+$/.test(timestampText) || Math.abs((options.now ?? Date.now()) / 1000 - timestamp) > tolerance) {
    throw new WebhookVerificationError(`webhook-timestamp ${timestampText} is not within ${tolerance} s of now`);
  }
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const secrets = Array.isArray(secret) ? secret : [secret];
  if (!secrets.some((one) => verifyWebhookSignature(one, id, timestamp, body, signatures))) {
    throw new WebhookVerificationError('No webhook-signature entry matches this secret');
  }
  return JSON.parse(body) as Body;
}
