import type { Clock } from '../../clock.js';
import { addressBucket } from './address-bucket.js';

/**
 * Wrong passwords (at login, and for the current password when changing it), counted over a
 * sliding window in three buckets, and answered by slowing down, never by locking out:
 *
 * - one account from one address: the strict bucket, the one an attacker guessing a password
 *   fills. It is keyed by the pair so that guesses from the attacker's address do not hold back
 *   the account's owner at another one (a per-account lock let anyone lock anyone out, the
 *   operator included, with five wrong passwords);
 * - one address, every account: looser, against one address trying a few passwords on many
 *   accounts (and loose enough for an office behind one NAT);
 * - one account, every address: much looser still, against guesses spread over many addresses.
 *   It is the one bucket an attacker can fill for someone else, so it is not checked for an
 *   address the account has logged in from lately (see KNOWN_ADDRESS_MS): the owner at home gets
 *   in whatever a botnet does, and only a login from a new address waits.
 *
 * A bucket's first failures in the window are free; past them each further attempt waits, from
 * the bucket's latest failure, a delay that doubles with every failure (1 s, 2 s, 4 s … 60 s). So
 * a guesser is held to about one try a minute per bucket, while the right password, once the wait
 * is over, still logs in. Addresses are counted as addressBucket gives them (IPv6 by /64).
 *
 * Kept in this process's memory: with several instances each counts alone (an attacker spread
 * across N instances gets N times the attempts), and a restart forgets. That bounds online guessing
 * well enough for a dashboard whose passwords are scrypt-hashed; REDIS_URL is not used for it (yet).
 */
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/**
 * Failures in the window before each further attempt is delayed. The account-wide allowance is
 * above what one address can reach in a window at its own pace (5 free, then 1 + 2 + … + 32 s and
 * one a minute: about 24), so a guesser needs several addresses before the owner notices anything.
 */
export const FAILURES_BEFORE_DELAY = { accountAtAddress: 5, address: 20, account: 50 } as const;
/** The wait after the first failure past a bucket's allowance; it doubles with each failure after. */
export const FIRST_DELAY_MS = 1000;
/** The longest wait: a delay, not a lock; past it one try a minute per bucket gets through. */
export const MAX_DELAY_MS = 60 * 1000;
/** How long a right password exempts its account and address from the account-wide bucket. */
export const KNOWN_ADDRESS_MS = 30 * 24 * 60 * 60 * 1000;
/** Buckets, and known account-and-address pairs, tracked at once by default; past it one is evicted per new one. */
const MAX_TRACKED = 100_000;
/**
 * Longer text cannot be an account (emails are at most 254 characters) or an IP address; cutting
 * keys keeps MAX_TRACKED a bound on memory however long the email field or X-Forwarded-For is.
 */
const MAX_KEY_TEXT = 256;

type Bucket = keyof typeof FAILURES_BEFORE_DELAY;

/** One attempt, counted as a failure in each of its buckets from the moment it was let through. */
interface LoginAttempt {
  readonly keys: readonly [accountAtAddress: string, address: string, account: string];
  readonly at: number;
}

type LoginReservation = { attempt: LoginAttempt } | { retryAfterSeconds: number };

const bucketOf = (key: string) => key.slice(0, key.indexOf(':')) as Bucket;

/** The wait after a bucket's latest failure before another attempt, given its failures in the window. */
export function delayAfter(failures: number, allowance: number): number {
  return failures < allowance ? 0 : Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (failures - allowance));
}

