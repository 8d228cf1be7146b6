import { lookup } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { SCRYPT_CONCURRENCY, SCRYPT_QUEUE_LIMIT, hashPassword, verifyPassword } from '../../src/crypto/passwords.js';
import { UnavailableError } from '../../src/errors.js';

describe('password checks and the libuv thread pool', () => {
  it('leaves a thread for DNS lookups while a flood of passwords is being checked, checking every one in turn', async () => {
    const stored = await hashPassword('the right password');
    const flood = 24;
    let checked = 0;
    const checks = Array.from({ length: flood }, (_, i) =>
      verifyPassword(i === flood - 1 ? 'the right password' : `wrong ${i}`, stored).then((ok) => {
        checked += 1;
        return ok;
      }),
    );
    // dns.lookup (getaddrinfo) runs on the same pool as scrypt: were every check queued there, the
    // lookup would wait behind all of them.
    const checkedBeforeLookup = await new Promise<number>((resolve, reject) => lookup('localhost', (error) => (error ? reject(error) : resolve(checked))));
    expect(checkedBeforeLookup).toBeLessThan(flood / 2);
    const results = await Promise.all(checks);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(results.at(-1)).toBe(true);
  });

  it('turns checks away with UNAVAILABLE once SCRYPT_QUEUE_LIMIT are waiting, and checks the rest', async () => {
    const stored = await hashPassword('the right password');
    const accepted = SCRYPT_CONCURRENCY + SCRYPT_QUEUE_LIMIT;
    const results = await Promise.allSettled(Array.from({ length: accepted + 5 }, () => verifyPassword('the right password', stored)));
    expect(results.slice(0, accepted).every((r) => r.status === 'fulfilled' && r.value === true)).toBe(true);
    const refused = results.slice(accepted);
    expect(refused.every((r) => r.status === 'rejected' && r.reason instanceof UnavailableError)).toBe(true);
    // Once the queue drains, checks are taken again.
    expect(await verifyPassword('the right password', stored)).toBe(true);
  });
});
