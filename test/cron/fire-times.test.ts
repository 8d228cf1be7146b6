import { describe, expect, it } from 'vitest';
import { parseCron } from '../../src/cron/cron-expression.js';
import { nextFireAfter, nextFires } from '../../src/cron/fire-times.js';
import { TimeZone } from '../../src/cron/time-zone.js';

/** The next `count` fires after `from`, as UTC instants. */
const fires = (cron: string, timezone: string, from: string, count: number) =>
  nextFires(parseCron(cron), TimeZone.named(timezone), Date.parse(from), count).map((t) => new Date(t).toISOString());

/** The same, as local wall-clock times with their offsets, the way a person reads them. */
const localFires = (cron: string, timezone: string, from: string, count: number) => {
  const zone = TimeZone.named(timezone);
  return nextFires(parseCron(cron), zone, Date.parse(from), count).map((t) => {
    const offsetMinutes = zone.offsetAt(t) / 60_000;
    const sign = offsetMinutes < 0 ? '-' : '+';
    const hh = String(Math.floor(Math.abs(offsetMinutes) / 60)).padStart(2, '0');
    const mm = String(Math.abs(offsetMinutes) % 60).padStart(2, '0');
    return `${new Date(zone.localOf(t)).toISOString().slice(0, 19)}${sign}${hh}:${mm}`;
  });
};

