/**
 * The background connection's thread (background-connection.ts): a PASSIVE WAL checkpoint on a
 * timer (and a TRUNCATE once writing has stopped), and the queries it is sent, each answered at once.
 */
import { statSync } from 'node:fs';
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { serveBatches, toThreadError } from '../../threads/batched-thread.js';
import type { BackgroundQuery, BackgroundSettings } from './background-connection.js';

const settings = workerData as BackgroundSettings;
const db = new Database(settings.databasePath, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma(`synchronous = ${settings.synchronous}`);

// PASSIVE never waits for the writer or for readers: it copies what it can and tries again later.
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
/**
 * Once writing has stopped (no commit by any connection since the last tick, which data_version
 * tells: the WAL file's size does not, as SQLite reuses the file from its start) and the WAL is
 * bigger than SETTLED_WAL_BYTES, it is emptied: a load leaves no WAL of up to the writer's bound
 * behind. TRUNCATE takes the write lock for a moment, so it is tried only then, and without
 * waiting: a writer that came back meanwhile wins, and it is tried at a later quiet tick.
 */
const SETTLED_WAL_BYTES = 4 * 1024 * 1024;
const truncate = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)');
const dataVersion = db.prepare('PRAGMA data_version').pluck();
const walPath = `${settings.databasePath}-wal`;
let lastDataVersion = -1;
const checkpoints = setInterval(() => {
  try {
    const version = dataVersion.get() as number;
    const quiet = version === lastDataVersion;
    lastDataVersion = version;
    if (!quiet || (statSync(walPath, { throwIfNoEntry: false })?.size ?? 0) <= SETTLED_WAL_BYTES) {
      checkpoint.run();
      return;
    }
    db.pragma('busy_timeout = 0');
    try {
      truncate.run();
    } finally {
      db.pragma('busy_timeout = 5000');
    }
  } catch {
    // Busy (a writer is back: next time), or a full or read-only disk, which the writer reports on its own writes.
  }
}, settings.checkpointIntervalMs);

const statements = new Map<string, Database.Statement<unknown[], unknown>>();

serveBatches<BackgroundQuery, unknown[]>({
  handle: (batch) =>
    batch.map(({ sql, params }) => {
      try {
        let statement = statements.get(sql);
        if (!statement) statements.set(sql, (statement = db.prepare(sql)));
        return { ok: true, value: statement.all(...params) };
      } catch (error) {
        return { ok: false, error: toThreadError(error) };
      }
    }),
  answer: 'microtask',
  goodbye: () => {
    clearInterval(checkpoints);
    db.close();
  },
});
