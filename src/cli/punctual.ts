#!/usr/bin/env node
/**
 * `punctual`: the server and an operator's CLI over the same service layer as /manage/v1.
 * Every command but `serve` prints one JSON document (errors in the API's shape, on stderr).
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../clock.js';
import { ConfigError, loadConfig } from '../config.js';
import { PunctualError, UnavailableError } from '../errors.js';
import { PlanFileError } from '../plans.js';
import { openRuntime } from '../runtime.js';
import { serve } from '../server.js';
import { JOBS_COMMANDS, JOBS_OPTIONS, JOBS_USAGE, JobsUsageError } from './jobs-commands.js';
import { listen } from './listen.js';
import type { Services } from '../services/services.js';

const USAGE = `Usage: punctual <command> [options]

  serve                                                   start the service (PORT, DATABASE_URL, …)
  listen [--port <port>] [--secret <whsec_…>]             a local webhook receiver that verifies and prints deliveries
  migrate                                                 apply database migrations and exit
  teams create --name <name> [--plan <plan>]
  teams get <teamId>
  teams update <teamId> [--name <name>] [--plan <plan>]
  projects create --team <teamId> --name <name> [--webhook-url <url>]
  projects list --team <teamId>
  projects get <projectId>
  projects update <projectId> [--webhook-url <url|"">] [--json '<PATCH body>']
  projects overview <projectId>                           jobs by status, attempts per minute (24 h), lateness (1 h), last failures
  keys create --project <projectId> --name <name>
  keys list --project <projectId>
  keys revoke <keyId>
  secret list --project <projectId>
  secret rotate --project <projectId>
  usage --team <teamId>
  schedules create --project <projectId> --json '<POST /api/schedules body>'
  schedules list --project <projectId>                    a project's recurring schedules (SPEC section 9), newest first
  schedules get|pause|resume|trigger|delete <scheduleId> --project <projectId>
${JOBS_USAGE}
  prune [--dry-run]                                       delete now what retention deletes (SPEC section 12);
                                                          --dry-run only counts it
  users create --email <email> [--team <teamId>] [--operator] [--password <password>]
                                                          a dashboard user; without --password one is generated and printed once
  users list
  users add-team --email <email> --team <teamId>
  users reset-password --email <email> [--password <password>]   also ends the user's sessions

The CLI works on the database directly (no admin token needed): run it where the database is.
Configuration comes from the environment, as for the server (DATABASE_URL, PUNCTUAL_SECRET_KEY, …).`;

type Command = (services: Services, args: { positionals: string[]; values: Record<string, string | undefined> }) => Promise<unknown>;

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

function positional(positionals: string[], what: string): string {
  const value = positionals[0];
  if (!value) throw new UsageError(`${what} is required`);
  return value;
}

class UsageError extends Error {}

/** --json's object, or {} without it. */
function jsonOption(values: Record<string, string | undefined>): Record<string, unknown> {
  if (!values.json) return {};
  try {
    return JSON.parse(values.json) as Record<string, unknown>;
  } catch {
    throw new UsageError('--json must be a JSON object');
  }
}

