/**
 * The storage contract of retention (SPEC section 12), part of Store (store.ts): what is kept how
 * long, pruning in small batches, and what pruning would delete.
 */
import type { PruneCutoffs } from '../retention.js';
import { methodList } from './forward-methods.js';

export interface PrunedJobs {
  jobs: number;
  attempts: number;
}

export interface PruneCounts extends PrunedJobs {
  idempotencyKeys: number;
  /** Daily usage rows (PostgreSQL keeps a day in up to 16). */
  usageRows: number;
  events: number;
}

export interface RetentionStore {
  /** Every project's retention setting, for the retention service. */
  projectListRetention(): Promise<{ projectId: string; retentionDays: number | null }[]>;
  /**
   * Deletes up to `limit` of a project's final jobs (COMPLETED, FAILED, CANCELLED) that became
   * final at or before `finalBy`, oldest first, with their attempts. Rows another instance is
   * deleting at the same moment are skipped, not waited for.
   */
  jobPruneFinal(params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs>;
  /** Deletes up to `limit` idempotency keys created at or before `createdBy`. */
  idempotencyKeyPrune(params: { createdBy: number; limit: number }): Promise<number>;
  /** Deletes up to `limit` daily usage rows of days before `beforeDay` (YYYY-MM-DD). */
  usagePrune(params: { beforeDay: string; limit: number }): Promise<number>;
  /** What pruning at these cut-offs would delete now (`punctual prune --dry-run`), off the request path. */
  pruneCount(cutoffs: PruneCutoffs): Promise<PruneCounts>;
  /** Bytes the store occupies: the database, and its write-ahead log where it has one of its own (SQLite). */
  storeSize(): Promise<{ databaseBytes: number; walBytes: number | null }>;
}

/** RetentionStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const RETENTION_STORE_METHODS = methodList<RetentionStore>()(['projectListRetention', 'jobPruneFinal', 'idempotencyKeyPrune', 'usagePrune', 'pruneCount', 'storeSize'] as const);
