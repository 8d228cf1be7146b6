import { AttemptFinishMany, AttemptStartMany } from './attempts.js';
import { ApiKeyFindByHash, ApiKeyTouch } from './auth.js';
import { JobClaimDue, JobInsertGroup, JobNextDueAt } from './jobs.js';

/**
 * The statements every job runs (its dispatch, claim, start and outcome, and its key's lookup),
 * prepared once per connection by ConnectionPool.query; every other statement goes unnamed, parsed
 * and planned with its values at each run.
 *
 * A prepared statement is parsed once, and after five runs PostgreSQL may keep a generic plan (one
 * made without the parameters' values) when it costs no more than the custom ones: planning these
 * large statements was most of the database's CPU per job at low rates (bench:compare pg1 lateness,
 * BENCHMARKS.md stop 41). Their plans do not depend on the values: arrays are unnested and joined
 * on primary keys, due jobs are read from the partial index in run_at order, a key is found by its
 * hash. test/store/postgres/postgres-generic-plans.test.ts EXPLAINs the generic plan of each on
 * tables with statistics and fails on a sequential scan of a table that grows. A statement whose
 * plan depends on its values (the filters of queries/job-filters.ts fold `(:x IS NULL OR …)` away
 * in a custom plan) must not be added here.
 */
export const PREPARED_STATEMENTS: ReadonlySet<string> = new Set([
  ApiKeyFindByHash,
  ApiKeyTouch,
  JobInsertGroup,
  JobClaimDue,
  JobNextDueAt,
  AttemptStartMany,
  AttemptFinishMany,
]);
