/**
 * The embedded store's writes of the project overview's rows, each a function of its parameters run
 * on the writer thread inside the group's transaction, in its own savepoint (write-registry.ts says
 * how a call reaches it). The store passes the function itself:
 * `writer.run(overviewWrites.overviewPrune, params)`.
 */
import { DeliveryMinutePrune, FailedAttemptPrune, LatenessMinutePrune } from './queries/overview.js';
import type { Sql } from './sql.js';

/** Up to `limit` rows in all, table after table. */
export function overviewPrune(sql: Sql, p: { before: number; limit: number }): number {
  let deleted = 0;
  for (const statement of [DeliveryMinutePrune, LatenessMinutePrune, FailedAttemptPrune]) {
    if (deleted >= p.limit) break;
    deleted += sql(statement).run({ before: p.before, limit: p.limit - deleted }).changes;
  }
  return deleted;
}
