import type { Clock } from '../clock.js';

/**
 * Failed logins, counted per account and per client address over a sliding window. Kept in this
 * process's memory: with several instances each counts alone (an attacker spread across N
 * instances gets N times the attempts), and a restart forgets. That bounds online guessing well
 * enough for a dashboard whose passwords are scrypt-hashed; REDIS_URL is not used for it (yet).
 */
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Five wrong passwords for one account in 15 minutes lock that account's logins until the oldest ages out. */
export const LOGIN_FAILURES_PER_ACCOUNT = 5;
/** An address is allowed more, so one office behind one NAT is not locked out by a single person. */
export const LOGIN_FAILURES_PER_ADDRESS = 20;
/** Bounded memory under a spray of addresses or emails: the map is cleared rather than grown. */
const MAX_TRACKED = 100_000;

export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly clock: Clock) {}

  private recent(key: string, now: number): number[] {
    const times = (this.failures.get(key) ?? []).filter((t) => t > now - LOGIN_WINDOW_MS);
    if (times.length === 0) this.failures.delete(key);
    else this.failures.set(key, times);
    return times;
  }

  /** Seconds until a login for this account from this address may be tried again; 0 when it may now. */
  retryAfterSeconds(email: string, address: string): number {
    const now = this.clock.now();
    let until = 0;
    for (const [key, limit] of [[`account:${email}`, LOGIN_FAILURES_PER_ACCOUNT], [`address:${address}`, LOGIN_FAILURES_PER_ADDRESS]] as const) {
      const times = this.recent(key, now);
      if (times.length >= limit) until = Math.max(until, times[times.length - limit]! + LOGIN_WINDOW_MS);
    }
    return until === 0 ? 0 : Math.max(1, Math.ceil((until - now) / 1000));
  }

  recordFailure(email: string, address: string): void {
    const now = this.clock.now();
    if (this.failures.size >= MAX_TRACKED) this.failures.clear();
    for (const key of [`account:${email}`, `address:${address}`]) this.failures.set(key, [...this.recent(key, now), now]);
  }

  /** A correct password clears the account's count (not the address's: one good account must not reset a spray). */
  recordSuccess(email: string): void {
    this.failures.delete(`account:${email}`);
  }
}
