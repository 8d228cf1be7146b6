/**
 * The project overview in the embedded store (../overview-store.ts): read on the background
 * connection, as the counts walk up to JOB_COUNT_LIMIT index entries per status
 * (overview-reads.ts); its figures are written with the attempts (overview-tally.ts).
 */
import type { OverviewStore, ProjectOverview, ProjectOverviewParams } from '../overview-store.js';
import type { BackgroundConnection } from './background-connection.js';
import { readProjectOverview } from './overview-reads.js';
import * as overviewWrites from './overview-writes.js';
import type { SqliteWriter } from './writer.js';

export class SqliteOverview implements OverviewStore {
  constructor(
    private readonly writer: SqliteWriter,
    private readonly background: BackgroundConnection,
  ) {}

  projectOverview(params: ProjectOverviewParams): Promise<ProjectOverview> {
    return readProjectOverview(this.background, params);
  }

  /** One row per minute already (a single writer needs no shards): nothing to fold. */
  async overviewCompact(): Promise<number> {
    return 0;
  }

  overviewPrune(params: { before: number; limit: number }): Promise<number> {
    return this.writer.run(overviewWrites.overviewPrune, params);
  }
}
