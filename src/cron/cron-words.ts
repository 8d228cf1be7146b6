/**
 * A cron expression said in words, as the dashboard shows it beside its next runs: "every day at
 * 02:30, Europe/Paris", "every 15 minutes, Monday to Friday, UTC". Read from the parsed fields
 * (cron-expression.ts), so every spelling of one schedule (`MON-FRI` or `1-5`, `7` or `0` for
 * Sunday, `@daily`) reads the same. What it cannot say simply, it says as lists of values; the
 * next runs shown beside it are the exact answer.
 */
import type { CronExpression } from './cron-expression.js';

const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_NAMES = ['', 'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** The values a field's flags allow, in order. */
const valuesOf = (flags: readonly boolean[], min: number): number[] => flags.flatMap((on, value) => (on && value >= min ? [value] : []));

const isAll = (values: number[], min: number, max: number) => values.length === max - min + 1;

/** The step n when the values are exactly min, min + n, min + 2n … up to the field's end (n > 1). */
function stepOf(values: number[], min: number, max: number): number | null {
  if (values.length < 2 || values[0] !== min) return null;
  const step = values[1]! - values[0]!;
  if (step < 2) return null;
  const expected = Math.floor((max - min) / step) + 1;
  return values.length === expected && values.every((v, i) => v === min + i * step) ? step : null;
}

/** Runs of consecutive values: [1, 2, 3, 5] → [[1, 3], [5, 5]]. */
function runsOf(values: number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const value of values) {
    const last = runs[runs.length - 1];
    if (last && last[1] === value - 1) last[1] = value;
    else runs.push([value, value]);
  }
  return runs;
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

/** Values named one by one, a run of three or more as "from to to". */
function sayRuns(values: number[], name: (v: number) => string, through: string): string {
  return listed(runsOf(values).flatMap(([from, to]) => (to - from >= 2 ? [`${name(from)}${through}${name(to)}`] : from === to ? [name(from)] : [name(from), name(to)])));
}

const two = (n: number) => String(n).padStart(2, '0');

function ordinal(n: number): string {
  const suffix = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
  return `${n}${suffix}`;
}

/** The time of day part: "at 02:30", "every 15 minutes", "every hour at :05"… */
function sayTime(expr: CronExpression): string {
  const seconds = valuesOf(expr.seconds, 0);
  const minutes = valuesOf(expr.minutes, 0);
  const hours = valuesOf(expr.hours, 0);
  const allMinutes = isAll(minutes, 0, 59);
  const allHours = isAll(hours, 0, 23);
  const atSecondZero = seconds.length === 1 && seconds[0] === 0;

  if (!atSecondZero) {
    const everySecond = isAll(seconds, 0, 59);
    const secondStep = stepOf(seconds, 0, 59);
    if ((everySecond || secondStep) && allMinutes && allHours) return everySecond ? 'every second' : `every ${secondStep} seconds`;
    const secondsPart = everySecond ? 'every second' : secondStep ? `every ${secondStep} seconds` : `at second ${sayRuns(seconds, String, '–')}`;
    if (allMinutes && allHours) return secondsPart;
    return `${secondsPart} of ${sayMinutesAndHours(minutes, hours)}`;
  }
  return sayMinutesAndHours(minutes, hours);
}

function sayMinutesAndHours(minutes: number[], hours: number[]): string {
  const allMinutes = isAll(minutes, 0, 59);
  const allHours = isAll(hours, 0, 23);
  const minuteStep = stepOf(minutes, 0, 59);
  const hourStep = stepOf(hours, 0, 23);
  const hourWindow = () => {
    const runs = runsOf(hours);
    const [from, to] = runs[0]!;
    if (runs.length === 1) return `from ${two(from)}:00 to ${two(to)}:59`;
    return `in hours ${sayRuns(hours, two, '–')}`;
  };
  if (allMinutes) return allHours ? 'every minute' : `every minute ${hourWindow()}`;
  if (minuteStep) return allHours ? `every ${minuteStep} minutes` : `every ${minuteStep} minutes ${hourWindow()}`;
  const onThe = (m: number) => (m === 0 ? ', on the hour' : ` at :${two(m)}`);
  if (minutes.length === 1 && allHours) return `every hour${onThe(minutes[0]!)}`;
  if (hours.length * minutes.length <= 4) return `at ${listed(hours.flatMap((h) => minutes.map((m) => `${two(h)}:${two(m)}`)))}`;
  if (minutes.length === 1) {
    const m = minutes[0]!;
    if (hourStep) return `every ${hourStep} hours${onThe(m)}`;
    const runs = runsOf(hours);
    if (runs.length === 1) return `every hour${m === 0 ? '' : ` at :${two(m)}`} from ${two(runs[0]![0])}:${two(m)} to ${two(runs[0]![1])}:${two(m)}`;
  }
  if (hours.length * minutes.length <= 6) return `at ${listed(hours.flatMap((h) => minutes.map((m) => `${two(h)}:${two(m)}`)))}`;
  const minutesPart = `at minutes ${sayRuns(minutes, two, '–')}`;
  return allHours ? `${minutesPart} of every hour` : `${minutesPart} ${hourWindow()}`;
}

/** The days part: "every day", "Monday to Friday", "on the 1st of every month"…; `every` when it is every day of the year. */
function sayDays(expr: CronExpression): { every: boolean; text: string } {
  const days = valuesOf(expr.daysOfMonth, 1);
  const weekdays = valuesOf(expr.daysOfWeek, 0);
  const months = valuesOf(expr.months, 1);
  const allDays = isAll(days, 1, 31);
  const allWeekdays = weekdays.length === 7;
  const allMonths = isAll(months, 1, 12);
  // Monday first, as people read a week: Sunday (0) goes last.
  const weekOrder = weekdays.map((d) => (d === 0 ? 7 : d)).sort((a, b) => a - b);
  const weekdayText = sayRuns(weekOrder, (d) => DAY_NAMES[d % 7]!, ' to ');
  const dayStep = stepOf(days, 1, 31);
  const dayText = dayStep ? `every ${ordinal(dayStep)} day of the month from the 1st` : `the ${sayRuns(days, ordinal, ' to ')}`;
  const monthRuns = runsOf(months);
  const monthText =
    monthRuns.length === 1 && monthRuns[0]![1] - monthRuns[0]![0] >= 2
      ? `from ${MONTH_NAMES[monthRuns[0]![0]]} to ${MONTH_NAMES[monthRuns[0]![1]]}`
      : `in ${sayRuns(months, (m) => MONTH_NAMES[m]!, ' to ')}`;
  let text: string;
  let every = false;
  if (allDays && allWeekdays) {
    every = allMonths;
    text = allMonths ? 'every day' : `every day ${monthText}`;
  } else {
    const parts: string[] = [];
    // Vixie cron: with both restricted, a day matching either fires; with one, that one decides.
    if (!allDays && (expr.eitherDay || allWeekdays)) {
      const ofMonths = allMonths ? ' of every month' : !expr.eitherDay && !dayStep && monthText.startsWith('in ') ? ` of ${monthText.slice(3)}` : '';
      parts.push(dayStep ? dayText : `on ${dayText}${ofMonths}`);
    }
    if (!allWeekdays && (expr.eitherDay || allDays)) parts.push(weekdays.length === 1 ? `every ${weekdayText}` : `${weekdayText}`);
    text = parts.join(' or ');
    if (!allMonths && !text.includes(' of ')) text += ` ${monthText}`;
  }
  return { every, text };
}

/** The expression in words, with its zone: "every day at 02:30, Europe/Paris". */
export function cronInWords(expr: CronExpression, zoneName: string): string {
  const time = sayTime(expr);
  const days = sayDays(expr);
  const frequent = /^every (minute|second|hour|\d+ (minutes|seconds|hours))|^at minutes|^at second/.test(time);
  let phrase: string;
  if (days.every) phrase = frequent ? time : `every day ${time}`;
  else if (frequent) phrase = `${time}, ${days.text}`;
  else phrase = `${days.text} ${time}`;
  return `${phrase}, ${zoneName}`;
}
