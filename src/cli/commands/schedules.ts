import { bodyOption, pageQuery, positional, required, type Command, type StoreContext } from '../command.js';

const context = ({ services, args }: StoreContext) => services.schedules.projectContext(required(args.values, 'project'));
const scheduleId = ({ args }: StoreContext) => positional(args.positionals, 'scheduleId');

export const scheduleCommands: Command[] = [
  {
    name: 'schedules create',
    args: "--project <projectId> --body '<POST /api/schedules body>'",
    options: ['project', 'body'],
    run: async (c) => c.services.schedules.create(await context(c), bodyOption(c.args.values)),
  },
  {
    name: 'schedules list',
    args: '--project <projectId> [--limit <1..100>] [--cursor <cursor>]',
    summary: "a project's recurring schedules (SPEC section 9), newest first",
    options: ['project', 'limit', 'cursor'],
    table: { rows: 'schedules', columns: ['scheduleId', 'name', 'cron', 'timezone', 'paused', 'nextRunAt', 'lastJobId'] },
    run: async (c) => c.services.schedules.list(await context(c), { limit: '100', ...pageQuery(c.args.values) }),
  },
  {
    name: 'schedules get',
    args: '<scheduleId> --project <projectId>',
    options: ['project'],
    run: async (c) => c.services.schedules.get(await context(c), scheduleId(c)),
  },
  {
    name: 'schedules update',
    args: "<scheduleId> --project <projectId> --body '<PATCH body>'",
    options: ['project', 'body'],
    run: async (c) => c.services.schedules.update(await context(c), scheduleId(c), bodyOption(c.args.values)),
  },
  {
    name: 'schedules pause',
    args: '<scheduleId> --project <projectId>',
    options: ['project'],
    run: async (c) => c.services.schedules.update(await context(c), scheduleId(c), { paused: true }),
  },
  {
    name: 'schedules resume',
    args: '<scheduleId> --project <projectId>',
    options: ['project'],
    run: async (c) => c.services.schedules.update(await context(c), scheduleId(c), { paused: false }),
  },
  {
    name: 'schedules trigger',
    args: '<scheduleId> --project <projectId>',
    summary: 'one extra job now',
    options: ['project'],
    run: async (c) => c.services.schedules.trigger(await context(c), scheduleId(c)),
  },
  {
    name: 'schedules delete',
    args: '<scheduleId> --project <projectId>',
    summary: 'its QUEUED jobs are cancelled',
    options: ['project'],
    run: async (c) => c.services.schedules.delete(await context(c), scheduleId(c)),
  },
];
