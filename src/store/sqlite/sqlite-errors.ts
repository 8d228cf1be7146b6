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

export function translateSqliteError(error: unknown): unknown {
  if (!isSqliteUnavailable(error)) return error;
  const unavailable = new UnavailableError('The database cannot be written right now (disk full or read-only?); retry shortly', {}, { 'retry-after': '1' });
  // Kept for logs; never sent to clients.
  unavailable.cause = error;
  return unavailable;
}