export class LoginThrottle {
  /** Failure times of buckets below their allowance, and of buckets past it; each map in order of its keys' latest failure, oldest first. */
  private readonly counting = new Map<string, number[]>();
  private readonly delaying = new Map<string, number[]>();
  /** Account-and-address keys to the time of their latest right password, oldest first. */
  private readonly known = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly maxTracked = MAX_TRACKED,
  ) {}

  get trackedKeys(): number {
    return this.counting.size + this.delaying.size;
  }

  get knownAddresses(): number {
    return this.known.size;
  }

  private recent(key: string, now: number): number[] {
    return (this.counting.get(key) ?? this.delaying.get(key) ?? []).filter((t) => t > now - LOGIN_WINDOW_MS);
  }

  private allowance(key: string): number {
    return FAILURES_BEFORE_DELAY[bucketOf(key)];
  }

  /** When the bucket lets the next attempt through: its latest failure plus the delay its count has earned. */
  private openAt(key: string, now: number): number {
    const times = this.recent(key, now);
    const delay = delayAfter(times.length, this.allowance(key));
    return delay === 0 ? now : times[times.length - 1]! + delay;
  }

  /** Sets a key's failures, at the end of the order of the map its count puts it in. */
  private put(key: string, times: number[]): void {
    this.counting.delete(key);
    this.delaying.delete(key);
    if (times.length === 0) return;
    if (this.trackedKeys >= this.maxTracked) this.evictOne();
    (times.length >= this.allowance(key) ? this.delaying : this.counting).set(key, times);
  }

  /**
   * Lets an attempt through, counting it as a failure before its password is checked, or says how
   * many seconds to wait. The check and the count are one synchronous step: attempts in flight at
   * the same time cannot all pass the check before any of them is counted, so N parallel guesses
   * get no more tries than N guesses one after another. The cost: while a right password is being
   * checked it counts too, so a burst of correct logins at one instant can briefly be delayed.
   */
  reserve(account: string, address: string): LoginReservation {
    const now = this.clock.now();
    const where = addressBucket(address.slice(0, MAX_KEY_TEXT));
    const who = account.slice(0, MAX_KEY_TEXT);
    // JSON keeps the pair unambiguous whatever characters the typed email holds.
    const keys = [`accountAtAddress:${JSON.stringify([who, where])}`, `address:${where}`, `account:${who}`] as const;
    const knownAt = this.known.get(keys[0]);
    const checked = knownAt !== undefined && knownAt > now - KNOWN_ADDRESS_MS ? keys.slice(0, 2) : keys;
    const openAt = Math.max(...checked.map((key) => this.openAt(key, now)));
    if (openAt > now) return { retryAfterSeconds: Math.ceil((openAt - now) / 1000) };
    for (const key of keys) this.put(key, [...this.recent(key, now), now]);
    return { attempt: { keys, at: now } };
  }

  /**
   * The password was right. The account-and-address bucket is cleared (its failures were most
   * likely the owner's own typing) and the pair remembered as known; the attempt is forgiven in the
   * other two, which keep their counts: one good password must not reset a spray from the address,
   * nor hand a distributed guesser a fresh account-wide allowance whenever the owner logs in.
   */
  succeeded(attempt: LoginAttempt): void {
    const [pair, address, account] = attempt.keys;
    this.put(pair, []);
    this.forgive(address, attempt.at);
    this.forgive(account, attempt.at);
    this.known.delete(pair);
    // Only a right password adds an entry here, so no guesser can flush the owner's out.
    if (this.known.size >= this.maxTracked) this.known.delete(this.known.keys().next().value!);
    this.known.set(pair, attempt.at);
  }

  /** No password was checked (the database failed, say): the attempt counts against nobody. */
  release(attempt: LoginAttempt): void {
    for (const key of attempt.keys) this.forgive(key, attempt.at);
  }

  private forgive(key: string, at: number): void {
    const times = this.counting.get(key) ?? this.delaying.get(key);
    const index = times?.indexOf(at) ?? -1;
    if (index >= 0) this.put(key, [...times!.slice(0, index), ...times!.slice(index + 1)]);
  }

  /**
   * Makes room for one key. Clearing everything at the cap would let a spray of made-up emails or
   * addresses wipe the count of the account it targets. Instead a bucket whose failures have aged
   * back under its allowance goes first, then the bucket under its allowance that failed longest
   * ago; a delaying bucket goes only when every bucket is delaying, so a guesser's earned delay
   * stays until `maxTracked` other buckets have earned one after it. Each choice is the first
   * entry of a map: no walk over the table while logins wait.
   */
  private evictOne(): void {
    const oldestDelaying: string | undefined = this.delaying.keys().next().value;
    const oldestCounting: string | undefined = this.counting.keys().next().value;
    const delayRanOut = oldestDelaying !== undefined && this.recent(oldestDelaying, this.clock.now()).length < this.allowance(oldestDelaying);
    if (delayRanOut || oldestCounting === undefined) this.delaying.delete(oldestDelaying!);
    else this.counting.delete(oldestCounting);
  }
}
