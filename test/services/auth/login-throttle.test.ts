import { describe, expect, it } from 'vitest';
import { TestClock } from '../../../src/clock.js';
import { addressBucket } from '../../../src/services/auth/address-bucket.js';
import { FAILURES_BEFORE_DELAY, LOGIN_WINDOW_MS, LoginThrottle, MAX_DELAY_MS } from '../../../src/services/auth/login-throttle.js';

const PER_PAIR = FAILURES_BEFORE_DELAY.accountAtAddress;

/** A wrong password, which the throttle must let through. */
function fail(throttle: LoginThrottle, email: string, address: string): void {
  if (!('attempt' in throttle.reserve(email, address))) throw new Error(`${email} from ${address} was refused`);
}

/** The right password: let through and forgiven, or the seconds to wait. */
function logIn(throttle: LoginThrottle, email: string, address: string): number | 'in' {
  const reservation = throttle.reserve(email, address);
  if ('retryAfterSeconds' in reservation) return reservation.retryAfterSeconds;
  throttle.succeeded(reservation.attempt);
  return 'in';
}

const waitFor = (throttle: LoginThrottle, email: string, address: string) => {
  const reservation = throttle.reserve(email, address);
  if ('attempt' in reservation) throw new Error(`${email} from ${address} was let through`);
  return reservation.retryAfterSeconds;
};

/**
 * Wrong passwords for one account from one address, each as soon as the throttle lets it through
 * (waiting each Retry-After on the clock), for at least `forMs` and ending with a failure; the
 * waits it was given, in order.
 */
function guessAsFastAsAllowed(throttle: LoginThrottle, clock: TestClock, email: string, address: string, forMs: number): number[] {
  const waits: number[] = [];
  for (const end = clock.now() + forMs; ; ) {
    const reservation = throttle.reserve(email, address);
    if ('attempt' in reservation) {
      if (clock.now() >= end) return waits;
    } else {
      waits.push(reservation.retryAfterSeconds);
      clock.advance(reservation.retryAfterSeconds * 1000);
    }
  }
}

describe('addressBucket', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::FFFF:C000:0201', '192.0.2.1'],
    ['2001:db8:1:2::a', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:ffff:0:0:1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:3:4:198.51.100.7', '2001:db8:1:2::/64'],
    ['2001:db8::', '2001:db8:0:0::/64'],
    ['2001:db8:0:0:1::', '2001:db8:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['not an address', 'not an address'],
  ])('counts %s as %s', (address, bucket) => {
    expect(addressBucket(address)).toBe(bucket);
  });

  it('tells apart /64 prefixes that differ in any of their four groups', () => {
    const buckets = ['2001:db8:1:2::1', '2001:db8:1:3::1', '2001:db8:2:2::1', '2001:db9:1:2::1', '2002:db8:1:2::1'].map(addressBucket);
    expect(new Set(buckets).size).toBe(5);
  });
});

