import { describe, expect, it } from 'vitest';
import { TestClock } from '../../src/clock.js';
import { addressBucket } from '../../src/services/address-bucket.js';
import { LOGIN_FAILURES_PER_ACCOUNT, LOGIN_FAILURES_PER_ADDRESS, LOGIN_WINDOW_MS, LoginThrottle } from '../../src/services/login-throttle.js';

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

  it('counts a spray from many addresses of one /64 as one address, and an IPv4-mapped address as the IPv4 address', () => {
    const throttle = new LoginThrottle(new TestClock());
    const refused = (email: string, address: string) => 'retryAfterSeconds' in throttle.reserve(email, address);
    for (let i = 0; i < LOGIN_FAILURES_PER_ADDRESS; i += 1) expect(refused(`spray${i}@example.com`, `2001:db8:1:2::${(i + 1).toString(16)}`)).toBe(false);
    expect(refused('another@example.com', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe(true);
    expect(refused('another@example.com', '2001:db8:1:3::1')).toBe(false);
    for (let i = 0; i < LOGIN_FAILURES_PER_ADDRESS; i += 1) expect(refused(`mapped${i}@example.com`, i % 2 ? '192.0.2.44' : '::ffff:192.0.2.44')).toBe(false);
    expect(refused('another@example.com', '192.0.2.44')).toBe(true);
    expect(refused('another@example.com', '::ffff:192.0.2.45')).toBe(false);
  });
});

/** The login throttle when its table is full: what goes, and what must stay. */
describe('login throttle at its memory bound', () => {
  const TABLE = 1_000;

  function fail(throttle: LoginThrottle, email: string, address: string): void {
    if (!('attempt' in throttle.reserve(email, address))) throw new Error(`${email} from ${address} was refused`);
  }
  const locked = (throttle: LoginThrottle, email: string, address: string) => 'retryAfterSeconds' in throttle.reserve(email, address);

  it('holds an attempt released before any password was checked against nobody', () => {
    const throttle = new LoginThrottle(new TestClock(), TABLE);
    for (let i = 0; i < LOGIN_FAILURES_PER_ACCOUNT * 2; i += 1) {
      const reservation = throttle.reserve('outage@example.com', '192.0.2.9');
      if (!('attempt' in reservation)) throw new Error('refused');
      throttle.release(reservation.attempt);
    }
    expect(throttle.trackedKeys).toBe(0);
  });

  it('keeps a locked account locked while a spray from many addresses overflows the table', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, TABLE);
    for (let i = 0; i < LOGIN_FAILURES_PER_ACCOUNT; i += 1) fail(throttle, 'target@example.com', `198.51.100.${i}`);
    expect(locked(throttle, 'target@example.com', '198.51.100.200')).toBe(true);
    // Each failure adds an account and an address: ten times the table's size in keys.
    for (let i = 0; i < TABLE * 5; i += 1) {
      clock.advance(1);
      fail(throttle, `spray${i}@example.com`, `2001:db8:${i.toString(16)}::1`);
    }
    expect(throttle.trackedKeys).toBe(TABLE);
    expect(locked(throttle, 'target@example.com', '198.51.100.201')).toBe(true);
  });

  it('evicts the key that failed longest ago, keeping the latest counts', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, TABLE);
    const failuresEach = LOGIN_FAILURES_PER_ACCOUNT - 1;
    // An account and its addresses are `failuresEach + 1` keys: enough accounts to fill the table twice.
    const accounts = Math.ceil((2 * TABLE) / (failuresEach + 1));
    for (let i = 0; i < accounts; i += 1) {
      clock.advance(1);
      for (let j = 0; j < failuresEach; j += 1) fail(throttle, `user${i}@example.com`, `10.${i >> 8}.${i & 255}.${j}`);
    }
    expect(throttle.trackedKeys).toBe(TABLE);
    // user0's failures are forgotten; the newest account still has its four and locks at the fifth.
    for (let j = 0; j < failuresEach; j += 1) fail(throttle, 'user0@example.com', `203.0.113.${j}`);
    fail(throttle, `user${accounts - 1}@example.com`, '203.0.113.100');
    expect(locked(throttle, `user${accounts - 1}@example.com`, '203.0.113.101')).toBe(true);
  });

  /** A group of an address and the four accounts it tried five times each: five locked keys. */
  function lockGroup(throttle: LoginThrottle, clock: TestClock, group: string): void {
    for (let account = 0; account < LOGIN_FAILURES_PER_ADDRESS / LOGIN_FAILURES_PER_ACCOUNT; account += 1) {
      for (let i = 0; i < LOGIN_FAILURES_PER_ACCOUNT; i += 1) fail(throttle, `${group}-${account}@example.com`, `address ${group}`);
      clock.advance(1);
    }
  }

  it('evicts locked keys only when every key is locked, the oldest first', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, 10);
    lockGroup(throttle, clock, 'first');
    lockGroup(throttle, clock, 'second');
    fail(throttle, 'newcomer@example.com', 'address newcomer');
    expect(throttle.trackedKeys).toBe(10);
    // Two keys had to go: the first group's first two accounts.
    expect(locked(throttle, 'first-0@example.com', 'address 1')).toBe(false);
    expect(locked(throttle, 'first-2@example.com', 'address 2')).toBe(true);
    expect(locked(throttle, 'second-3@example.com', 'address 3')).toBe(true);
  });

  it('evicts a lock that has run out before a key that is still counting', () => {
    const clock = new TestClock();
    const throttle = new LoginThrottle(clock, 10);
    lockGroup(throttle, clock, 'old');
    clock.advance(LOGIN_WINDOW_MS - 10);
    fail(throttle, 'counting@example.com', 'address counting');
    clock.advance(20);
    // The old group's locks have run out; three new keys fill the table and a fourth needs room.
    fail(throttle, 'a@example.com', 'address new');
    fail(throttle, 'b@example.com', 'address new');
    fail(throttle, 'c@example.com', 'address new');
    expect(throttle.trackedKeys).toBe(10);
    // The first failure of counting@ was kept: four more lock it.
    for (let i = 1; i < LOGIN_FAILURES_PER_ACCOUNT; i += 1) fail(throttle, 'counting@example.com', 'address counting');
    expect(locked(throttle, 'counting@example.com', 'address counting')).toBe(true);
  });
});
