import { describe, expect, it } from 'vitest';
import { cachedZoneCount, MAX_ZONES, TimeZone } from '../../src/cron/time-zone.js';

/** Every spelling of `name` that differs only in letter case, up to `count` of them. */
function caseSpellings(name: string, count: number): string[] {
  const letters = [...name].map((char, index) => ({ char, index })).filter(({ char }) => /[a-z]/i.test(char));
  const spellings: string[] = [];
  for (let mask = 0; mask < Math.min(count, 2 ** letters.length); mask++) {
    const chars = [...name];
    letters.forEach(({ index }, bit) => {
      chars[index] = mask & (1 << bit) ? chars[index]!.toUpperCase() : chars[index]!.toLowerCase();
    });
    spellings.push(chars.join(''));
  }
  return spellings;
}

describe('time zones by name (SPEC section 9)', () => {
  it('names a zone as the runtime does, whatever the letter case it was given in', () => {
    expect(TimeZone.named('eUrOpE/pArIs').name).toBe('Europe/Paris');
    expect(TimeZone.named('utc').name).toBe('UTC');
    expect(() => TimeZone.named('Mars/Olympus')).toThrow(/not an IANA time zone/);
  });

  it('keeps one cache entry per zone, not one per spelling', () => {
    TimeZone.named('Europe/Paris');
    const before = cachedZoneCount();
    const spellings = caseSpellings('Europe/Paris', 2048);
    expect(spellings.length).toBe(2048);
    for (const spelling of spellings) expect(TimeZone.named(spelling).name).toBe('Europe/Paris');
    expect(cachedZoneCount()).toBe(before);
  });

  it('never caches more than its bound, even for every zone the runtime knows in several spellings', () => {
    for (const zone of Intl.supportedValuesOf('timeZone')) {
      for (const spelling of [zone, zone.toLowerCase(), zone.toUpperCase()]) TimeZone.named(spelling);
    }
    expect(cachedZoneCount()).toBeLessThanOrEqual(MAX_ZONES);
    // Unknown names are refused and never cached.
    const before = cachedZoneCount();
    for (let i = 0; i < 100; i++) expect(() => TimeZone.named(`Nowhere/Place${i}`)).toThrow();
    expect(cachedZoneCount()).toBe(before);
  });
});
