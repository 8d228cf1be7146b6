/** The types the contract's runners and its cases share (store-contract.ts says how they fit). */
import type { JobCreateParams, JobCreateResult, NewJob, ProjectRow, Store } from '../../src/store/store.js';

/** A fresh, empty database for one test, and what the contract needs to look into it. */
export interface ContractDatabase {
  /** A new store on this database, not migrated yet: each call is another instance, as another process would be. */
  openStore(): Store;
  /** The rows of its schema_migrations table, read directly, by version. */
  migrationRows(): Promise<{ version: number; name: string }[]>;
  /** How many rows a table of its schema holds, read directly (what no store method shows, such as the tag lookup's rows). */
  countRows(table: string): Promise<number>;
  /** The numbers of the migration files this store ships. */
  migrationVersions: number[];
  /** Removes the database; the stores opened on it are closed by then. */
  drop(): Promise<void>;
}

/**
 * What the cases of one noun (the *-cases.ts files beside this one) are given: the store of the
 * running test (a fresh one each test, so read it inside the test), its database, and the fixtures.
 */
export interface ContractContext {
  readonly store: Store;
  readonly database: ContractDatabase;
  makeDatabase(): Promise<ContractDatabase>;
  /** The instant every case starts from. */
  T0: number;
  DAY_MS: number;
  /** A team of this plan with one project (and its first webhook secret). */
  makeProject(teamPlan?: string): Promise<ProjectRow>;
  job(id: string, overrides?: Partial<NewJob>): NewJob;
  create(project: ProjectRow, jobs: NewJob[], extra?: Partial<JobCreateParams>): Promise<JobCreateResult>;
}
