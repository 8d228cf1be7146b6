import { lookup } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/crypto/passwords.js';

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
});
