/** The embedded store's reads for retention (SPEC section 12): what a prune would delete, and the files' sizes. */
import { statSync } from 'node:fs';
import type { PruneCutoffs } from '../../retention.js';
import type { PruneCounts, PrunedJobs } from '../store.js';
import { countPrunable } from '../job-rules.js';
import type { BackgroundConnection } from './background-connection.js';
import { EventCountPrunable, IdempotencyKeyCountPrunable, JobCountPrunable, UsageCountPrunable } from './queries/retention.js';

/** Counted on the background connection: each count walks every matching index entry, off the main thread. */
export function countPrunableSqlite(background: BackgroundConnection, cutoffs: PruneCutoffs): Promise<PruneCounts> {
  const first = async <R>(sql: string, param: unknown) => (await background.all<R>(sql, [param]))[0]!;
  return countPrunable(cutoffs, {
    jobs: (project) => first<PrunedJobs>(JobCountPrunable, project),
    idempotencyKeys: async (createdBy) => (await first<{ n: number }>(IdempotencyKeyCountPrunable, createdBy)).n,
    usageRows: async (beforeDay) => (await first<{ n: number }>(UsageCountPrunable, beforeDay)).n,
    events: async (occurredBy) => (await first<{ n: number }>(EventCountPrunable, occurredBy)).n,
  });
}

/** The database file and its write-ahead log, in bytes (0 for a file not there). */
export function storeFileSizes(path: string): { databaseBytes: number; walBytes: number } {
  const size = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  return { databaseBytes: size(path), walBytes: size(`${path}-wal`) };
}
