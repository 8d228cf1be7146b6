import { bodyOption, positional, required, type Command } from '../command.js';

const PROJECT_COLUMNS = ['projectId', 'name', 'webhookUrl', 'paused', 'deliveryConcurrency', 'createdAt'];

export const projectCommands: Command[] = [
  {
    name: 'projects create',
    args: '--team <teamId> --name <name> [--webhook-url <url>] [--body \'<settings>\']',
    summary: 'the answer has its webhook secret',
    options: ['team', 'name', 'webhook-url', 'body'],
    run: ({ services, args: { values } }) =>
      services.manage.createProject(required(values, 'team'), {
        ...bodyOption(values),
        name: required(values, 'name'),
        ...(values['webhook-url'] !== undefined && { webhookUrl: values['webhook-url'] || null }),
      }),
  },
  {
    name: 'projects list',
    args: '--team <teamId>',
    options: ['team'],
    table: { rows: 'projects', columns: PROJECT_COLUMNS },
    run: ({ services, args: { values } }) => services.manage.listProjects(required(values, 'team')),
  },
  {
    name: 'projects get',
    args: '<projectId>',
    run: ({ services, args }) => services.manage.getProject(positional(args.positionals, 'projectId')),
  },
  {
    name: 'projects update',
    args: '<projectId> [--webhook-url <url|"">] [--body \'<PATCH body>\']',
    summary: 'any field of PATCH /manage/v1/projects/:projectId',
    options: ['webhook-url', 'body'],
    run: ({ services, args: { positionals, values } }) => {
      const body = bodyOption(values);
      if (values['webhook-url'] !== undefined) body.webhookUrl = values['webhook-url'] || null;
      return services.manage.updateProject(positional(positionals, 'projectId'), body);
    },
  },
  {
    name: 'projects pause',
    args: '<projectId>',
    summary: 'deliver nothing until resumed; dispatches are still accepted',
    run: ({ services, args }) => services.manage.updateProject(positional(args.positionals, 'projectId'), { paused: true }),
  },
  {
    name: 'projects resume',
    args: '<projectId>',
    summary: 'deliver the jobs that waited, earliest due first',
    run: ({ services, args }) => services.manage.updateProject(positional(args.positionals, 'projectId'), { paused: false }),
  },
  {
    name: 'projects health',
    args: '<projectId>',
    summary: 'healthy, failing or held, since when, and the next probe',
    run: ({ services, args }) => services.manage.getHealth(positional(args.positionals, 'projectId')),
  },
  {
    name: 'projects probe',
    args: '<projectId>',
    summary: 'a test delivery with "probe": true now; a success ends a hold',
    run: ({ services, args }) => services.testDeliveries.probe(positional(args.positionals, 'projectId')),
  },
  {
    name: 'projects overview',
    args: '<projectId>',
    summary: 'jobs by status, attempts per minute (24 h), lateness (1 h), last failures',
    table: { rows: 'recentFailures', columns: ['finishedAt', 'jobId', 'attemptNumber', 'outcome', 'statusCode', 'error'] },
    run: ({ services, args }) => services.manage.getOverview(positional(args.positionals, 'projectId')),
  },
];
