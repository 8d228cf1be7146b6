import { AttemptFinishMany, AttemptStartMany } from './attempts.js';
import { ApiKeyFindByHash, ApiKeyTouch } from './auth.js';
import { JobClaimDue, JobInsertGroup, JobInsertGroupTagged, JobInsertGroupWithFires, JobInsertGroupWithFiresTagged, JobNextDueAt } from './jobs.js';

/**
 * The statements of a job's way through the store (its dispatch, with or without tags or a
 * schedule's fire; the claim and the next due time; its attempt's start and outcome) and of an API
 * key's lookup, by name: prepared once per connection by ConnectionPool.query. Every other
 * statement goes unnamed, parsed and planned with its values at each run.
 *
 * A prepared statement is parsed once, and after five runs PostgreSQL may keep a generic plan (one
 * made without the parameters' values) when it costs no more than the custom ones: planning these
 * large statements was most of the database's CPU per job at low rates (bench:compare pg1 lateness,
 * BENCHMARKS.md stop 41). Their plans do not depend on the values: arrays are unnested and joined
 * on primary keys, due jobs are read from the partial index in run_at order, a key is found by its
 * hash. test/store/postgres/postgres-generic-plans.test.ts EXPLAINs the generic plan of each on
 * tables with statistics and fails on one that reads a growing table whole. A statement whose plan
 * depends on its values (the filters of queries/job-filters.ts fold `(:x IS NULL OR …)` away in a
 * custom plan; their generic plans read job_tags whole) must not be added here.
 */
export const PREPARED_BY_NAME: Readonly<Record<string, string>> = {
  ApiKeyFindByHash,
  ApiKeyTouch,
  JobInsertGroup,
  JobInsertGroupTagged,
  JobInsertGroupWithFires,
  JobInsertGroupWithFiresTagged,
  JobClaimDue,
  JobNextDueAt,
  AttemptStartMany,
  AttemptFinishMany,
};

export const PREPARED_STATEMENTS: ReadonlySet<string> = new Set(Object.values(PREPARED_BY_NAME));
