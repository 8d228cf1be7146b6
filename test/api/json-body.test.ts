import { describe, expect, it } from 'vitest';
import { JSON_MAX_DEPTH, jsonNestsDeeperThan } from '../../src/api/json-body.js';

describe('jsonNestsDeeperThan', () => {
  const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

  it('allows the limit and refuses one level more', () => {
    expect(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH), JSON_MAX_DEPTH)).toBe(false);
    expect(jsonNestsDeeperThan(nested(JSON_MAX_DEPTH + 1), JSON_MAX_DEPTH)).toBe(true);
    expect(jsonNestsDeeperThan(`{"a":${nested(JSON_MAX_DEPTH)}}`, JSON_MAX_DEPTH)).toBe(true);
  });

  it('counts depth, not brackets: many shallow ones pass, brackets inside strings do not count', () => {
    expect(jsonNestsDeeperThan(JSON.stringify(Array.from({ length: 5_000 }, () => ({ a: [1] }))), JSON_MAX_DEPTH)).toBe(false);
    expect(jsonNestsDeeperThan(JSON.stringify({ s: '['.repeat(5_000), t: '{\\"['.repeat(500) }), JSON_MAX_DEPTH)).toBe(false);
  });
});