describe('fire times on daylight-saving nights (SPEC section 9)', () => {
  describe('Europe/Paris: 2027-03-28 02:00 → 03:00, 2027-10-31 03:00 → 02:00', () => {
    it('fires a skipped 02:30 once, at 03:00 local', () => {
      expect(localFires('30 2 * * *', 'Europe/Paris', '2027-03-27T12:00:00Z', 3)).toEqual([
        '2027-03-28T03:00:00+02:00',
        '2027-03-29T02:30:00+02:00',
        '2027-03-30T02:30:00+02:00',
      ]);
    });

    it('fires several skipped times of one night once, at the jump', () => {
      expect(localFires('0 0,30 2 * * *', 'Europe/Paris', '2027-03-27T12:00:00Z', 3)).toEqual([
        '2027-03-28T03:00:00+02:00',
        '2027-03-29T02:00:00+02:00',
        '2027-03-29T02:30:00+02:00',
      ]);
    });

    it('moves a skipped time of a stepped hour field too (only `*` is left alone)', () => {
      expect(localFires('30 */2 * * *', 'Europe/Paris', '2027-03-27T22:00:00Z', 3)).toEqual([
        '2027-03-28T00:30:00+01:00',
        '2027-03-28T03:00:00+02:00',
        '2027-03-28T04:30:00+02:00',
      ]);
    });

    it('fires a repeated 02:30 once, at its first occurrence', () => {
      expect(localFires('30 2 * * *', 'Europe/Paris', '2027-10-30T12:00:00Z', 2)).toEqual(['2027-10-31T02:30:00+02:00', '2027-11-01T02:30:00+01:00']);
    });

    it('keeps the rhythm of an hour field `*`: nothing in the skipped hour, both passes of the repeated one', () => {
      expect(localFires('*/30 * * * *', 'Europe/Paris', '2027-03-28T00:00:00Z', 3)).toEqual([
        '2027-03-28T01:30:00+01:00',
        '2027-03-28T03:00:00+02:00',
        '2027-03-28T03:30:00+02:00',
      ]);
      expect(fires('*/30 * * * *', 'Europe/Paris', '2027-10-30T23:30:00Z', 6)).toEqual([
        '2027-10-31T00:00:00.000Z', // 02:00 +02:00
        '2027-10-31T00:30:00.000Z', // 02:30 +02:00
        '2027-10-31T01:00:00.000Z', // 02:00 +01:00
        '2027-10-31T01:30:00.000Z', // 02:30 +01:00
        '2027-10-31T02:00:00.000Z', // 03:00 +01:00
        '2027-10-31T02:30:00.000Z',
      ]);
    });
  });

  describe('America/New_York: 2027-03-14 02:00 → 03:00, 2027-11-07 02:00 → 01:00', () => {
    it('fires a skipped 02:30 at 03:00 local', () => {
      expect(localFires('30 2 * * *', 'America/New_York', '2027-03-13T12:00:00Z', 2)).toEqual(['2027-03-14T03:00:00-04:00', '2027-03-15T02:30:00-04:00']);
    });

    it('fires a repeated 01:30 once, at its first occurrence', () => {
      expect(localFires('30 1 * * *', 'America/New_York', '2027-11-06T12:00:00Z', 2)).toEqual(['2027-11-07T01:30:00-04:00', '2027-11-08T01:30:00-05:00']);
    });

    it('fires every minute of a repeated hour once when the hour is fixed', () => {
      expect(localFires('0-59/20 1-2 * * *', 'America/New_York', '2027-11-07T04:00:00Z', 7)).toEqual([
        '2027-11-07T01:00:00-04:00',
        '2027-11-07T01:20:00-04:00',
        '2027-11-07T01:40:00-04:00',
        '2027-11-07T02:00:00-05:00',
        '2027-11-07T02:20:00-05:00',
        '2027-11-07T02:40:00-05:00',
        '2027-11-08T01:00:00-05:00',
      ]);
    });

    it('once in the repeated hour\'s second pass, waits for the next day with a fixed hour', () => {
      // 01:10 EST, the second 01:10 of the night: 01:30 already fired at its first occurrence.
      expect(localFires('30 1 * * *', 'America/New_York', '2027-11-07T06:10:00Z', 1)).toEqual(['2027-11-08T01:30:00-05:00']);
    });

    it('walks into the second pass of the repeated hour with an hour field `*`', () => {
      expect(fires('*/20 * * * *', 'America/New_York', '2027-11-07T05:50:00Z', 4)).toEqual([
        '2027-11-07T06:00:00.000Z', // 01:00 -05:00
        '2027-11-07T06:20:00.000Z',
        '2027-11-07T06:40:00.000Z',
        '2027-11-07T07:00:00.000Z', // 02:00 -05:00
      ]);
    });

    it('fires an every-second schedule on every real second across both changes', () => {
      expect(fires('* * * * * *', 'America/New_York', '2027-11-07T05:59:58Z', 3)).toEqual([
        '2027-11-07T05:59:59.000Z',
        '2027-11-07T06:00:00.000Z',
        '2027-11-07T06:00:01.000Z',
      ]);
      expect(fires('* * * * * *', 'America/New_York', '2027-03-14T06:59:58Z', 3)).toEqual([
        '2027-03-14T06:59:59.000Z', // 01:59:59 -05:00
        '2027-03-14T07:00:00.000Z', // 03:00:00 -04:00
        '2027-03-14T07:00:01.000Z',
      ]);
    });
  });

  describe('Australia/Sydney: 2027-04-04 03:00 → 02:00, 2027-10-03 02:00 → 03:00', () => {
    it('fires a repeated 02:30 once, at its first occurrence', () => {
      expect(localFires('30 2 * * *', 'Australia/Sydney', '2027-04-03T12:00:00Z', 2)).toEqual(['2027-04-04T02:30:00+11:00', '2027-04-05T02:30:00+10:00']);
    });

    it('fires a skipped 02:30 at 03:00 local', () => {
      expect(localFires('30 2 * * *', 'Australia/Sydney', '2027-10-02T12:00:00Z', 2)).toEqual(['2027-10-03T03:00:00+11:00', '2027-10-04T02:30:00+11:00']);
    });
  });
});

