/**
 * What a `punctual` command is: a name (`noun verb`), the arguments it takes, and what it runs.
 * Each noun's commands live in commands/<noun>.ts and are listed in commands/index.ts; the
 * dispatcher (punctual.ts) parses, opens what the command needs, prints and maps errors, and the
 * usage text is made from these definitions, so `punctual --help` cannot leave one out.
 */
import type { Config } from '../config.js';
import type { Runtime } from '../runtime.js';
import type { Services } from '../services/services.js';

/** Every option any command takes, for node:util's parseArgs (strict: anything else is a usage error). */
export const OPTIONS = {
  name: { type: 'string' },
  plan: { type: 'string' },
  team: { type: 'string' },
  project: { type: 'string' },
  'webhook-url': { type: 'string' },
  body: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  // The one job filter (SPEC section 14), for jobs list|cancel|reschedule|retry.
  tag: { type: 'string', multiple: true },
  status: { type: 'string' },
  schedule: { type: 'string' },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  'due-after': { type: 'string' },
  'due-before': { type: 'string' },
  'scheduled-for': { type: 'string' },
  port: { type: 'string' },
  secret: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  operator: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  json: { type: 'boolean' },
  table: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type OptionName = keyof typeof OPTIONS;
type OptionValue<Option> = Option extends { type: 'boolean' } ? boolean : Option extends { multiple: true } ? string[] : string;
/** An option given more than once (`multiple: true` in OPTIONS, e.g. a repeated filter) is a list. */
export type OptionValues = { [K in OptionName]?: OptionValue<(typeof OPTIONS)[K]> };

export interface Args {
  /** The positionals after the command's own words. */
  positionals: string[];
  values: OptionValues;
}

/** A command that works on the database through the services, as /manage/v1 does. */
export interface StoreContext {
  args: Args;
  services: Services;
  runtime: Runtime;
  /** A progress line for long work: shown, rewritten in place, on a terminal only. */
  progress: (line: string) => void;
}

/** How a human sees a list on a terminal: the array it shows and which fields as columns. */
export interface TableSpec {
  rows: string;
  columns: string[];
}

interface CommandBase {
  /** `noun verb`, or one word (`usage`, `prune`). */
  name: string;
  /** What follows the name in the usage text: `<teamId> [--plan <plan>]`. */
  args?: string;
  summary?: string;
  /** The options it takes beyond --json, --table and --help. */
  options?: OptionName[];
  /** On a terminal, lists print as this table (other answers as `field  value` lines). */
  table?: TableSpec;
}

export type Command =
  | (CommandBase & { opens?: 'store'; run: (context: StoreContext) => Promise<unknown> })
  /** Needs the configuration, not the store (serve opens its own); runs until stopped. */
  | (CommandBase & { opens: 'config'; run: (context: { args: Args; config: Config }) => Promise<void> })
  /** Needs nothing (listen); runs until stopped. */
  | (CommandBase & { opens: 'nothing'; run: (context: { args: Args }) => Promise<void> });

/** A usage mistake: exit code 2, with the command's usage. */
export class UsageError extends Error {}

export function required(values: OptionValues, name: 'name' | 'team' | 'project' | 'email' | 'body'): string {
  const value = values[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

export function positional(positionals: string[], what: string): string {
  const value = positionals[0];
  if (!value) throw new UsageError(`${what} is required`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  return value;
}

/** --body's object (a request body as the API takes it), or {} without it. */
export function bodyOption(values: OptionValues): Record<string, unknown> {
  if (!values.body) return {};
  let body: unknown;
  try {
    body = JSON.parse(values.body);
  } catch {
    throw new UsageError('--body must be a JSON object');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new UsageError('--body must be a JSON object');
  return body as Record<string, unknown>;
}

/** The page options of a list, as the API's query takes them. */
export function pageQuery(values: OptionValues): Record<string, string> {
  return { ...(values.limit !== undefined && { limit: values.limit }), ...(values.cursor !== undefined && { cursor: values.cursor }) };
}
