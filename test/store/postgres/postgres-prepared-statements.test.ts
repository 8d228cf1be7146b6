import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { TeamGet } from '../../../src/store/postgres/queries/tenancy.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

type Rows = (text: string, values?: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * The PostgreSQL store prepares each statement once per connection and then only binds and runs it
 * (connection-pool.ts): read here from the session's own pg_prepared_statements, on a pool of one
 * connection.
 */
describe.runIf(await postgresAvailable())('postgres: statements prepared once per connection', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let store: PostgresStore;
  let rows: Rows;

  beforeEach(async () => {
    schema = await makeSchema();
    store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 1 });
    await store.migrate();
    await store.teamInsert({ id: 'team_ps', name: 'T', plan: 'unlimited', createdAt: T0 });
    const db = (store as unknown as { db: { rows: Rows } }).db;
    rows = db.rows.bind(db);
  });
  afterEach(async () => {
    await store.close();
    await schema.drop();
  });

  const preparedAs = async (text: string) =>
    (await rows('SELECT name, statement FROM pg_prepared_statements')).filter((row) => row.statement === text);

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
});
