import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

const PREFIX = 'pcb_';

/**
 * The per-attempt callback token of async completion (SPEC section 11): an HMAC of the job and
 * attempt ids under a key derived from PUNCTUAL_SECRET_KEY. Nothing is stored: every instance
 * sharing the key checks a token by computing it again, and a token answers for its own job and
 * attempt only.
 */
export class CallbackTokens {
  private readonly key: Buffer;

  constructor(secretKey: string) {
    this.key = Buffer.from(hkdfSync('sha256', secretKey, 'punctual', 'callback-tokens v1', 32));
  }

  issue(jobId: string, attemptId: string): string {
    return PREFIX + this.mac(jobId, attemptId).toString('base64url');
  }

  /** True when `token` is the one issued for this job and attempt. */
  verify(token: string, jobId: string, attemptId: string): boolean {
    if (!token.startsWith(PREFIX)) return false;
    const given = Buffer.from(token.slice(PREFIX.length), 'base64url');
    const expected = this.mac(jobId, attemptId);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(jobId: string, attemptId: string): Buffer {
    return createHmac('sha256', this.key).update(`${jobId}\n${attemptId}`).digest();
  }
}

/** Shape check, to tell a callback token from an API key before any lookup. */
export function looksLikeCallbackToken(text: string): boolean {
  return /^pcb_[A-Za-z0-9_-]{43}$/.test(text);
}
