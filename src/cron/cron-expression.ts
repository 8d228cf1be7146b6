/**
 * Cron expressions as SPEC.md section 9 defines them: 5 fields (minute hour day-of-month month
 * day-of-week) or 6 with a leading seconds field; `*`, lists, ranges, steps, month and day names,
 * day-of-week 7 for Sunday, and the `@yearly` family. Anything else (`?`, `L`, `W`, `#`, a value
 * out of its field's range) is INVALID_CRON.
 *
 * Parsing is written here rather than taken from a library: the libraries measured (croner 11,
 * cron-parser 5) parse these fields well but compute daylight-saving nights differently from the
 * contract (fire-times.ts says how), and their parsed fields are not public.
 */
import { InvalidCronError } from '../errors.js';

export interface CronExpression {
  /** The text as the client sent it. */
  readonly source: string;
  /** One flag per value: seconds[0..59], minutes[0..59], hours[0..23], daysOfMonth[1..31], months[1..12], daysOfWeek[0..6]. */
  readonly seconds: readonly boolean[];
  readonly minutes: readonly boolean[];
  readonly hours: readonly boolean[];
  readonly daysOfMonth: readonly boolean[];
  readonly months: readonly boolean[];
  readonly daysOfWeek: readonly boolean[];
  /**
   * Vixie cron's rule: when both day fields are restricted (neither starts with `*`), a day
   * matching either fires; otherwise a day must match both.
   */
  readonly eitherDay: boolean;
  /**
   * The hour field is not `*`: fire times are wall-clock times, moved on daylight-saving nights
   * (a skipped time fires at the jump, a repeated one once). With `*` every real instant whose
   * local time matches fires.
   */
  readonly wallClock: boolean;
}

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** Names for min, min + 1, … */
  names?: string[];
}

const SECOND: FieldSpec = { name: 'seconds', min: 0, max: 59 };
const MINUTE: FieldSpec = { name: 'minute', min: 0, max: 59 };
const HOUR: FieldSpec = { name: 'hour', min: 0, max: 23 };
const DAY_OF_MONTH: FieldSpec = { name: 'day-of-month', min: 1, max: 31 };
const MONTH: FieldSpec = { name: 'month', min: 1, max: 12, names: MONTH_NAMES };
// 7 is Sunday too: parsed in 0..7, then folded onto 0.
const DAY_OF_WEEK: FieldSpec = { name: 'day-of-week', min: 0, max: 7, names: DAY_NAMES };

function invalid(source: string, why: string): InvalidCronError {
  return new InvalidCronError(`cron "${source}" is not a valid expression: ${why}`, { field: 'cron' });
}

function parseValue(text: string, spec: FieldSpec, source: string): number {
  const named = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return spec.min + named;
  if (!/^\d{1,2}$/.test(text)) throw invalid(source, `"${text}" is not a value of the ${spec.name} field`);
  const value = Number(text);
  if (value < spec.min || value > spec.max) throw invalid(source, `${value} is outside the ${spec.name} field's ${spec.min}-${spec.max}`);
  return value;
}

function parseField(text: string, spec: FieldSpec, source: string): boolean[] {
  const flags = new Array<boolean>(spec.max + 1).fill(false);
  for (const part of text.split(',')) {
    const [range, stepText, extra] = part.split('/');
    if (range === undefined || range === '' || extra !== undefined) throw invalid(source, `"${part}" in the ${spec.name} field`);
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d{1,2}$/.test(stepText) || Number(stepText) === 0) throw invalid(source, `step "${stepText}" in the ${spec.name} field`);
      step = Number(stepText);
    }
    let from: number;
    let to: number;
    if (range === '*') {
      [from, to] = [spec.min, spec.max];
    } else if (range.includes('-')) {
      const [a, b, more] = range.split('-');
      if (a === undefined || b === undefined || more !== undefined) throw invalid(source, `range "${range}" in the ${spec.name} field`);
      [from, to] = [parseValue(a, spec, source), parseValue(b, spec, source)];
      if (from > to) throw invalid(source, `range "${range}" in the ${spec.name} field runs backwards`);
    } else {
      from = parseValue(range, spec, source);
      // "5/15": from 5 to the field's end, every 15.
      to = stepText === undefined ? from : spec.max;
    }
    for (let value = from; value <= to; value += step) flags[value] = true;
  }
  return flags;
}

/** The expression, or INVALID_CRON (data.field "cron") saying what is wrong. */
export function parseCron(text: string): CronExpression {
  const source = text;
  const trimmed = text.trim();
  const expanded = MACROS[trimmed.toLowerCase()] ?? trimmed;
  if (expanded.startsWith('@')) throw invalid(source, `unknown macro "${trimmed}" (use @yearly, @monthly, @weekly, @daily or @hourly)`);
  const fields = expanded.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) throw invalid(source, `it has ${fields.length} fields, not 5 or 6`);
  const [secondText, minuteText, hourText, domText, monthText, dowText] = (fields.length === 6 ? fields : ['0', ...fields]) as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const dow = parseField(dowText, DAY_OF_WEEK, source);
  if (dow[7]) dow[0] = true;
  return {
    source,
    seconds: parseField(secondText, SECOND, source),
    minutes: parseField(minuteText, MINUTE, source),
    hours: parseField(hourText, HOUR, source),
    daysOfMonth: parseField(domText, DAY_OF_MONTH, source),
    months: parseField(monthText, MONTH, source),
    daysOfWeek: dow.slice(0, 7),
    eitherDay: !domText.startsWith('*') && !dowText.startsWith('*'),
    wallClock: hourText !== '*',
  };
}
