import { describe, expect, it } from 'vitest';
import { backoffMs, nextAfterAttempt, parseRetryAfter } from '../../src/delivery/retry-policy.js';

const policy = { retryInitialDelayMs: 30_000, retryFactor: 4, retryMaxDelayMs: 3_600_000 };
const NOW = Date.parse('2027-01-01T00:00:00Z');

describe('retry policy (SPEC section 4)', () => {
  it('waits about 30 s, 2 min, 8 min with the defaults, plus up to 10% jitter', () => {
    expect([1, 2, 3].map((n) => backoffMs(policy, n, () => 0))).toEqual([30_000, 120_000, 480_000]);
    expect([1, 2, 3].map((n) => backoffMs(policy, n, () => 0.999999))).toEqual([33_000, 132_000, 528_000]);
  });

  it('caps the wait at maxDelay before jitter', () => {
    expect(backoffMs(policy, 10, () => 0)).toBe(3_600_000);
    expect(backoffMs(policy, 10, () => 0.5)).toBe(3_780_000);
  });

  it('completes on success, retries while retries remain, then fails', () => {
    const facts = { outcome: 'http_error' as const, statusCode: 500, retryAfterMs: null, maxRetries: 2 };
    expect(nextAfterAttempt(policy, { ...facts, outcome: 'success', attemptNumber: 1 }, NOW)).toEqual({ kind: 'complete' });
    expect(nextAfterAttempt(policy, { ...facts, attemptNumber: 1 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 30_000 });
    expect(nextAfterAttempt(policy, { ...facts, attemptNumber: 2 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 120_000 });
    expect(nextAfterAttempt(policy, { ...facts, attemptNumber: 3 }, NOW, () => 0)).toEqual({ kind: 'fail' });
    expect(nextAfterAttempt(policy, { ...facts, maxRetries: 0, attemptNumber: 1 }, NOW)).toEqual({ kind: 'fail' });
  });

  it('takes the larger of backoff and Retry-After on 429 and 503, capped at maxDelay; ignores it otherwise', () => {
    const base = { outcome: 'http_error' as const, attemptNumber: 1, maxRetries: 3 };
    expect(nextAfterAttempt(policy, { ...base, statusCode: 429, retryAfterMs: 300_000 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 300_000 });
    expect(nextAfterAttempt(policy, { ...base, statusCode: 503, retryAfterMs: 5_000 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 30_000 });
    expect(nextAfterAttempt(policy, { ...base, statusCode: 429, retryAfterMs: 99_999_999 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 3_600_000 });
    expect(nextAfterAttempt(policy, { ...base, statusCode: 500, retryAfterMs: 300_000 }, NOW, () => 0)).toEqual({ kind: 'retry', runAt: NOW + 30_000 });
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter(new Date(NOW - 90_000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfter('soon', NOW)).toBeNull();
    expect(parseRetryAfter(undefined, NOW)).toBeNull();
    expect(parseRetryAfter('-5', NOW)).toBeNull();
  });
});
