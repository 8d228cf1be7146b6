/**
 * The embedded store's bulk actions (SPEC section 14), run on the writer thread inside the
 * group's transaction, in their own savepoint (write-registry.ts): the read of the filter's next
 * jobs and their change in one go, so that with the single writer no claim comes between them.
 */
import type { FilterDriver } from '../job-rules.js';
import type { JobBulkAction, JobBulkChunk } from '../job-store.js';
import { JobBulkCancel, JobBulkRead, JobBulkReschedule, JobBulkRetry } from './queries/job-filters.js';
import type { Sql } from './sql.js';

const CHANGE: Record<JobBulkAction['kind'], string> = { cancel: JobBulkCancel, reschedule: JobBulkReschedule, retry: JobBulkRetry };

/** One transaction of a bulk action: `values` are JobBulkRead's (job-filters.ts, bulkReadStatement). */
export function jobBulkAct(sql: Sql, p: { driver: FilterDriver; values: Record<string, unknown>; action: JobBulkAction; now: number }): JobBulkChunk {
  const read = sql(JobBulkRead[p.driver]).all(p.values) as { seq: number; key: number }[];
  if (read.length === 0) return { matched: 0, changed: 0, next: null, earliestRunAt: null };
  const changed = sql(CHANGE[p.action.kind]).all({
    seqs: JSON.stringify(read.map((job) => job.seq)),
    projectId: p.values.projectId,
    now: p.now,
    scheduledFor: p.action.kind === 'reschedule' ? p.action.scheduledFor : null,
  }) as { runAt: number }[];
  const last = read[read.length - 1]!;
  let earliestRunAt: number | null = null;
  if (p.action.kind !== 'cancel') for (const { runAt } of changed) earliestRunAt = Math.min(runAt, earliestRunAt ?? runAt);
  return { matched: read.length, changed: changed.length, next: { key: last.key, seq: last.seq }, earliestRunAt };
}