describe('login throttle', () => {
  it('slows one account at one address after five failures, doubling the wait up to a minute, and lets the right password in after it', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock);
    for (let i = 0; i < PER_PAIR; i += 1) fail(throttle, 'operator@example.com', '198.51.100.7');
    const waits: number[] = [];
    for (let i = 0; i < 9; i += 1) {
      const wait = waitFor(throttle, 'operator@example.com', '198.51.100.7');
      waits.push(wait);
      clock.advance(wait * 1000 - 1);
      // A millisecond early is still too early.
      expect(waitFor(throttle, 'operator@example.com', '198.51.100.7')).toBe(1);
      clock.advance(1);
      fail(throttle, 'operator@example.com', '198.51.100.7');
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
    clock.advance(MAX_DELAY_MS);
    expect(logIn(throttle, 'operator@example.com', '198.51.100.7')).toBe('in');
    // The right password cleared the pair: five more wrong ones before the next wait.
    for (let i = 0; i < PER_PAIR; i += 1) fail(throttle, 'operator@example.com', '198.51.100.7');
    expect(waitFor(throttle, 'operator@example.com', '198.51.100.7')).toBe(1);
  });

  it("does not hold one address's wrong passwords against the account's owner at another", () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock);
    const waits = guessAsFastAsAllowed(throttle, clock, 'operator@example.com', '198.51.100.7', 2 * LOGIN_WINDOW_MS);
    expect(Math.max(...waits)).toBe(MAX_DELAY_MS / 1000);
    expect(waitFor(throttle, 'operator@example.com', '198.51.100.7')).toBe(MAX_DELAY_MS / 1000);
    // Never seen before, and the attacker has been guessing for two windows: no wait at all.
    expect(logIn(throttle, 'operator@example.com', '203.0.113.9')).toBe('in');
  });

  it('slows an account guessed from many addresses at every new one, by seconds, but not where its owner has logged in', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock);
    expect(logIn(throttle, 'operator@example.com', '192.0.2.1')).toBe('in');
    // Five guesses (each pair's allowance) from each of ten /64s.
    for (let i = 0; i < FAILURES_BEFORE_DELAY.account; i += 1) fail(throttle, 'operator@example.com', `2001:db8:${Math.floor(i / PER_PAIR)}::${i}`);
    expect(waitFor(throttle, 'operator@example.com', '198.51.100.20')).toBe(1);
    expect(waitFor(throttle, 'operator@example.com', '2001:db8:ff::1')).toBe(1);
    expect(logIn(throttle, 'operator@example.com', '192.0.2.1')).toBe('in');
    // A guesser with an address for every try is still held to the account-wide pace, at most a minute apart.
    const waits: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const wait = waitFor(throttle, 'operator@example.com', `2001:db8:100:${i}::1`);
      waits.push(wait);
      clock.advance(wait * 1000);
      fail(throttle, 'operator@example.com', `2001:db8:100:${i}::1`);
    }
    expect(waits.slice(0, 8)).toEqual([1, 2, 4, 8, 16, 32, 60, 60]);
    expect(Math.max(...waits)).toBe(MAX_DELAY_MS / 1000);
    expect(logIn(throttle, 'operator@example.com', '192.0.2.1')).toBe('in');
    // Nobody is kept out for good: once the wait is over, a new address gets in too.
    clock.advance(MAX_DELAY_MS);
    expect(logIn(throttle, 'operator@example.com', '198.51.100.20')).toBe('in');
  });

  it('forgets a known address after KNOWN_ADDRESS_MS', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock);
    expect(logIn(throttle, 'operator@example.com', '192.0.2.1')).toBe('in');
    clock.advance(31 * 24 * 60 * 60 * 1000);
    for (let i = 0; i < FAILURES_BEFORE_DELAY.account; i += 1) fail(throttle, 'operator@example.com', `2001:db8:${Math.floor(i / PER_PAIR)}::1`);
    expect(waitFor(throttle, 'operator@example.com', '192.0.2.1')).toBe(1);
  });

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 address', () => {
    const throttle = new LoginThrottle(new TestClock());
    // A spray of one guess at each of many accounts, from a new address of one /64 each time.
    for (let i = 0; i < FAILURES_BEFORE_DELAY.address; i += 1) fail(throttle, `spray${i}@example.com`, `2001:db8:1:2::${(i + 1).toString(16)}`);
    expect(waitFor(throttle, 'another@example.com', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe(1);
    expect(logIn(throttle, 'another@example.com', '2001:db8:1:3::1')).toBe('in');
    // One account from one IPv4 client, whichever way its socket spells the address.
    for (let i = 0; i < PER_PAIR; i += 1) fail(throttle, 'mapped@example.com', i % 2 ? '192.0.2.44' : '::ffff:192.0.2.44');
    expect(waitFor(throttle, 'mapped@example.com', '192.0.2.44')).toBe(1);
    expect(waitFor(throttle, 'mapped@example.com', '::ffff:c000:22c')).toBe(1);
  });

  it('refuses all but the allowance of guesses reserved at one instant, before any is answered', () => {
    const throttle = new LoginThrottle(new TestClock());
    const answers = Array.from({ length: 12 }, () => throttle.reserve('parallel@example.com', '198.51.100.3'));
    expect(answers.filter((answer) => 'attempt' in answer)).toHaveLength(PER_PAIR);
  });
});

