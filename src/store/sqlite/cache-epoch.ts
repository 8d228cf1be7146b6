import { CacheEpochBump } from './queries/tenancy.js';
import type { Sql } from './sql.js';

/**
 * Tells the server's read cache, and that of any other process on this file (the CLI beside a
 * running server), that keys, projects, teams or secrets changed: readers compare this counter
 * once per turn (sqlite-store.ts). Only a write that changed something moves it, so a request
 * that changes nothing leaves the file as it was.
 */
export function bumpCacheEpoch(sql: Sql): void {
  sql(CacheEpochBump).run();
}
