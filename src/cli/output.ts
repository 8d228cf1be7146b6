/**
 * How the CLI prints. For machines, JSON: the answer as the HTTP API would give it (indented), and
 * an error as one line of the contract's body. For people at a terminal: lists as tables, other
 * answers as `field  value` lines, and an error as one line `CODE: message`. JSON is the default
 * off a terminal, so scripts that pipe the output keep reading JSON; --json and --table force one.
 */
import type { TableSpec } from './command.js';

export type OutputMode = 'json' | 'human';

export function outputMode(flags: { json?: boolean; table?: boolean }, stdoutIsTerminal: boolean): OutputMode {
  if (flags.json) return 'json';
  if (flags.table) return 'human';
  return stdoutIsTerminal ? 'human' : 'json';
}

/** A cell: null as `-`, objects as compact JSON cut at `width`. */
function cell(value: unknown, width = 60): string {
  if (value === null || value === undefined) return '-';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  const line = text.replace(/\s+/g, ' ');
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((column) => cell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((value, i) => value.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

function fields(object: Record<string, unknown>, skip: string[] = []): string {
  const keys = Object.keys(object).filter((key) => !skip.includes(key));
  const width = Math.max(0, ...keys.map((key) => key.length));
  return keys.map((key) => `${key.padEnd(width)}  ${cell(object[key], 100)}`).join('\n');
}

/** An answer as the mode prints it to stdout. */
export function render(answer: unknown, mode: OutputMode, spec?: TableSpec): string {
  if (mode === 'json' || typeof answer !== 'object' || answer === null) return JSON.stringify(answer, null, 2);
  const object = answer as Record<string, unknown>;
  const rows = spec ? object[spec.rows] : undefined;
  if (!spec || !Array.isArray(rows)) return fields(object);
  const parts = [table(rows as Record<string, unknown>[], spec.columns)];
  // What else the answer says (a usage's plan and quota, an overview's counts), above or below.
  const rest = fields(object, [spec.rows, 'nextCursor']);
  if (rest) parts.unshift(rest, '');
  if (typeof object.nextCursor === 'string') parts.push('', `more: --cursor ${object.nextCursor}`);
  return parts.join('\n');
}

/** An error as one line: the contract's body as JSON for machines, `CODE: message (field)` for people. */
export function renderError(body: { error: string; data: { message: string; field?: string } & Record<string, unknown> }, mode: OutputMode): string {
  if (mode === 'json') return JSON.stringify(body);
  return `${body.error}: ${body.data.message}${body.data.field !== undefined ? ` (field: ${body.data.field})` : ''}`;
}
