import { describe, expect, it } from 'vitest';
import { newJobId, randomBase62 } from '../../src/crypto/random-ids.js';

describe('job ids', () => {
  it('carry 22 random base62 characters after a time prefix, and sort by creation time', () => {
    const ids = [0, 1, 61, 62, 1_700_000_000_000, 1_800_000_000_000, 253_402_300_799_999].map((ms) => newJobId(ms));
    for (const id of ids) expect(id).toMatch(/^job_[0-9A-Za-z]{8}[A-Za-z0-9]{22}$/);
    expect([...ids].sort()).toEqual(ids);
    const sameMs = new Set(Array.from({ length: 1000 }, () => newJobId(5)));
    expect(sameMs.size).toBe(1000);
  });

  it('draw every base62 character about equally, across refills of the random pool', () => {
    // 20,000 × 22 characters use about 110 refills of the 4 KB pool.
    const strings = Array.from({ length: 20_000 }, () => randomBase62(22));
    expect(new Set(strings).size).toBe(strings.length);
    const counts = new Map<string, number>();
    for (const s of strings) for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (20_000 * 22) / 62;
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.1);
  });
});
