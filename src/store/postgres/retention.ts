/** Retention on PostgreSQL (SPEC section 12): small batches that instances share without waiting on each other. */
import type { PruneCutoffs } from '../../retention.js';
import type { PruneCounts, PrunedJobs, RetentionStore } from '../retention-store.js';
import { countPrunable } from '../job-rules.js';
import type { ConnectionPool } from './connection-pool.js';
import { EventCountPrunable, IdempotencyKeyCountPrunable, IdempotencyKeyPrune, JobCountPrunable, JobPruneFinal, ProjectListRetention, StoreSize, UsageCountPrunable, UsagePrune } from './queries/retention.js';

export class PostgresRetention implements RetentionStore {
  constructor(private readonly db: ConnectionPool) {}

  projectListRetention(): Promise<{ projectId: string; retentionDays: number | null }[]> {
    return this.db.rows(ProjectListRetention);
  }

  async jobPruneFinal(params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs> {
    return (await this.db.rows<{ jobs: number; attempts: number }>(JobPruneFinal, [params.projectId, params.finalBy, params.limit]))[0]!;
  }

  async idempotencyKeyPrune(params: { createdBy: number; limit: number }): Promise<number> {
    return (await this.db.query(IdempotencyKeyPrune, [params.createdBy, params.limit])).rowCount ?? 0;
  }

  async usagePrune(params: { beforeDay: string; limit: number }): Promise<number> {
    return (await this.db.query(UsagePrune, [params.beforeDay, params.limit])).rowCount ?? 0;
  }

  pruneCount(cutoffs: PruneCutoffs): Promise<PruneCounts> {
    const n = async (sql: string, param: unknown) => (await this.db.rows<{ n: number }>(sql, [param]))[0]!.n;
    return countPrunable(cutoffs, {
      jobs: async (project) => (await this.db.rows<PrunedJobs>(JobCountPrunable, [project.projectId, project.finalBy]))[0]!,
      idempotencyKeys: (createdBy) => n(IdempotencyKeyCountPrunable, createdBy),
      usageRows: (beforeDay) => n(UsageCountPrunable, beforeDay),
      events: (occurredBy) => n(EventCountPrunable, occurredBy),
    });
  }

  async storeSize(): Promise<{ databaseBytes: number; walBytes: null }> {
    const bytes = (await this.db.rows<{ bytes: string }>(StoreSize))[0]!.bytes;
    return { databaseBytes: Number(bytes), walBytes: null };
  }
}
