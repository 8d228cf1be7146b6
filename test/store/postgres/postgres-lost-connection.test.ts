import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import { ConnectionPool } from '../../../src/store/postgres/connection-pool.js';
import { PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

/**
 * A connection lost while a transaction holds it (PostgreSQL restarted, the backend terminated) is
 * told by an 'error' event on the client, which the pool listens for only while the client is idle.
 * Unheard, it was an uncaught exception: a `punctual serve` died with it (the fault suite's
 * PostgreSQL outage caught it once, as an unhandled error). Now the transaction fails UNAVAILABLE and
 * the pool goes on with a new connection.
 */
describe.runIf(await postgresAvailable())('postgres: a connection lost inside a transaction', () => {
  it('fails the transaction with UNAVAILABLE, raises nothing uncaught, and the next statement runs', async () => {
    const pool = new ConnectionPool({ url: PG_TEST_URL, poolSize: 1 });
    const admin = new pg.Client({ connectionString: PG_TEST_URL });
    await admin.connect();
    try {
      const outcome = pool.transaction(async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        const ended = new Promise((resolve) => client.once('end', resolve));
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        // Lost between two of the transaction's statements, as while the caller works on a result.
        await ended;
        await client.query('SELECT 1');
      });
      await expect(outcome).rejects.toBeInstanceOf(UnavailableError);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});
