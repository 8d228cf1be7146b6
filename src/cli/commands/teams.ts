import { positional, required, type Command } from '../command.js';

export const teamCommands: Command[] = [
  {
    name: 'teams create',
    args: '--name <name> [--plan <plan>]',
    options: ['name', 'plan'],
    run: ({ services, args: { values } }) => services.manage.createTeam({ name: required(values, 'name'), ...(values.plan && { plan: values.plan }) }),
  },
  {
    name: 'teams get',
    args: '<teamId>',
    run: ({ services, args }) => services.manage.getTeam(positional(args.positionals, 'teamId')),
  },
  {
    name: 'teams update',
    args: '<teamId> [--name <name>] [--plan <plan>]',
    options: ['name', 'plan'],
    run: ({ services, args: { positionals, values } }) =>
      services.manage.updateTeam(positional(positionals, 'teamId'), { ...(values.name && { name: values.name }), ...(values.plan && { plan: values.plan }) }),
  },
  {
    name: 'usage',
    args: '--team <teamId>',
    summary: "this month's jobs against the plan's quota, and its rate limit",
    options: ['team'],
    table: { rows: 'daily', columns: ['date', 'jobsCreated'] },
    run: ({ services, args: { values } }) => services.manage.usage(required(values, 'team')),
  },
];
