import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';

/** The test database: DATABASE_URL when it is a PostgreSQL URL, else the local default. */
export const PG_TEST_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '')
  ? process.env.DATABASE_URL!
  : 'postgres://postgres@127.0.0.1:5432/test';

let reachable: Promise<string | null> | null = null;

/** Null when PostgreSQL answers; otherwise why not. */
function probe(): Promise<string | null> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: PG_TEST_URL, connectionTimeoutMillis: 3000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return null;
    } catch (error) {
      return (error as Error).message;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/**
 * Whether PostgreSQL tests run: in CI an unreachable database fails the run loudly; elsewhere the
 * tests are skipped with the reason printed.
 */
export async function postgresAvailable(): Promise<boolean> {
  const problem = await probe();
  if (problem === null) return true;
  if (process.env.CI) throw new Error(`PostgreSQL at ${PG_TEST_URL} is unreachable in CI: ${problem}`);
  console.warn(`SKIPPING PostgreSQL tests: ${PG_TEST_URL} is unreachable (${problem}). Start PostgreSQL or set DATABASE_URL.`);
  return false;
}

/** A fresh schema for one test file; drop() removes it and everything in it. */
export async function makeSchema(): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${name}`);
  await client.end();
  return {
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_TEST_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await c.end();
    },
  };
}

/** How many statements `fn` sends through a PostgreSQL store's pool (its ConnectionPool's): none when it is served from its cache. */
export async function countStatements(store: object, fn: () => Promise<unknown>): Promise<number> {
  const pool = (store as { db: { pool: { query: (...args: unknown[]) => unknown } } }).db.pool;
  const query = pool.query;
  let n = 0;
  pool.query = (...args: unknown[]) => {
    n += 1;
    return query.apply(pool, args);
  };
  try {
    await fn();
  } finally {
    pool.query = query;
  }
  return n;
}

/**
 * A migrated store in a fresh schema, and a client of its own on that schema (fixtures written
 * straight into the tables, EXPLAIN): what the plan tests start from. close() ends both and drops
 * the schema.
 */
export async function migratedStoreWithClient(): Promise<{ store: PostgresStore; client: pg.Client; close: () => Promise<void> }> {
  const schema = await makeSchema();
  const store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name });
  await store.migrate();
  const client = new pg.Client({ connectionString: PG_TEST_URL, options: `-c search_path=${schema.name}` });
  await client.connect();
  return {
    store,
    client,
    close: async () => {
      await client.end();
      await store.close();
      await schema.drop();
    },
  };
}
