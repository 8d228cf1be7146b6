/**
 * Retention in the embedded store (../retention-store.ts, SPEC section 12): each prune is a small
 * batch the writer commits between the group commits of the API and the deliveries
 * (retention-writes.ts); the counts run on the background connection (retention-reads.ts).
 */
import type { PruneCutoffs } from '../../retention.js';
import type { PruneCounts, PrunedJobs, RetentionStore } from '../retention-store.js';
import type { BackgroundConnection } from './background-connection.js';
import { ProjectListRetention } from './queries/retention.js';
import * as retentionWrites from './retention-writes.js';
import { countPrunableSqlite, storeFileSizes } from './retention-reads.js';
import type { Sql } from './sql.js';
import type { SqliteWriter } from './writer.js';

export class SqliteRetention implements RetentionStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
    private readonly background: BackgroundConnection,
    private readonly path: string,
  ) {}

  async projectListRetention(): Promise<{ projectId: string; retentionDays: number | null }[]> {
    return this.sql(ProjectListRetention).all() as { projectId: string; retentionDays: number | null }[];
  }

  jobPruneFinal(params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs> {
    return this.writer.run(retentionWrites.jobPruneFinal, params);
  }

  idempotencyKeyPrune(params: { createdBy: number; limit: number }): Promise<number> {
    return this.writer.run(retentionWrites.idempotencyKeyPrune, params);
  }

  usagePrune(params: { beforeDay: string; limit: number }): Promise<number> {
    return this.writer.run(retentionWrites.usagePrune, params);
  }

  pruneCount(cutoffs: PruneCutoffs): Promise<PruneCounts> {
    return countPrunableSqlite(this.background, cutoffs);
  }

  async storeSize(): Promise<{ databaseBytes: number; walBytes: number | null }> {
    return storeFileSizes(this.path);
  }
}
