/**
 * `punctual jobs …`: a job's status and attempts, as GET /api/jobs/:jobId and …/attempts answer
 * them, read through the project's own context (another project's job is NOT_FOUND, as there).
 */
import { positional, required, type Command, type StoreContext } from '../command.js';

const context = ({ services, args }: StoreContext) => services.schedules.projectContext(required(args.values, 'project'));
const jobId = ({ args }: StoreContext) => positional(args.positionals, 'jobId');

export const jobCommands: Command[] = [
  {
    name: 'jobs get',
    args: '<jobId> --project <projectId>',
    summary: "a job's status, as GET /api/jobs/:jobId answers it",
    options: ['project'],
    run: async (c) => c.services.jobs.get(await context(c), jobId(c)),
  },
  {
    name: 'jobs attempts',
    args: '<jobId> --project <projectId>',
    summary: "a job's delivery attempts, oldest first",
    options: ['project'],
    table: { rows: 'attempts', columns: ['attemptNumber', 'startedAt', 'outcome', 'statusCode', 'durationMs', 'error'] },
    run: async (c) => c.services.jobs.attempts(await context(c), jobId(c)),
  },
];
