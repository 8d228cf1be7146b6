/** `punctual --help`, made from the command definitions (commands/index.ts). */
import type { Command } from './command.js';

const SUMMARY_COLUMN = 58;

/** Exit codes, as the usage text and docs/reference/cli.md state them. */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** Refused or failed: an error with the contract's code, a configuration error, the database unreachable. */
  failed: 1,
  /** A usage mistake: unknown command or option, a missing argument. */
  usage: 2,
} as const;

function line(command: Command): string {
  const head = `  ${command.name}${command.args ? ` ${command.args}` : ''}`;
  if (!command.summary) return head;
  if (head.length < SUMMARY_COLUMN - 1) return `${head.padEnd(SUMMARY_COLUMN)}${command.summary}`;
  return `${head}\n${' '.repeat(SUMMARY_COLUMN)}${command.summary}`;
}

const FOOTER = `Output: JSON when standard output is not a terminal (or with --json), as the HTTP API answers;
on a terminal (or with --table), lists as tables and other answers as field lines. Errors are one
line on stderr with the contract's code. --body takes a request body as JSON (--json '<object>'
is its older spelling).

Exit codes: ${EXIT.ok} done; ${EXIT.failed} refused or failed (an error code such as NOT_FOUND, a configuration error,
the database unreachable); ${EXIT.usage} a usage mistake (unknown command or option, missing argument).

The CLI works on the database directly (no admin token needed): run it where the database is.
Configuration comes from the environment, as for the server (DATABASE_URL, PUNCTUAL_SECRET_KEY, …).`;

/** The whole usage text, or the lines of the commands that start with `prefix` (`punctual jobs --help`). */
export function usageText(commands: readonly Command[], prefix?: string): string {
  const shown = prefix ? commands.filter((command) => command.name === prefix || command.name.startsWith(`${prefix} `)) : commands;
  const lines = shown.map(line).join('\n');
  return prefix && shown.length > 0 ? `Usage:\n\n${lines}` : `Usage: punctual <command> [options]\n\n${lines}\n\n${FOOTER}`;
}
