import { positional, required, type Command } from '../command.js';

export const keyCommands: Command[] = [
  {
    name: 'keys create',
    args: '--project <projectId> --name <name>',
    summary: 'the key is in this answer only',
    options: ['project', 'name'],
    run: ({ services, args: { values } }) => services.manage.createKey(required(values, 'project'), { name: required(values, 'name') }),
  },
  {
    name: 'keys list',
    args: '--project <projectId>',
    options: ['project'],
    table: { rows: 'keys', columns: ['keyId', 'name', 'prefix', 'createdAt', 'lastUsedAt', 'revokedAt'] },
    run: ({ services, args: { values } }) => services.manage.listKeys(required(values, 'project')),
  },
  {
    name: 'keys revoke',
    args: '<keyId>',
    run: ({ services, args }) => services.manage.revokeKey(positional(args.positionals, 'keyId')),
  },
];
