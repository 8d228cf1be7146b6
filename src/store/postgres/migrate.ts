import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { isPostgresUnavailable, translatePostgresError } from './postgres-errors.js';
import { MigrationLock, MigrationSessionWithoutTimeouts, SchemaMigrationInsert, SchemaMigrationsCreate, SchemaMigrationsList } from './queries/database.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/**
 * Any constant shared by all instances: migrations run under this advisory lock. Exported for the
 * test that holds it from another session.
 */
export const MIGRATION_LOCK_KEY = 7_353_911;

/**
 * Applies migrations/NNNN_name.sql in order, each in its own transaction that records its row
 * first, under an advisory lock so that instances starting together take turns and the later
 * ones find everything applied.
 *
 * Runs on a connection of its own, not one of the pool's: the pool's client-side query_timeout
 * (statement timeout + 1 s) would cut the wait for another instance's migration, or a long
 * migration, however the server's statement_timeout is set. TCP keepalive (in `config`) still
 * ends the wait if the server vanishes without a word.
 */
export async function migratePostgres(config: pg.ClientConfig): Promise<void> {
  const client = new pg.Client(config);
  // A broken connection also rejects the statement under way, which is where it is reported.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query(MigrationSessionWithoutTimeouts);
    await client.query(MigrationLock, [MIGRATION_LOCK_KEY]);
    await client.query(SchemaMigrationsCreate);
    const applied = new Set((await client.query<{ version: number }>(SchemaMigrationsList)).rows.map((r) => r.version));
    for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort()) {
      const version = Number(file.slice(0, 4));
      if (applied.has(version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(SchemaMigrationInsert, [version, file, Date.now()]);
        await client.query(readFileSync(MIGRATIONS_DIR + file, 'utf8'));
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        if (isPostgresUnavailable(error)) throw error;
        throw new Error(`Migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
    }
  } catch (error) {
    throw translatePostgresError(error);
  } finally {
    // Ending the session releases the advisory lock.
    await client.end().catch(() => {});
  }
}
