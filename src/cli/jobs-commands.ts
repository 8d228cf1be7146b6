/**
 * `punctual jobs list|cancel|reschedule|retry` (SPEC section 14): a project's jobs by the one
 * filter, and bulk actions on them, on the database directly as the other commands are (no API
 * key). A module of its own with its options, usage lines and commands, which punctual.ts merges
 * into its own tables. Every option of the filter is the API's, spelt as a flag: `--tag key=value`
 * (repeatable) for `tags`, `--status`, `--schedule`, `--created-after`, `--created-before`,
 * `--due-after`, `--due-before`; the bulk body is then read by the same code as
 * `POST /api/jobs/bulk`, with the same refusals (an empty filter included).
 */
import { InvalidRequestError } from '../errors.js';
import { readBulkRequest } from '../services/input/bulk-input.js';
import { readListLimit, readTimestampParam } from '../services/input/list-query.js';
import { readFilterTags } from '../services/input/tags-input.js';
import { readStatusParam } from '../services/jobs-service.js';
import type { Services } from '../services/services.js';
import type { JobTagPair } from '../store/store.js';

/** The flags these commands add to parseArgs' options. */
export const JOBS_OPTIONS = {
  tag: { type: 'string', multiple: true },
  status: { type: 'string' },
  schedule: { type: 'string' },
  'created-after': { type: 'string' },
  'created-before': { type: 'string' },
  'due-after': { type: 'string' },
  'due-before': { type: 'string' },
  'scheduled-for': { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

const FILTER_FLAGS = '[--tag key=value]... [--status S] [--schedule <scheduleId>] [--created-after T] [--created-before T] [--due-after T] [--due-before T]';

export const JOBS_USAGE = `  jobs list --project <projectId> ${FILTER_FLAGS} [--limit N] [--cursor C]
                                                          a project's jobs by the one filter (SPEC section 14), newest first
  jobs cancel --project <projectId> <filter flags> [--dry-run] [--limit N]
  jobs reschedule --project <projectId> <filter flags> --scheduled-for <T|now> [--dry-run] [--limit N]
  jobs retry --project <projectId> <filter flags> [--dry-run] [--limit N]
                                                          every QUEUED (cancel, reschedule) or FAILED (retry) job the filter
                                                          matches, oldest first, up to --limit (1..10,000, default 1,000);
                                                          --dry-run counts them; a filter must name something`;

type Values = Record<string, unknown>;
type JobsCommand = (services: Services, args: { positionals: string[]; values: Values }) => Promise<unknown>;

/** A usage mistake in these commands' flags (punctual.ts prints it with the usage). */
export class JobsUsageError extends Error {}

const text = (values: Values, name: string): string | undefined => (typeof values[name] === 'string' ? (values[name] as string) : undefined);

function projectOf(values: Values): string {
  const project = text(values, 'project');
  if (!project) throw new JobsUsageError('--project is required');
  return project;
}

/** `--tag key=value`, repeatable: the key ends at the first `=` (a key has none; a value may). */
function tagPairs(values: Values): JobTagPair[] {
  const given = (values.tag as string[] | undefined) ?? [];
  return given.map((tag): JobTagPair => {
    const at = tag.indexOf('=');
    if (at < 1) throw new JobsUsageError(`--tag must be key=value, such as --tag order=123 (got ${JSON.stringify(tag)})`);
    return [tag.slice(0, at), tag.slice(at + 1)];
  });
}

/** The `--tag` flags as the object of a filter's tags; a key given twice is a mistake (a job has one value per key). */
function tagObject(values: Values): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const [key, value] of tagPairs(values)) {
    if (Object.hasOwn(tags, key)) throw new JobsUsageError(`--tag ${key}=… is given twice; a job has one value per key`);
    tags[key] = value;
  }
  return tags;
}

/** The filter's flags as `POST /api/jobs/bulk`'s `filter` object, for readBulkRequest to check. */
function filterBody(values: Values): Record<string, unknown> {
  const tags = tagObject(values);
  const filter: Record<string, unknown> = {};
  if (Object.keys(tags).length > 0) filter.tags = tags;
  const flags = [
    ['status', 'status'],
    ['schedule', 'scheduleId'],
    ['created-after', 'createdAfter'],
    ['created-before', 'createdBefore'],
    ['due-after', 'dueAfter'],
    ['due-before', 'dueBefore'],
  ] as const;
  for (const [flag, field] of flags) if (text(values, flag) !== undefined) filter[field] = text(values, flag);
  return filter;
}

function limitOf(values: Values): number | undefined {
  const limit = text(values, 'limit');
  if (limit === undefined) return undefined;
  if (!/^\d{1,6}$/.test(limit)) throw new InvalidRequestError('limit must be an integer from 1 to 10000', { field: 'limit' });
  return Number(limit);
}

/** cancel, reschedule or retry: the flags as the API's bulk body, read by the same code, then run (or counted). */
const bulk =
  (action: 'cancel' | 'reschedule' | 'retry'): JobsCommand =>
  async (services, { values }) => {
    const projectId = projectOf(values);
    const ctx = await services.schedules.projectContext(projectId);
    const body: Record<string, unknown> = { action, filter: filterBody(values), dryRun: values['dry-run'] === true };
    const limit = limitOf(values);
    if (limit !== undefined) body.limit = limit;
    const scheduledFor = text(values, 'scheduled-for');
    if (scheduledFor !== undefined) body.scheduledFor = scheduledFor === 'now' ? null : scheduledFor;
    const request = readBulkRequest(body, ctx.receivedAt);
    return { action, dryRun: request.dryRun, ...(await services.bulk.act(projectId, request)) };
  };

export const JOBS_COMMANDS: Record<string, JobsCommand> = {
  'jobs list': async (services, { values }) => {
    const ctx = await services.schedules.projectContext(projectOf(values));
    return services.jobs.listPage(ctx, {
      status: readStatusParam(text(values, 'status')),
      tags: readFilterTags(tagObject(values)),
      scheduleId: text(values, 'schedule') ?? null,
      createdFrom: readTimestampParam(text(values, 'created-after'), 'createdAfter'),
      createdBefore: readTimestampParam(text(values, 'created-before'), 'createdBefore'),
      dueFrom: readTimestampParam(text(values, 'due-after'), 'dueAfter'),
      dueBefore: readTimestampParam(text(values, 'due-before'), 'dueBefore'),
      limit: readListLimit(text(values, 'limit')),
      cursor: text(values, 'cursor') ?? null,
    });
  },
  'jobs cancel': bulk('cancel'),
  'jobs reschedule': bulk('reschedule'),
  'jobs retry': bulk('retry'),
};
