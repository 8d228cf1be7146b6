import { describe, expect, it } from 'vitest';
import { newJobId } from '../src/crypto/random-ids.js';

describe('job ids', () => {
  it('carry 22 random base62 characters after a time prefix, and sort by creation time', () => {
    const ids = [0, 1, 61, 62, 1_700_000_000_000, 1_800_000_000_000, 253_402_300_799_999].map((ms) => newJobId(ms));
    for (const id of ids) expect(id).toMatch(/^job_[0-9A-Za-z]{8}[A-Za-z0-9]{22}$/);
    expect([...ids].sort()).toEqual(ids);
    const sameMs = new Set(Array.from({ length: 1000 }, () => newJobId(5)));
    expect(sameMs.size).toBe(1000);
  });
});
