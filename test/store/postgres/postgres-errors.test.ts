import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import { isPostgresUnavailable, isStalePreparedStatement, isWriteConflict, translatePostgresError } from '../../../src/store/postgres/postgres-errors.js';

/** An error as node-postgres builds it from the server's ErrorResponse. */
function serverError(code: string, message = `server said ${code}`): pg.DatabaseError {
  const error = new pg.DatabaseError(message, 0, 'error');
  error.code = code;
  return error;
}

/** Errors that are about the database being unreachable or overloaded answer 503, not 500. */
describe('which PostgreSQL errors are UNAVAILABLE', () => {
  it.each([
    ['57P01', 'admin shutdown (a restart, pg_terminate_backend)'],
    ['57P02', 'crash shutdown'],
    ['57P03', 'cannot connect now (starting up, in recovery)'],
    ['57014', 'statement cancelled by statement_timeout'],
    ['53300', 'too many connections'],
    ['53100', 'disk full'],
    ['53200', 'out of memory'],
    ['08000', 'connection exception'],
    ['08003', 'connection does not exist'],
    ['08006', 'connection failure'],
    ['08001', 'cannot establish a connection'],
    ['08P01', 'protocol violation'],
    ['28P01', 'password authentication failed (a rotation under way)'],
    ['28000', 'invalid authorization (role may not log in)'],
    ['3D000', 'database does not exist'],
    ['25006', 'read-only transaction (a replica, a demoted primary)'],
    ['40001', 'serialization failure, after the store retried once'],
    ['40P01', 'deadlock, after the store retried once'],
  ])('%s: %s', (code) => {
    const error = serverError(code);
    expect(isPostgresUnavailable(error)).toBe(true);
    const translated = translatePostgresError(error);
    expect(translated).toBeInstanceOf(UnavailableError);
    expect((translated as UnavailableError).statusCode).toBe(503);
    expect((translated as UnavailableError).headers).toEqual({ 'retry-after': '1' });
    expect((translated as UnavailableError).cause).toBe(error);
  });

  it.each(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])('socket error %s', (code) => {
    expect(isPostgresUnavailable(Object.assign(new Error(`connect ${code}`), { code }))).toBe(true);
  });

  it.each([
    'Client was closed and is not queryable',
    'Client has encountered a connection error and is not queryable',
    'Connection terminated unexpectedly',
    'Connection terminated due to connection timeout',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Cannot use a pool after calling end on the pool',
  ])('node-postgres message "%s"', (message) => {
    expect(isPostgresUnavailable(new Error(message))).toBe(true);
  });

  it.each([
    ['23505', 'unique violation'],
    ['23503', 'foreign key violation'],
    ['22P02', 'invalid text representation'],
    ['22021', 'invalid byte sequence (a NUL in text)'],
    ['42P01', 'undefined table'],
    ['42703', 'undefined column'],
    ['XX000', 'internal error'],
  ])('not %s (%s): a bug or a bad value, which retrying cannot fix', (code) => {
    const error = serverError(code);
    expect(isPostgresUnavailable(error)).toBe(false);
    expect(translatePostgresError(error)).toBe(error);
  });

  it('leaves errors that are not from the database alone', () => {
    const error = new TypeError('Cannot read properties of undefined');
    expect(isPostgresUnavailable(error)).toBe(false);
    expect(translatePostgresError(error)).toBe(error);
    expect(isPostgresUnavailable(null)).toBe(false);
  });

  it('retries only serialization failures and deadlocks: PostgreSQL rolled them back whole', () => {
    expect(isWriteConflict(serverError('40001'))).toBe(true);
    expect(isWriteConflict(serverError('40P01'))).toBe(true);
    for (const code of ['57P01', '23505', '25006', '40003']) expect(isWriteConflict(serverError(code))).toBe(false);
    expect((translatePostgresError(serverError('40P01')) as Error).message).toMatch(/conflicting writes/);
  });

  it('tells a stale prepared statement by the routine that raised it, in any language, and answers 503 for it', () => {
    const stale = Object.assign(serverError('0A000', 'le plan en cache ne doit pas modifier le type en résultat'), { routine: 'RevalidateCachedQuery' });
    expect(isStalePreparedStatement(stale)).toBe(true);
    expect(isStalePreparedStatement(serverError('26000'))).toBe(true);
    // Another feature_not_supported is the statement's fault, not the schema's.
    expect(isStalePreparedStatement(Object.assign(serverError('0A000', 'FOR UPDATE is not allowed with UNION'), { routine: 'CheckSelectLocking' }))).toBe(false);
    expect(isPostgresUnavailable(stale)).toBe(true);
    const translated = translatePostgresError(stale);
    expect(translated).toBeInstanceOf(UnavailableError);
    expect((translated as Error).message).toMatch(/schema changed/);
  });
});
