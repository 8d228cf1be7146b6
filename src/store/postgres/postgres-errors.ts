import { UnavailableError } from '../../errors.js';

/**
 * Which PostgreSQL and node-postgres errors mean "not now" rather than "wrong": they become
 * UNAVAILABLE (503, Retry-After) before they leave the store, never a 500. A client that retries
 * later can succeed; nothing about its request has to change.
 */

/** Node's socket errors: the server cannot be reached, or the connection broke. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN',
  'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN',
]);

/** Whole SQLSTATE classes (the first two characters) that are about the server, not the statement. */
const UNAVAILABLE_CLASSES = new Set([
  // 08: connection exception (connection lost, cannot connect, protocol broken by a dying server).
  '08',
  // 28: authentication failed, as when the password was rotated before every instance got the new one.
  '28',
  // 53: insufficient resources (disk full, out of memory, too many connections).
  '53',
]);

const UNAVAILABLE_SQLSTATES = new Set([
  // Operator intervention: admin shutdown, crash shutdown, cannot connect now (starting up or in
  // recovery), database dropped, idle session timeout; 57014 is a statement cancelled by
  // statement_timeout.
  '57P01', '57P02', '57P03', '57P04', '57P05', '57014',
  // invalid_catalog_name: the database is missing (not created yet, or being restored).
  '3D000',
  // read_only_sql_transaction: connected to a replica or a demoted primary, as during a failover.
  '25006',
  // Serialization failure and deadlock: retried once inside the store first (see isWriteConflict).
  '40001', '40P01',
]);

/** node-postgres says these in words only, with no code. */
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|is not queryable|connection is closed|Cannot use a pool after calling end/i;

/** A write that lost to a concurrent one and was rolled back whole: running it again is safe. */
export function isWriteConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/**
 * A named prepared statement that no longer fits its connection: `0A000 cached plan must not
 * change result type` after a migration changed a column the statement returns (an instance of
 * the old version beside one migrating), told by the routine that raises it (its message is
 * translated under lc_messages; the routine's name never is), or `26000` when it no longer exists
 * on the connection (deallocated). Prepared again under a new name, the statement runs
 * (ConnectionPool.query); a second time in a row, the request answers 503.
 */
export function isStalePreparedStatement(error: unknown): boolean {
  const e = (error ?? {}) as { code?: unknown; routine?: unknown; message?: unknown };
  if (e.code === '26000') return true;
  return e.code === '0A000' && (e.routine === 'RevalidateCachedQuery' || (typeof e.message === 'string' && /cached plan must not change result type/.test(e.message)));
}

/**
 * What the store runs once more, alone or with its whole transaction (ConnectionPool): PostgreSQL
 * rolled it back whole (a write conflict) or refused it before it ran (a stale prepared statement),
 * so running it again is running it once.
 */
export function runsAgainOnce(error: unknown): boolean {
  return isWriteConflict(error) || isStalePreparedStatement(error);
}

export function isPostgresUnavailable(error: unknown): boolean {
  if (isStalePreparedStatement(error)) return true;
  const e = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string') {
    if (SOCKET_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.has(e.code)) return true;
    if (/^[0-9A-Z]{5}$/.test(e.code) && UNAVAILABLE_CLASSES.has(e.code.slice(0, 2))) return true;
  }
  return typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message);
}

/** An UnavailableError for the errors above (the original kept as its cause, for logs); others unchanged. */
export function translatePostgresError(error: unknown): unknown {
  if (!isPostgresUnavailable(error)) return error;
  const message = isWriteConflict(error)
    ? 'The database is busy with conflicting writes; retry shortly'
    : isStalePreparedStatement(error)
      ? 'The database schema changed under a running statement; retry shortly'
      : 'The database is unreachable; retry shortly';
  const unavailable = new UnavailableError(message, {}, { 'retry-after': '1' });
  // Kept for logs and start-up errors; never sent to clients.
  unavailable.cause = error;
  return unavailable;
}
