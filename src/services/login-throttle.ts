import type { Clock } from '../clock.js';
import { addressBucket } from './address-bucket.js';

/**
 * Failed logins, counted per account and per client address over a sliding window. Kept in this
 * process's memory: with several instances each counts alone (an attacker spread across N
 * instances gets N times the attempts), and a restart forgets. That bounds online guessing well
 * enough for a dashboard whose passwords are scrypt-hashed; REDIS_URL is not used for it (yet).
 * Addresses are counted as addressBucket gives them: IPv6 by /64.
 */
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Five wrong passwords for one account in 15 minutes lock that account's logins until the oldest ages out. */
export const LOGIN_FAILURES_PER_ACCOUNT = 5;
/** An address is allowed more, so one office behind one NAT is not locked out by a single person. */
export const LOGIN_FAILURES_PER_ADDRESS = 20;
/** Accounts and addresses tracked at once, by default; past it, one is evicted per new one (see evictOne). */
const MAX_TRACKED = 100_000;
/**
 * Longer text cannot be an account (emails are at most 254 characters) or an IP address; cutting
 * keys keeps MAX_TRACKED a bound on memory however long the email field or X-Forwarded-For is.
 */
const MAX_KEY_TEXT = 256;

/** One login attempt, counted as a failure from the moment it was let through. */
interface LoginAttempt {
  readonly keys: readonly [accountKey: string, addressKey: string];
  readonly at: number;
}

type LoginReservation = { attempt: LoginAttempt } | { retryAfterSeconds: number };

const limitOf = (key: string) => (key.startsWith('account:') ? LOGIN_FAILURES_PER_ACCOUNT : LOGIN_FAILURES_PER_ADDRESS);

export class LoginThrottle {
  /** Failure times of keys below their limit, and of keys at it; each map in order of its keys' latest failure, oldest first. */
  private readonly counting = new Map<string, number[]>();
  private readonly locked = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly maxTracked = MAX_TRACKED,
  ) {}

  get trackedKeys(): number {
    return this.counting.size + this.locked.size;
  }

  private recent(key: string, now: number): number[] {
    return (this.counting.get(key) ?? this.locked.get(key) ?? []).filter((t) => t > now - LOGIN_WINDOW_MS);
  }

  /** Sets a key's failures, at the end of the order of the map its count puts it in. */
  private put(key: string, times: number[]): void {
    this.counting.delete(key);
    this.locked.delete(key);
    if (times.length === 0) return;
    if (this.trackedKeys >= this.maxTracked) this.evictOne();
    (times.length >= limitOf(key) ? this.locked : this.counting).set(key, times);
  }

  /**
   * Lets a login attempt through, counting it as a failure before its password is checked, or
   * says how many seconds to wait. The check and the count are one synchronous step: logins
   * in flight at the same time cannot all pass the check before any of them is counted, so N
   * parallel guesses get no more tries than N guesses one after another. The cost: while a right
   * password is being checked it counts too, so a burst of correct logins at one instant can
   * briefly hit the limit.
   */
  reserve(email: string, address: string): LoginReservation {
    const now = this.clock.now();
    const keys = [`account:${email.slice(0, MAX_KEY_TEXT)}`, `address:${addressBucket(address.slice(0, MAX_KEY_TEXT))}`] as const;
    let until = 0;
    for (const key of keys) {
      const times = this.recent(key, now);
      if (times.length >= limitOf(key)) until = Math.max(until, times[times.length - limitOf(key)]! + LOGIN_WINDOW_MS);
    }
    if (until > 0) return { retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) };
    for (const key of keys) this.put(key, [...this.recent(key, now), now]);
    return { attempt: { keys, at: now } };
  }

  /** The password was right: the account's count is cleared (not the address's: one good account must not reset a spray), the attempt forgiven. */
  succeeded(attempt: LoginAttempt): void {
    this.put(attempt.keys[0], []);
    this.forgive(attempt.keys[1], attempt.at);
  }

  /** No password was checked (the database failed, say): the attempt counts against nobody. */
  release(attempt: LoginAttempt): void {
    for (const key of attempt.keys) this.forgive(key, attempt.at);
  }

  private forgive(key: string, at: number): void {
    const times = this.counting.get(key) ?? this.locked.get(key);
    const index = times?.indexOf(at) ?? -1;
    if (index >= 0) this.put(key, [...times!.slice(0, index), ...times!.slice(index + 1)]);
  }

  /**
   * Makes room for one key. Clearing everything at the cap would let a spray of made-up emails or
   * addresses wipe the count of the account it targets. Instead a key whose lock has run out goes
   * first, then the key below its limit that failed longest ago; a locked key goes only when every
   * key is locked, so a locked account stays locked until an attacker has locked `maxTracked`
   * others after it (five failures each, from enough addresses). Each choice is the first entry of
   * a map: no walk over the table while logins wait.
   */
  private evictOne(): void {
    const oldestLocked: string | undefined = this.locked.keys().next().value;
    const oldestCounting: string | undefined = this.counting.keys().next().value;
    const lockRanOut = oldestLocked !== undefined && this.recent(oldestLocked, this.clock.now()).length < limitOf(oldestLocked);
    if (lockRanOut || oldestCounting === undefined) this.locked.delete(oldestLocked!);
    else this.counting.delete(oldestCounting);
  }
}
