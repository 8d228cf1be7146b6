/**
 * The background connection's thread (background-connection.ts): a PASSIVE WAL checkpoint on a
 * timer, and the queries it is sent, each answered at once.
 */
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { serveBatches, toThreadError } from '../../threads/batched-thread.js';
import type { BackgroundSettings } from './background-connection.js';

const settings = workerData as BackgroundSettings;
const db = new Database(settings.databasePath, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma(`synchronous = ${settings.synchronous}`);

// PASSIVE never waits for the writer or for readers: it copies what it can and tries again later.
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const checkpoints = setInterval(() => {
  try {
    checkpoint.run();
  } catch {
    // A full or read-only disk: the writer reports that on its own writes.
  }
}, settings.checkpointIntervalMs);

const statements = new Map<string, Database.Statement<unknown[], unknown>>();

serveBatches<string, unknown[]>({
  handle: (batch) =>
    batch.map((sql) => {
      try {
        let statement = statements.get(sql);
        if (!statement) statements.set(sql, (statement = db.prepare(sql)));
        return { ok: true, value: statement.all() };
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
