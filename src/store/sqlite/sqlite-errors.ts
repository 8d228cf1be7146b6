import { UnavailableError } from '../../errors.js';
import { THREAD_STOPPED } from '../../threads/batched-thread.js';

/**
 * SQLite result codes that say the file cannot be written (or read) right now, not that the
 * request was wrong: a full disk, a read-only file system, an I/O error, a lock held too long.
 * Like an unreachable PostgreSQL, they are UNAVAILABLE (503, Retry-After), never a 500.
 */
const UNAVAILABLE_CODE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|BUSY|LOCKED|NOMEM)/;

/** Also a write lost with the writer thread, which died before answering (it restarts at the next write). */
export function isSqliteUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && (UNAVAILABLE_CODE.test(code) || code === THREAD_STOPPED);
}

/** A write refused for lack of space (SQLITE_FULL: the file system answered ENOSPC). */
export function isSqliteFull(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_FULL');
}

/**
 * The writer's own fdatasync of the WAL failed (group-commit.ts): no write is taken until the
 * process restarts. Punctual's code, not SQLite's, shaped like SQLite's I/O errors (UNAVAILABLE).
 */
export const WAL_SYNC_FAILED = 'SQLITE_IOERR_WAL_SYNC';

export function translateSqliteError(error: unknown): unknown {
  if (!isSqliteUnavailable(error)) return error;
  const message =
    (error as { code?: unknown }).code === WAL_SYNC_FAILED
      ? 'The database could not make a write durable (its fsync failed): this instance takes no writes until it is restarted'
      : 'The database cannot be written right now (disk full or read-only?); retry shortly';
  const unavailable = new UnavailableError(message, {}, { 'retry-after': '1' });
  // Kept for logs; never sent to clients.
  unavailable.cause = error;
  return unavailable;
}
