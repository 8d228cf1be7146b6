/**
 * Every `punctual` command, in the order `punctual --help` lists them: a noun's module adds its
 * list here.
 */
import type { Command } from '../command.js';
import { eventCommands } from './events.js';
import { jobBulkCommands } from './jobs-bulk.js';
import { jobCommands } from './jobs.js';
import { keyCommands } from './keys.js';
import { projectCommands } from './projects.js';
import { pruneCommands } from './prune.js';
import { scheduleCommands } from './schedules.js';
import { secretCommands } from './secret.js';
import { serverCommands } from './server.js';
import { teamCommands } from './teams.js';
import { userCommands } from './users.js';

export const COMMANDS: readonly Command[] = [
  ...serverCommands,
  ...teamCommands,
  ...projectCommands,
  ...keyCommands,
  ...secretCommands,
  ...jobCommands,
  ...jobBulkCommands,
  ...eventCommands,
  ...scheduleCommands,
  ...pruneCommands,
  ...userCommands,
];
