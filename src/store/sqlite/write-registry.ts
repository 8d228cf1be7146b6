/**
 * Every write of the embedded store, found by name on the writer thread. The store passes the
 * write function itself (`writer.run(jobWrites.jobCreate, params)`, so "go to definition" on the
 * call lands on the write); a function cannot cross to the thread, so its name goes instead, and
 * the thread looks it up here, in a table built from the same modules when the thread starts.
 * Building it checks that every exported function is registered under its own name and that no
 * two modules export the same one, so a name always means one write.
 */
import * as attemptWrites from './attempt-writes.js';
import * as authWrites from './auth-writes.js';
import * as eventWrites from './event-writes.js';
import * as jobBulkWrites from './job-bulk-writes.js';
import * as jobWrites from './job-writes.js';
import * as overviewWrites from './overview-writes.js';
import * as retentionWrites from './retention-writes.js';
import * as scheduleWrites from './schedule-writes.js';
import * as tenancyWrites from './tenancy-writes.js';
import type { OverviewTally } from './overview-tally.js';
import type { Sql } from './sql.js';

const MODULES = [attemptWrites, authWrites, eventWrites, jobBulkWrites, jobWrites, overviewWrites, retentionWrites, scheduleWrites, tenancyWrites] as const;

/**
 * A write: data in, data out, run inside the group's transaction in its own savepoint. The tally
 * is the group's overview figures (overview-tally.ts), which the writes of attempts add to.
 */
type Write = (sql: Sql, params: unknown, tally: OverviewTally) => unknown;

/** Each of these modules' exports (distributed over the union: every module's own keys). */
type ExportsOf<M> = M extends unknown ? M[keyof M] : never;
/** Any function one of the write modules exports: what SqliteWriter.run accepts. */
export type RegisteredWrite = ExportsOf<(typeof MODULES)[number]>;

/** What goes to the writer thread for one write: the write's name and its parameters. */
export interface WriteRequest {
  name: string;
  params: unknown;
}

function registry(): Record<string, Write> {
  const writes: Record<string, Write> = {};
  for (const module of MODULES) {
    for (const [name, write] of Object.entries(module)) {
      if (typeof write !== 'function' || write.name !== name) throw new Error(`write-registry: ${name} is not a write named after itself`);
      if (Object.hasOwn(writes, name)) throw new Error(`write-registry: two writes are named ${name}`);
      writes[name] = write as Write;
    }
  }
  return writes;
}

/** The writer thread's table of writes by name (only the thread needs it: the main thread sends names). */
export const WRITES = registry();
