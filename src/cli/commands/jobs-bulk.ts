/**
 * `punctual jobs list|cancel|reschedule|retry` (SPEC section 14): a project's jobs by the one
 * filter, and bulk actions on them, on the database directly as the other commands are (no API
 * key). Every option of the filter is the API's, spelt as a flag: `--tag key=value` (repeatable)
 * for `tags`, `--status`, `--schedule`, `--created-after`, `--created-before`, `--due-after`,
 * `--due-before`; the bulk body is then read by the same code as `POST /api/jobs/bulk`, with the
 * same refusals (an empty filter included).
 */
import { InvalidRequestError } from '../../errors.js';
import { readBulkRequest } from '../../services/input/bulk-input.js';
import { readListLimit, readTimestampParam } from '../../services/input/list-query.js';
import { readFilterTags } from '../../services/input/tags-input.js';
import { readStatusParam } from '../../services/jobs-service.js';
import type { JobTagPair } from '../../store/store.js';
import { required, UsageError, type Command, type OptionName, type OptionValues, type StoreContext } from '../command.js';

const FILTER_OPTIONS: OptionName[] = ['project', 'tag', 'status', 'schedule', 'created-after', 'created-before', 'due-after', 'due-before'];
const FILTER_FLAGS = '--project <projectId> [--tag key=value]... [--status S] [--schedule <scheduleId>] [--created-after T] [--created-before T] [--due-after T] [--due-before T]';

/** `--tag key=value`, repeatable: the key ends at the first `=` (a key has none; a value may). */
function tagPairs(values: OptionValues): JobTagPair[] {
  return (values.tag ?? []).map((tag): JobTagPair => {
    const at = tag.indexOf('=');
    if (at < 1) throw new UsageError(`--tag must be key=value, such as --tag order=123 (got ${JSON.stringify(tag)})`);
    return [tag.slice(0, at), tag.slice(at + 1)];
  });
}

/** The `--tag` flags as the object of a filter's tags; a key given twice is a mistake (a job has one value per key). */
function tagObject(values: OptionValues): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const [key, value] of tagPairs(values)) {
    if (Object.hasOwn(tags, key)) throw new UsageError(`--tag ${key}=… is given twice; a job has one value per key`);
    tags[key] = value;
  }
  return tags;
}

/** The filter's flags as `POST /api/jobs/bulk`'s `filter` object, for readBulkRequest to check. */
function filterBody(values: OptionValues): Record<string, unknown> {
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
  for (const [flag, field] of flags) if (values[flag] !== undefined) filter[field] = values[flag];
  return filter;
}

function limitOf(values: OptionValues): number | undefined {
  if (values.limit === undefined) return undefined;
  if (!/^\d{1,6}$/.test(values.limit)) throw new InvalidRequestError('limit must be an integer from 1 to 10000', { field: 'limit' });
  return Number(values.limit);
}

/** cancel, reschedule or retry: the flags as the API's bulk body, read by the same code, then run (or counted). */
const bulk = (action: 'cancel' | 'reschedule' | 'retry') => async ({ services, args: { values } }: StoreContext) => {
  const projectId = required(values, 'project');
  const ctx = await services.schedules.projectContext(projectId);
  const body: Record<string, unknown> = { action, filter: filterBody(values), dryRun: values['dry-run'] === true };
  const limit = limitOf(values);
  if (limit !== undefined) body.limit = limit;
  if (values['scheduled-for'] !== undefined) body.scheduledFor = values['scheduled-for'] === 'now' ? null : values['scheduled-for'];
  const request = readBulkRequest(body, ctx.receivedAt);
  return { action, dryRun: request.dryRun, ...(await services.bulk.act(projectId, request)) };
};


export const jobBulkCommands: Command[] = [
  {
    name: 'jobs list',
    args: `${FILTER_FLAGS} [--limit N] [--cursor C]`,
    summary: "a project's jobs by the one filter (SPEC section 14), newest first",
    options: [...FILTER_OPTIONS, 'limit', 'cursor'],
    table: { rows: 'jobs', columns: ['jobId', 'status', 'nextAttemptAt', 'attemptCount', 'createdAt'] },
    run: async ({ services, args: { values } }) => {
      const ctx = await services.schedules.projectContext(required(values, 'project'));
      return services.jobs.listPage(ctx, {
        status: readStatusParam(values.status),
        tags: readFilterTags(tagObject(values)),
        scheduleId: values.schedule ?? null,
        createdFrom: readTimestampParam(values['created-after'], 'createdAfter'),
        createdBefore: readTimestampParam(values['created-before'], 'createdBefore'),
        dueFrom: readTimestampParam(values['due-after'], 'dueAfter'),
        dueBefore: readTimestampParam(values['due-before'], 'dueBefore'),
        limit: readListLimit(values.limit),
        cursor: values.cursor ?? null,
      });
    },
  },
  { name: 'jobs cancel', args: '--project <projectId> <filter flags as jobs list> [--dry-run] [--limit N]', summary: 'cancel every QUEUED job the filter matches (oldest first, up to --limit, default 1,000; --dry-run counts them)', options: [...FILTER_OPTIONS, 'dry-run', 'limit'], run: bulk('cancel') },
  {
    name: 'jobs reschedule',
    args: '--project <projectId> <filter flags> --scheduled-for <T|now> [--dry-run] [--limit N]',
    summary: 'move every QUEUED job the filter matches to a time, or now',
    options: [...FILTER_OPTIONS, 'scheduled-for', 'dry-run', 'limit'],
    run: bulk('reschedule'),
  },
  { name: 'jobs retry', args: '--project <projectId> <filter flags> [--dry-run] [--limit N]', summary: 'queue every FAILED job the filter matches again', options: [...FILTER_OPTIONS, 'dry-run', 'limit'], run: bulk('retry') },
];
