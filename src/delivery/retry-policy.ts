import type { AttemptNext, AttemptOutcome, ProjectRow } from '../store/store.js';

/** SPEC section 4: jitter adds up to this fraction of the wait. */
const JITTER_FRACTION = 0.1;

type RetryPolicy = Pick<ProjectRow, 'retryInitialDelayMs' | 'retryFactor' | 'retryMaxDelayMs'> & Partial<Pick<ProjectRow, 'retryStopOn'>>;

/** The wait before retry n (n ≥ 1): min(maxDelay, initialDelay × factor^(n-1)) plus up to 10% jitter. */
export function backoffMs(policy: RetryPolicy, retryNumber: number, random: () => number = Math.random): number {
  const base = Math.min(policy.retryMaxDelayMs, policy.retryInitialDelayMs * policy.retryFactor ** (retryNumber - 1));
  return Math.round(base + base * JITTER_FRACTION * random());
}

/** Retry-After as seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(header: string | string[] | undefined, now: number): number | null {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date has a weekday and month name; V8 would otherwise read "-5" as a year.
  if (!/[a-z]/i.test(text)) return null;
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

interface AttemptFacts {
  outcome: AttemptOutcome;
  statusCode: number | null;
  retryAfterMs: number | null;
  /** 1 for the first attempt of the current retry budget. */
  attemptNumber: number;
  maxRetries: number;
}

/** SPEC section 13: an answer whose status is in retryPolicy.stopOn ends the job at once (410 Gone, say). */
export function stopsJob(policy: Partial<Pick<ProjectRow, 'retryStopOn'>>, facts: Pick<AttemptFacts, 'outcome' | 'statusCode'>): boolean {
  return facts.outcome === 'http_error' && facts.statusCode !== null && (policy.retryStopOn?.includes(facts.statusCode) ?? false);
}

/** The lastError of a job ended by retryPolicy.stopOn: why it was not retried. */
export const stoppedError = (statusCode: number): string => `HTTP ${statusCode}: in retryPolicy.stopOn, so no further retries`;

/**
 * A receiver's backpressure (SPEC section 11): a 429 or 503 with Retry-After holds the project's
 * deliveries that long, capped at the policy's maxDelay; null for any other answer.
 */
export function backpressureMs(policy: RetryPolicy, statusCode: number | null, retryAfterMs: number | null): number | null {
  if (retryAfterMs === null || (statusCode !== 429 && statusCode !== 503)) return null;
  return Math.min(policy.retryMaxDelayMs, retryAfterMs);
}

/** Success completes; a failure is retried while retries remain (with backoff, or Retry-After on 429/503), else FAILED. */
export function nextAfterAttempt(policy: RetryPolicy, facts: AttemptFacts, now: number, random: () => number = Math.random): AttemptNext {
  if (facts.outcome === 'success') return { kind: 'complete' };
  if (stopsJob(policy, facts)) return { kind: 'fail' };
  if (facts.attemptNumber > facts.maxRetries) return { kind: 'fail' };
  const backoff = backoffMs(policy, facts.attemptNumber, random);
  const held = backpressureMs(policy, facts.statusCode, facts.retryAfterMs);
  return { kind: 'retry', runAt: now + (held === null ? backoff : Math.min(policy.retryMaxDelayMs, Math.max(backoff, held))) };
}
