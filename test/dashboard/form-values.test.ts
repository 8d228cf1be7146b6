import { describe, expect, it } from 'vitest';
import { durationParts, formDuration, formTags, formUtcTime, utcFieldValue } from '../../src/dashboard/form-values.js';
import { durationWords, retrySchedule, retryWaits } from '../../src/dashboard/views/settings-page.js';

describe("what the dashboard's forms type", () => {
  it.each([
    ['2027-01-05 09:30', '2027-01-05T09:30:00.000Z'],
    ['2027-01-05T09:30', '2027-01-05T09:30:00.000Z'],
    ['2027-01-05 09:30:15', '2027-01-05T09:30:15.000Z'],
    ['2027-01-05 09:30 UTC', '2027-01-05T09:30:00.000Z'],
    ['2027-01-05 09:30Z', '2027-01-05T09:30:00.000Z'],
    ['2027-01-05', '2027-01-05T00:00:00.000Z'],
    ['2027-01-05T10:30:00+01:00', '2027-01-05T09:30:00.000Z'],
  ])('reads %s as a time in UTC', (typed, iso) => {
    expect(new Date(formUtcTime(typed, 'from')!).toISOString()).toBe(iso);
  });

  it.each(['tomorrow', '2027-02-30 09:30', '09:30', '2027-01-05 25:00', '5/1/2027 9:30 AM'])('refuses %s, naming the field and the form it takes', (typed) => {
    expect(() => formUtcTime(typed, 'from')).toThrow(/^from must be a date and time in UTC, such as 2027-01-05 09:30/);
  });

  it('shows a time as the UTC fields take it back', () => {
    expect(utcFieldValue(Date.parse('2027-01-05T09:30:00Z'))).toBe('2027-01-05 09:30');
    expect(utcFieldValue(Date.parse('2027-01-05T09:30:15Z'))).toBe('2027-01-05 09:30:15');
    expect(formUtcTime('', 'from')).toBeNull();
  });

  it('shows a duration in the largest unit that says it exactly, and reads a number and a unit back to ms', () => {
    expect(durationParts(30_000)).toEqual({ value: '30', unit: 's' });
    expect(durationParts(3_600_000)).toEqual({ value: '1', unit: 'h' });
    expect(durationParts(90_000)).toEqual({ value: '90', unit: 's' });
    expect(durationParts(1_500)).toEqual({ value: '1500', unit: 'ms' });
    expect(durationParts(0)).toEqual({ value: '0', unit: 's' });
    expect(formDuration('1.5', 'min')).toBe(90_000);
    expect(formDuration('250', undefined)).toBe(250);
    expect(formDuration('ten', 's')).toBe('ten');
  });

  it('says durations and a retry schedule in words', () => {
    expect([500, 30_000, 90_000, 120_000, 5_400_000, 604_800_000].map(durationWords)).toEqual(['500 ms', '30 s', '1 min 30 s', '2 min', '1 h 30 min', '7 d']);
    const waits = retryWaits({ initialDelayMs: 30_000, factor: 4, maxDelayMs: 3_600_000 }, 5);
    expect(waits).toEqual([30_000, 120_000, 480_000, 1_920_000, 3_600_000]);
    expect(retrySchedule(waits.slice(0, 3), '3 retries')).toBe('With 3 retries, a failed job is retried after about 30 s, 2 min and 8 min; if the last retry fails too, it is FAILED, about 10 min 30 s after its first attempt.');
  });

  it('reads tags one key:value per line, and refuses a line without a key', () => {
    expect(formTags('order:123\n\n env: prod ')).toEqual({ order: '123', env: 'prod' });
    expect(formTags('  ')).toBeUndefined();
    expect(() => formTags('order')).toThrow(/"order" is not key:value/);
  });
});
