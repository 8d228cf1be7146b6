#!/usr/bin/env node
/**
 * `punctual`: the server and an operator's CLI over the same service layer as /manage/v1. This
 * file only dispatches: it finds the command (commands/), opens what it needs, prints its answer
 * (output.ts) and turns errors into one line and an exit code (usage.ts's EXIT).
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { PunctualError, UnavailableError } from '../errors.js';
import { PlanFileError } from '../plans.js';
import { OPTIONS, UsageError, type Args, type Command, type OptionName } from './command.js';
import { COMMANDS } from './commands/index.js';
import { outputMode, render, renderError, type OutputMode } from './output.js';
import { EXIT, usageText } from './usage.js';

/** Options every command takes. */
const GLOBAL: OptionName[] = ['json', 'table', 'help'];

/**
 * `--json '<object>'` was how a body was given before --json meant "print JSON": a --json followed
 * by an object is still read as --body, so scripts written then keep working.
 */
function withBodySpelling(argv: string[]): string[] {
  return argv.flatMap((arg, i) => {
    if (arg.startsWith('--json=')) return [`--body=${arg.slice('--json='.length)}`];
    if (arg === '--json' && argv[i + 1]?.trimStart().startsWith('{')) return ['--body'];
    return [arg];
  });
}

function find(positionals: string[]): { command: Command; rest: string[] } | null {
  const [first, second] = positionals;
  const two = COMMANDS.find((command) => command.name === `${first} ${second}`);
  if (two) return { command: two, rest: positionals.slice(2) };
  const one = COMMANDS.find((command) => command.name === first);
  return one ? { command: one, rest: positionals.slice(1) } : null;
}

/** A progress line on stderr, rewritten in place, where a person watches it. */
function progressLine(): { show: (line: string) => void; end: () => void } {
  let shown = false;
  return {
    show(line) {
      if (!process.stderr.isTTY) return;
      process.stderr.write(`\r\x1b[K${line}`);
      shown = true;
    },
    end() {
      if (shown) process.stderr.write('\n');
    },
  };
}

let mode: OutputMode = 'json';
/** The command being run, for a usage mistake's usage lines. */
let current: Command | null = null;

/** The exit code, or null while the command keeps running (serve, listen). */
async function main(argv: string[]): Promise<number | null> {
  const { values, positionals } = parseArgs({ args: withBodySpelling(argv), allowPositionals: true, strict: true, options: OPTIONS });
  mode = outputMode(values, process.stdout.isTTY === true);
  const found = find(positionals);
  if (!found) {
    if (positionals.length === 0) {
      console.log(usageText(COMMANDS));
      return values.help ? EXIT.ok : EXIT.usage;
    }
    if (values.help && COMMANDS.some((command) => command.name.startsWith(`${positionals[0]} `))) {
      console.log(usageText(COMMANDS, positionals[0]));
      return EXIT.ok;
    }
    throw new UsageError(`Unknown command: ${positionals.join(' ')}`);
  }
  const { command, rest } = found;
  current = command;
  if (values.help) {
    console.log(usageText(COMMANDS, command.name));
    return EXIT.ok;
  }
  const stray = (Object.keys(values) as OptionName[]).find((option) => !GLOBAL.includes(option) && !command.options?.includes(option));
  if (stray) throw new UsageError(`${command.name} does not take --${stray}`);
  const args: Args = { positionals: rest, values };
  if (command.opens === 'nothing') {
    await command.run({ args });
    return null;
  }
  const config = loadConfig();
  if (command.opens === 'config') {
    await command.run({ args, config });
    return null;
  }
  // Loaded once a command needs it, so that --help and usage mistakes answer at once.
  const { openRuntime } = await import('../runtime.js');
  const runtime = await openRuntime(config, systemClock, { generateAdminToken: false, onBackgroundError: (error) => console.error(error) });
  const progress = progressLine();
  try {
    const answer = await command.run({ args, services: runtime.services, runtime, progress: progress.show });
    progress.end();
    console.log(render(answer, mode, command.table));
    return EXIT.ok;
  } catch (error) {
    progress.end();
    throw error;
  } finally {
    await runtime.store.close();
  }
}

function report(error: unknown): number {
  if (error instanceof UnavailableError && error.cause) {
    console.error(`Database unavailable: ${(error.cause as Error).message ?? String(error.cause)}`);
  } else if (error instanceof PunctualError) {
    console.error(renderError(error.toBody(), mode));
  } else if (error instanceof ConfigError || error instanceof PlanFileError) {
    console.error(`Configuration error: ${error.message}`);
  } else if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`${(error as Error).message}\n\n${current ? usageText(COMMANDS, current.name) : 'Run punctual --help for the commands.'}`);
    return EXIT.usage;
  } else {
    console.error(error);
  }
  return EXIT.failed;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== null) process.exitCode = code;
  },
  (error: unknown) => {
    process.exitCode = report(error);
  },
);
