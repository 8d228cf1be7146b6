import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY } from '../../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';
import { eventually } from '../../support/eventually.js';

/**
 * An instance that starts while another one migrates waits for the migration lock as long as the
 * other takes. Migrations once ran on a pool connection, whose client side gives up on any
 * statement after the statement timeout plus a second whatever the server allows: the wait for
 * the lock (and any long migration) failed after 11 s by default.
 */
describe.runIf(await postgresAvailable())('postgres migrations under the advisory lock', () => {
  const STATEMENT_TIMEOUT_MS = 200;
  /** When a pool connection would have given up on the wait, with some margin. */
  const POOL_CLIENT_GIVES_UP_MS = STATEMENT_TIMEOUT_MS + 1_000 + 500;
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let holder: pg.Client;

  beforeEach(async () => {
    schema = await makeSchema();
    holder = new pg.Client({ connectionString: PG_TEST_URL });
    await holder.connect();
  });
  afterEach(async () => {
    // Ending the session releases the lock if the test did not.
    await holder.end();
    await schema.drop();
  });

  it('waits for the lock longer than the statement timeout, then migrates', async () => {
    // Other test files migrate under the same lock: the application name picks out this store's session.
    const applicationName = `migrate_${schema.name}`;
    const url = `${PG_TEST_URL}${PG_TEST_URL.includes('?') ? '&' : '?'}application_name=${applicationName}`;
    const store = new PostgresStore({ url, schema: schema.name, statementTimeoutMs: STATEMENT_TIMEOUT_MS });
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      let outcome: string | undefined;
      const migrating = store.migrate().then(
        () => (outcome = 'migrated'),
        (error: unknown) => (outcome = `failed: ${String((error as Error).cause ?? error)}`),
      );
      const waitingOnTheLock = async () =>
        (
          await holder.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
            [applicationName],
          )
        ).rows[0]!.n === 1;
      await eventually(waitingOnTheLock, { what: 'the migration waiting for the lock', everyMs: 20 });

      // The lock is held past the moment a pool connection would have cut the wait; all along
      // the migration must still be waiting, neither failed nor done.
      const holdUntil = Date.now() + POOL_CLIENT_GIVES_UP_MS;
      while (Date.now() < holdUntil) {
        expect(outcome).toBeUndefined();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(outcome).toBeUndefined();
      expect(await waitingOnTheLock()).toBe(true);

      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      await migrating;
      expect(outcome).toBe('migrated');
      await store.ping();
      await store.teamInsert({ id: 'team_after_wait', name: 'T', plan: 'unlimited', createdAt: 0 });
      expect(await store.teamCount()).toBe(1);
    } finally {
      await store.close();
    }
  });
});
