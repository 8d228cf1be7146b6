import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { isSqliteUnavailable } from './sqlite-errors.js';

/**
 * The event loop's own connection to the file, for reads and migrations. It opens first: it creates
 * the file and turns WAL mode on, which the file keeps, so the writer and background threads (which
 * open with fileMustExist) find both.
 */
export function openReaderConnection(path: string, cacheKib: number): Database.Database {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    // Another process (the CLI beside a running server) may hold the write lock briefly.
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    db.pragma(`cache_size = -${cacheKib}`);
  } catch (error) {
    // SQLite opens a write-protected file read-only and fails only here: close it (or its file
    // descriptor outlives the failed start) and say what is wrong in words an operator can act on.
    db.close();
    if (!isSqliteUnavailable(error)) throw error;
    throw new Error(`Cannot open the SQLite database ${path} for writing (${(error as Error).message}): is its file system read-only or full?`, {
      cause: error,
    });
  }
  return db;
}
