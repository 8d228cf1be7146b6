import { describe, expect, it } from 'vitest';
import { parseCron } from '../../src/cron/cron-expression.js';
import { cronInWords } from '../../src/cron/cron-words.js';

describe('a cron expression in words', () => {
  it.each([
    ['30 2 * * *', 'every day at 02:30, Europe/Paris'],
    ['@daily', 'every day at 00:00, Europe/Paris'],
    ['@hourly', 'every hour, on the hour, Europe/Paris'],
    ['@weekly', 'every Sunday at 00:00, Europe/Paris'],
    ['@monthly', 'on the 1st of every month at 00:00, Europe/Paris'],
    ['@yearly', 'on the 1st of January at 00:00, Europe/Paris'],
    ['* * * * *', 'every minute, Europe/Paris'],
    ['*/15 * * * *', 'every 15 minutes, Europe/Paris'],
    ['5 * * * *', 'every hour at :05, Europe/Paris'],
    ['0 */2 * * *', 'every 2 hours, on the hour, Europe/Paris'],
    ['0 0,12 * * *', 'every day at 00:00 and 12:00, Europe/Paris'],
    ['0 8-18 * * *', 'every hour from 08:00 to 18:00, Europe/Paris'],
    ['15,45 * * * *', 'at minutes 15 and 45 of every hour, Europe/Paris'],
    ['0 9 * * 1-5', 'Monday to Friday at 09:00, Europe/Paris'],
    ['0 9 * * 1,3,5', 'Monday, Wednesday and Friday at 09:00, Europe/Paris'],
    ['0 9 * * 6,0', 'Saturday and Sunday at 09:00, Europe/Paris'],
    ['*/5 9-17 * * 1-5', 'every 5 minutes from 09:00 to 17:59, Monday to Friday, Europe/Paris'],
    ['0 0 1,15 * *', 'on the 1st and 15th of every month at 00:00, Europe/Paris'],
    ['0 0 29 2 *', 'on the 29th of February at 00:00, Europe/Paris'],
    ['0 12 * 6-8 *', 'every day from June to August at 12:00, Europe/Paris'],
    ['30 9 13 * 5', 'on the 13th of every month or every Friday at 09:30, Europe/Paris'],
    ['*/10 * * * * *', 'every 10 seconds, Europe/Paris'],
    ['30 */5 * * * *', 'at second 30 of every 5 minutes, Europe/Paris'],
  ])('says %s as "%s"', (cron, words) => {
    expect(cronInWords(parseCron(cron), 'Europe/Paris')).toBe(words);
  });

  it('reads every spelling of one schedule alike: names or numbers, 0 or 7 for Sunday, a macro or its fields', () => {
    const say = (cron: string) => cronInWords(parseCron(cron), 'UTC');
    expect(say('0 9 * * MON-FRI')).toBe(say('0 9 * * 1-5'));
    expect(say('0 9 * * 7')).toBe(say('0 9 * * SUN'));
    expect(say('@monthly')).toBe(say('0 0 1 * *'));
    expect(say('0 30 2 * * *')).toBe(say('30 2 * * *'));
  });
});
