import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { TeamGet } from '../../../src/store/postgres/queries/tenancy.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

type Rows = (text: string, values?: unknown[], client?: pg.PoolClient) => Promise<Record<string, unknown>[]>;
interface Pool {
  rows: Rows;
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/**
 * The PostgreSQL store prepares each statement once per connection and then only binds and runs it
 * (connection-pool.ts), with custom plans still made at every run; a statement whose prepared form
 * went stale (a migration changed what it returns, or it was deallocated) is prepared again, on
 * the pool and inside a transaction. Read on a pool of one connection, so that every statement
 * meets the connection the one before prepared.
 */
describe.runIf(await postgresAvailable())('postgres: statements prepared once per connection', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let store: PostgresStore;
  let db: Pool;
  let rows: Rows;

  beforeEach(async () => {
    schema = await makeSchema();
    store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 1 });
    await store.migrate();
    await store.teamInsert({ id: 'team_ps', name: 'T', plan: 'unlimited', createdAt: T0 });
    db = (store as unknown as { db: Pool }).db;
    rows = db.rows.bind(db);
  });
  afterEach(async () => {
    await store.close();
    await schema.drop();
  });

  const preparedAs = async (text: string) =>
    (await rows('SELECT name, statement FROM pg_prepared_statements')).filter((row) => row.statement === text);

  /** What another session (a newer instance's migration, say) does to the store's schema. */
  async function otherSession(sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    await client.connect();
    try {
      await client.query(`SET search_path = ${schema.name}`);
      await client.query(sql);
    } finally {
      await client.end();
    }
  }

  it('prepares a statement with parameters at its first run, and runs it again without preparing it anew', async () => {
    expect(await store.teamGet('team_ps')).toMatchObject({ id: 'team_ps' });
    const first = await preparedAs(TeamGet);
    expect(first).toHaveLength(1);
    expect(await store.teamGet('team_nobody')).toBeNull();
    expect(await store.teamGet('team_ps')).toMatchObject({ id: 'team_ps' });
    expect(await preparedAs(TeamGet)).toEqual(first);
  });

  it('sends a statement without parameters unprepared', async () => {
    expect(await store.teamCount()).toBe(1);
    const prepared = await rows('SELECT statement FROM pg_prepared_statements');
    expect(prepared.some((row) => /count\(\*\)/i.test(String(row.statement)) && /teams/.test(String(row.statement)))).toBe(false);
  });

  it('plans every run with its values (custom plans), as an unnamed statement is', async () => {
    expect(await rows('SHOW plan_cache_mode')).toEqual([{ plan_cache_mode: 'force_custom_plan' }]);
  });

  it('prepares a statement again when a migration changed the type of a column it returns, on the pool', async () => {
    expect(await rows(TeamGet, ['team_ps'])).toMatchObject([{ name: 'T' }]);
    await otherSession('ALTER TABLE teams ALTER COLUMN name TYPE varchar(200)');
    expect(await rows(TeamGet, ['team_ps'])).toMatchObject([{ name: 'T' }]);
    expect(await rows(TeamGet, ['team_ps'])).toMatchObject([{ name: 'T' }]);
  });

  it('runs a transaction again when a migration changed the type of a column one of its statements returns', async () => {
    const read = () => db.transaction((client) => db.rows(TeamGet, ['team_ps'], client));
    expect(await read()).toMatchObject([{ name: 'T' }]);
    await otherSession('ALTER TABLE teams ALTER COLUMN name TYPE varchar(200)');
    expect(await read()).toMatchObject([{ name: 'T' }]);
    expect(await store.teamGet('team_ps')).toMatchObject({ name: 'T' });
  });

  it('prepares a statement again when something deallocated it on its connection', async () => {
    expect(await rows(TeamGet, ['team_ps'])).toHaveLength(1);
    await rows('DEALLOCATE ALL');
    expect(await rows(TeamGet, ['team_ps'])).toHaveLength(1);
    await rows('DEALLOCATE ALL');
    expect(await db.transaction((client) => db.rows(TeamGet, ['team_ps'], client))).toHaveLength(1);
  });
});