/** The login throttle when its table is full: what goes, and what must stay. */
describe('login throttle at its memory bound', () => {
  const TABLE = 1_000;

  it('holds an attempt released before any password was checked against nobody', () => {
    const throttle = new LoginThrottle(new TestClock(), TABLE);
    for (let i = 0; i < PER_PAIR * 2; i += 1) {
      const reservation = throttle.reserve('outage@example.com', '192.0.2.9');
      if (!('attempt' in reservation)) throw new Error('refused');
      throttle.release(reservation.attempt);
    }
    expect(throttle.trackedKeys).toBe(0);
  });

  it('keeps a slowed account slowed while a spray from many addresses overflows the table', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, TABLE);
    for (let i = 0; i < PER_PAIR; i += 1) fail(throttle, 'target@example.com', '198.51.100.1');
    // Each failure adds an account, an address and their pair: fifteen times the table's size in
    // keys, all in the millisecond in which the target must still wait.
    for (let i = 0; i < TABLE * 5; i += 1) fail(throttle, `spray${i}@example.com`, `2001:db8:${i.toString(16)}::1`);
    expect(throttle.trackedKeys).toBe(TABLE);
    expect(waitFor(throttle, 'target@example.com', '198.51.100.1')).toBe(1);
  });

  it('evicts the key that failed longest ago, keeping the latest counts', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, TABLE);
    const failuresEach = PER_PAIR - 1;
    // Each account tried from its own address: three keys, enough accounts to fill the table twice.
    const accounts = Math.ceil((2 * TABLE) / 3);
    for (let i = 0; i < accounts; i += 1) {
      clock.advance(1);
      for (let j = 0; j < failuresEach; j += 1) fail(throttle, `user${i}@example.com`, `10.${i >> 8}.${i & 255}.1`);
    }
    expect(throttle.trackedKeys).toBe(TABLE);
    // user0's failures are forgotten (fail would throw at a wait); the newest account still has its four and waits after a fifth.
    for (let j = 0; j < failuresEach; j += 1) fail(throttle, 'user0@example.com', '10.0.0.1');
    fail(throttle, `user${accounts - 1}@example.com`, `10.${(accounts - 1) >> 8}.${(accounts - 1) & 255}.1`);
    expect(waitFor(throttle, `user${accounts - 1}@example.com`, `10.${(accounts - 1) >> 8}.${(accounts - 1) & 255}.1`)).toBe(1);
  });

  it('evicts a slowed key whose failures have aged out before a key that is still counting', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, 6);
    for (let i = 0; i < PER_PAIR; i += 1) fail(throttle, 'old@example.com', '192.0.2.1');
    clock.advance(LOGIN_WINDOW_MS - 10);
    fail(throttle, 'counting@example.com', '192.0.2.2');
    clock.advance(20);
    // The old pair no longer slows anyone but is still in the table, with its address and account
    // (counting, and older than counting@'s keys). A newcomer's three keys need room.
    fail(throttle, 'newcomer@example.com', '198.51.100.1');
    expect(throttle.trackedKeys).toBe(6);
    // counting@'s first failure was kept: four more and it waits.
    for (let i = 1; i < PER_PAIR; i += 1) fail(throttle, 'counting@example.com', '192.0.2.2');
    expect(waitFor(throttle, 'counting@example.com', '192.0.2.2')).toBe(1);
  });

  it('remembers at most its bound of known addresses, only ever added by a right password', () => {
    const throttle = new LoginThrottle(new TestClock(), 10);
    for (let i = 0; i < 25; i += 1) expect(logIn(throttle, 'traveller@example.com', `198.51.100.${i}`)).toBe('in');
    for (let i = 0; i < 25; i += 1) fail(throttle, `guesser${i}@example.com`, `203.0.113.${i}`);
    expect(throttle.knownAddresses).toBe(10);
  });
});
