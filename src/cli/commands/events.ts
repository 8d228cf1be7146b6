import { pageQuery, required, type Command } from '../command.js';

export const eventCommands: Command[] = [
  {
    name: 'events list',
    args: '--project <projectId> [--limit <1..100>] [--cursor <cursor>]',
    summary: "a project's events (SPEC section 10), newest first, with their delivery state",
    options: ['project', 'limit', 'cursor'],
    table: { rows: 'events', columns: ['eventId', 'type', 'occurredAt', 'status', 'attemptCount', 'lastError'] },
    run: ({ services, args: { values } }) => services.manage.listEvents(required(values, 'project'), pageQuery(values)),
  },
];
