/** The project overview on PostgreSQL (../overview-store.ts): reads summing each minute's shards, and their pruning. */
import {
  RECENT_FAILURES_LIMIT,
  overviewOf,
  overviewWindows,
  type DeliveryMinute,
  type FailedAttempt,
  type OverviewStore,
  type ProjectOverview,
  type ProjectOverviewParams,
} from '../overview-store.js';
import type { JobStatus } from '../store.js';
import type { ConnectionPool } from './connection-pool.js';
import { DeliveryMinuteCompact, DeliveryMinuteList, DeliveryMinutePrune, FailedAttemptListRecent, FailedAttemptPrune, JobCountByStatusOfProject, LatenessHistogram, LatenessMinuteCompact, LatenessMinutePrune } from './queries/overview.js';

export class PostgresOverview implements OverviewStore {
  constructor(private readonly db: ConnectionPool) {}

  /** Four short reads side by side, on the pool; no transaction: each figure stands on its own. */
  async projectOverview(params: ProjectOverviewParams): Promise<ProjectOverview> {
    const { projectId, countLimit, deliveriesFrom, latenessFrom, until } = overviewWindows(params);
    const [counts, deliveryMinutes, histogram, recentFailures] = await Promise.all([
      this.db.rows<{ status: JobStatus; n: number }>(JobCountByStatusOfProject, [projectId, countLimit + 1]),
      this.db.rows<DeliveryMinute>(DeliveryMinuteList, [projectId, deliveriesFrom, until]),
      this.db.rows<{ bucket: number; attempts: number }>(LatenessHistogram, [projectId, latenessFrom, until]),
      this.db.rows<FailedAttempt>(FailedAttemptListRecent, [projectId, deliveriesFrom, until, RECENT_FAILURES_LIMIT]),
    ]);
    return overviewOf(counts, deliveryMinutes, histogram, recentFailures);
  }

  /** Up to `limit` rows in all, table after table. */
  async overviewCompact(params: { before: number; limit: number }): Promise<number> {
    let folded = 0;
    for (const statement of [DeliveryMinuteCompact, LatenessMinuteCompact]) {
      if (folded >= params.limit) break;
      folded += (await this.db.rows<{ n: number }>(statement, [params.before, params.limit - folded]))[0]!.n;
    }
    return folded;
  }

  /** Up to `limit` rows in all, table after table. */
  async overviewPrune(params: { before: number; limit: number }): Promise<number> {
    let deleted = 0;
    for (const statement of [DeliveryMinutePrune, LatenessMinutePrune, FailedAttemptPrune]) {
      if (deleted >= params.limit) break;
      deleted += (await this.db.query(statement, [params.before, params.limit - deleted])).rowCount ?? 0;
    }
    return deleted;
  }
}