describe('fire times on the calendar', () => {
  it('fires `0 0 31 * *` only in months that have a 31st', () => {
    expect(fires('0 0 31 * *', 'UTC', '2027-01-01T00:00:00Z', 4)).toEqual([
      '2027-01-31T00:00:00.000Z',
      '2027-03-31T00:00:00.000Z',
      '2027-05-31T00:00:00.000Z',
      '2027-07-31T00:00:00.000Z',
    ]);
  });

  it('fires on 29 February in leap years only, across a century that is not one', () => {
    expect(fires('0 0 29 2 *', 'UTC', '2027-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
    expect(fires('0 0 29 2 *', 'UTC', '2096-03-01T00:00:00Z', 1)).toEqual(['2104-02-29T00:00:00.000Z']);
  });

  it('fires at month ends in the zone, not in UTC', () => {
    expect(localFires('0 23 30,31 * *', 'Asia/Tokyo', '2027-04-01T00:00:00Z', 2)).toEqual([
      '2027-04-30T23:00:00+09:00',
      '2027-05-30T23:00:00+09:00',
    ]);
  });

  it('fires on a day matching either day field when both are restricted, as Vixie cron does', () => {
    // 2027-01-01 is a Friday: the 1st of each month or any Monday.
    expect(fires('0 0 1 * MON', 'UTC', '2026-12-31T00:00:00Z', 6)).toEqual([
      '2027-01-01T00:00:00.000Z',
      '2027-01-04T00:00:00.000Z',
      '2027-01-11T00:00:00.000Z',
      '2027-01-18T00:00:00.000Z',
      '2027-01-25T00:00:00.000Z',
      '2027-02-01T00:00:00.000Z',
    ]);
  });

  it('fires on days matching both when one day field starts with `*`', () => {
    // Odd days of the month that are Mondays.
    expect(fires('0 0 */2 * MON', 'UTC', '2027-01-01T00:00:00Z', 3)).toEqual(['2027-01-11T00:00:00.000Z', '2027-01-25T00:00:00.000Z', '2027-02-01T00:00:00.000Z']);
  });

  it('reads names, 7 as Sunday, steps from a value, and the @ forms', () => {
    expect(fires('0 12 * JAN-MAR SUN', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-01-03T12:00:00.000Z']);
    expect(fires('0 12 * * 7', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-01-03T12:00:00.000Z']);
    expect(fires('10/25 * * * *', 'UTC', '2027-01-01T00:00:00Z', 3)).toEqual(['2027-01-01T00:10:00.000Z', '2027-01-01T00:35:00.000Z', '2027-01-01T01:10:00.000Z']);
    expect(fires('@daily', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-01-02T00:00:00.000Z']);
    expect(fires('@hourly', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-01-01T01:00:00.000Z']);
    expect(fires('@weekly', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-01-03T00:00:00.000Z']);
    expect(fires('@monthly', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2027-02-01T00:00:00.000Z']);
    expect(fires('@yearly', 'UTC', '2027-01-01T00:00:00Z', 1)).toEqual(['2028-01-01T00:00:00.000Z']);
  });

  it('fires strictly after the instant given, to the second', () => {
    expect(fires('*/15 * * * * *', 'UTC', '2027-01-01T00:00:15.000Z', 2)).toEqual(['2027-01-01T00:00:30.000Z', '2027-01-01T00:00:45.000Z']);
    expect(fires('*/15 * * * * *', 'UTC', '2027-01-01T00:00:14.999Z', 1)).toEqual(['2027-01-01T00:00:15.000Z']);
  });

  it('finds no fire for an expression that never fires', () => {
    expect(nextFireAfter(parseCron('0 0 30 2 *'), TimeZone.named('UTC'), Date.parse('2027-01-01T00:00:00Z'))).toBeNull();
    expect(nextFireAfter(parseCron('0 0 31 4,6,9,11 *'), TimeZone.named('UTC'), Date.parse('2027-01-01T00:00:00Z'))).toBeNull();
  });
});

describe('parsing cron expressions', () => {
  it.each([
    ['', 'fields'],
    ['* * * *', 'fields'],
    ['* * * * * * *', 'fields'],
    ['60 * * * *', 'outside'],
    ['* 24 * * *', 'outside'],
    ['* * 0 * *', 'outside'],
    ['* * * 13 *', 'outside'],
    ['* * * * 8', 'outside'],
    ['5-1 * * * *', 'backwards'],
    ['*/0 * * * *', 'step'],
    ['* * ? * *', 'value'],
    ['* * L * *', 'value'],
    ['* * * * MON#2', 'value'],
    ['1,,2 * * * *', 'minute field'],
    ['@every_minute', 'macro'],
  ])('refuses %j with INVALID_CRON on the cron field', (cron, why) => {
    let thrown: unknown;
    try {
      parseCron(cron);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'INVALID_CRON', data: { field: 'cron' } });
    expect((thrown as Error).message).toContain(why);
  });

  it('refuses a time zone the runtime does not know, or an offset, with INVALID_TIMEZONE', () => {
    for (const name of ['Mars/Olympus', '+01:00', 'UTC+1', '']) {
      expect(() => TimeZone.named(name)).toThrow(expect.objectContaining({ code: 'INVALID_TIMEZONE', data: expect.objectContaining({ field: 'timezone' }) }));
    }
    expect(TimeZone.named('Europe/Paris').name).toBe('Europe/Paris');
  });
});
