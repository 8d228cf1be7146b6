/**
 * The embedded store's writer thread: the one connection that writes to the SQLite file. The
 * writes of the batches that reach it in one turn of its loop run in one transaction (GroupCommit:
 * BEGIN IMMEDIATE, each write in its own savepoint, COMMIT), and each batch is answered once its
 * transaction is durable: at synchronous=FULL, once this thread has fdatasynced the WAL after the
 * COMMIT (group-commit.ts says why here). Batches that arrive meanwhile form the next group. The
 * writes of several batches can share a group, and their answers one message.
 */
import { closeSync, fdatasyncSync, fstatSync, openSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { UnavailableError } from '../../errors.js';
import { serveBatches, toThreadError, type Outcome } from '../../threads/batched-thread.js';
import { GroupCommit } from './group-commit.js';
import { OverviewTally } from './overview-tally.js';
import type { Sql } from './sql.js';
import { WRITES, type WriteRequest } from './write-registry.js';
import type { WriterSettings } from './writer.js';

const settings = workerData as WriterSettings;
const db = new Database(settings.path, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
// FULL's fsync is GroupCommit's, after COMMIT (see above).
db.pragma('synchronous = NORMAL');
db.pragma('foreign_keys = ON');
db.pragma(`cache_size = -${settings.cacheKib}`);
// No checkpoint inside COMMIT (SQLite's default, at 1,000 WAL pages): the background connection
// checkpoints beside this thread, and limitWal below is the bound if it falls behind or stops.
db.pragma('wal_autocheckpoint = 0');
// When the WAL starts over from its beginning, the file is cut back to this size.
db.pragma(`journal_size_limit = ${settings.walLimitBytes}`);

const statements = new Map<string, Database.Statement<unknown[], unknown>>();
const sql: Sql = (text) => {
  let statement = statements.get(text);
  if (!statement) statements.set(text, (statement = db.prepare(text)));
  return statement;
};

/** The WAL file, opened at the first use (it exists once something was committed in WAL mode). */
let walFd: number | null = null;
const wal = (): number => (walFd ??= openSync(`${settings.path}-wal`, 'r'));

const tally = new OverviewTally();
const writer = new GroupCommit(
  db,
  settings.synchronous === 'FULL' ? () => fdatasyncSync(wal()) : null,
  { afterWrite: (kept) => tally.endWrite(kept), rolledBack: () => tally.endWrite(false), beforeCommit: () => tally.write(sql) },
);

/**
 * Keeps the WAL under its limit while writes keep coming. The background connection's PASSIVE
 * checkpoints copy the WAL into the database beside the writer, but SQLite starts the WAL over
 * only when a checkpoint has copied all of it before a write begins, which a steady stream of
 * writes never allows: the file then grows for as long as the load lasts (2 GB after a million
 * inserts). Past the limit, this thread checkpoints itself between two transactions, when no
 * write can add to the WAL, so the next transaction starts it over and the file is cut back.
 * Checked after every batch: an fstat is a microsecond or two.
 */
function limitWal(): void {
  try {
    if (fstatSync(wal()).size > settings.walLimitBytes) db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // A full or read-only disk: the writes themselves report it.
  }
}

/** What the main thread needs to tell a refused write (UNAVAILABLE: 503) from a failed one: SQLite's own code. */
function threadError(error: unknown): Outcome<never> {
  const raw = error instanceof UnavailableError && error.cause !== undefined ? error.cause : error;
  return { ok: false, error: toThreadError(raw) };
}

serveBatches<WriteRequest, unknown>({
  handle: (batch) => {
    const answers = writer
      .runAll(batch.map((write) => () => WRITES[write.name]!(sql, write.params, tally)))
      .then((outcomes) => outcomes.map((outcome): Outcome<unknown> => (outcome.ok ? { ok: true, value: outcome.value } : threadError(outcome.value))));
    void answers.then(limitWal);
    return answers;
  },
  // A group's writes settle together, when its sync completes: their answers go back at once, not
  // after the next group's transaction.
  answer: 'microtask',
  goodbye: () => {
    writer.flush();
    db.close();
    // A file descriptor is the process's, not the thread's: a writer started again opens its own.
    if (walFd !== null) closeSync(walFd);
  },
});