const COMMANDS: Record<string, Command> = {
  'teams create': (s, { values }) => s.manage.createTeam({ name: required(values, 'name'), ...(values.plan && { plan: values.plan }) }),
  'teams get': (s, { positionals }) => s.manage.getTeam(positional(positionals, 'teamId')),
  'teams update': (s, { positionals, values }) =>
    s.manage.updateTeam(positional(positionals, 'teamId'), { ...(values.name && { name: values.name }), ...(values.plan && { plan: values.plan }) }),
  'projects create': (s, { values }) =>
    s.manage.createProject(required(values, 'team'), {
      name: required(values, 'name'),
      ...(values['webhook-url'] !== undefined && { webhookUrl: values['webhook-url'] || null }),
    }),
  'projects list': (s, { values }) => s.manage.listProjects(required(values, 'team')),
  'projects get': (s, { positionals }) => s.manage.getProject(positional(positionals, 'projectId')),
  'projects update': (s, { positionals, values }) => {
    const body = jsonOption(values);
    if (values['webhook-url'] !== undefined) body.webhookUrl = values['webhook-url'] || null;
    return s.manage.updateProject(positional(positionals, 'projectId'), body);
  },
  'projects overview': (s, { positionals }) => s.manage.getOverview(positional(positionals, 'projectId')),
  'keys create': (s, { values }) => s.manage.createKey(required(values, 'project'), { name: required(values, 'name') }),
  'keys list': (s, { values }) => s.manage.listKeys(required(values, 'project')),
  'keys revoke': (s, { positionals }) => s.manage.revokeKey(positional(positionals, 'keyId')),
  'secret list': (s, { values }) => s.manage.listWebhookSecrets(required(values, 'project')),
  'secret rotate': (s, { values }) => s.manage.rotateWebhookSecret(required(values, 'project')),
  usage: (s, { values }) => s.manage.usage(required(values, 'team')),
  'users create': (s, { values }) =>
    s.users.create({
      email: required(values, 'email'),
      ...(values.password !== undefined && { password: values.password }),
      teamIds: values.team ? [values.team] : [],
      operator: values.operator !== undefined,
    }),
  'schedules create': async (s, { values }) => s.schedules.create(await s.schedules.projectContext(required(values, 'project')), jsonOption(values)),
  'schedules list': async (s, { values }) => s.schedules.list(await s.schedules.projectContext(required(values, 'project')), { limit: '100' }),
  'schedules get': async (s, { positionals, values }) =>
    s.schedules.get(await s.schedules.projectContext(required(values, 'project')), positional(positionals, 'scheduleId')),
  'schedules pause': async (s, { positionals, values }) =>
    s.schedules.update(await s.schedules.projectContext(required(values, 'project')), positional(positionals, 'scheduleId'), { paused: true }),
  'schedules resume': async (s, { positionals, values }) =>
    s.schedules.update(await s.schedules.projectContext(required(values, 'project')), positional(positionals, 'scheduleId'), { paused: false }),
  'schedules trigger': async (s, { positionals, values }) =>
    s.schedules.trigger(await s.schedules.projectContext(required(values, 'project')), positional(positionals, 'scheduleId')),
  'schedules delete': async (s, { positionals, values }) =>
    s.schedules.delete(await s.schedules.projectContext(required(values, 'project')), positional(positionals, 'scheduleId')),
  prune: async (s, { values }) =>
    values['dry-run'] !== undefined ? { dryRun: true, ...(await s.retention.preview()) } : { dryRun: false, ...(await s.retention.prune()) },
  'users list': (s) => s.users.list(),
  'users add-team': (s, { values }) => s.users.addToTeam(required(values, 'email'), required(values, 'team')),
  'users reset-password': (s, { values }) => s.users.resetPassword(required(values, 'email'), values.password),
};

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      team: { type: 'string' },
      project: { type: 'string' },
      'webhook-url': { type: 'string' },
      json: { type: 'string' },
      port: { type: 'string' },
      secret: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      operator: { type: 'boolean' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      ...JOBS_OPTIONS,
    },
  });
  const [first, second, ...rest] = positionals;
  if (values.help || !first) {
    console.log(USAGE);
    return first || values.help ? 0 : 2;
  }
  if (first === 'listen') {
    const port = Number(values.port ?? 4000);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
    const receiver = await listen({ port, host: '127.0.0.1', secret: values.secret ?? null, print: (line) => console.log(line) });
    console.error(
      `Listening on http://127.0.0.1:${receiver.port}/ ${values.secret ? '(verifying signatures)' : '(pass --secret whsec_… to verify signatures)'}\n` +
        `Point a project at it: PATCH /manage/v1/projects/:projectId {"webhookUrl": "http://127.0.0.1:${receiver.port}/"}`,
    );
    return -1; // keeps running
  }
  const config = loadConfig();
  if (first === 'serve') {
    await serve(config);
    return -1; // keeps running
  }
  const runtime = await openRuntime(config, systemClock, {
    generateAdminToken: false,
    onBackgroundError: (error) => console.error(error),
  });
  try {
    if (first === 'migrate') {
      console.log(JSON.stringify({ migrated: true, store: runtime.store.kind }));
      return 0;
    }
    const jobs = second !== undefined ? JOBS_COMMANDS[`${first} ${second}`] : undefined;
    if (jobs) {
      console.log(JSON.stringify(await jobs(runtime.services, { positionals: rest, values }), null, 2));
      return 0;
    }
    const twoWords = second !== undefined ? COMMANDS[`${first} ${second}`] : undefined;
    const command = twoWords ?? COMMANDS[first];
    if (!command) throw new UsageError(`Unknown command: ${positionals.join(' ')}`);
    const args = { positionals: twoWords ? rest : positionals.slice(1), values: values as Record<string, string | undefined> };
    console.log(JSON.stringify(await command(runtime.services, args), null, 2));
    return 0;
  } finally {
    await runtime.store.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UnavailableError && error.cause) {
      console.error(`Database unavailable: ${(error.cause as Error).message ?? String(error.cause)}`);
    } else if (error instanceof PunctualError) {
      console.error(JSON.stringify(error.toBody(), null, 2));
    } else if (error instanceof ConfigError || error instanceof PlanFileError) {
      console.error(`Configuration error: ${error.message}`);
    } else if (error instanceof UsageError || error instanceof JobsUsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`${(error as Error).message}\n\n${USAGE}`);
    } else {
      console.error(error);
    }
    process.exitCode = 1;
  },
);
