import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { ApiKeyFindByHash } from '../../../src/store/postgres/queries/auth.js';
import { TeamGet } from '../../../src/store/postgres/queries/tenancy.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

type Rows = (text: string, values?: unknown[], client?: pg.PoolClient) => Promise<Record<string, unknown>[]>;
interface Pool {
  rows: Rows;
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/**
 * The PostgreSQL store prepares the statements every job runs once per connection and then only
 * binds and runs them (connection-pool.ts, queries/prepared-statements.ts), and sends the others
 * unnamed; a prepared statement that went stale (a migration changed what it returns, or it was
 * deallocated) is prepared again, on the pool and inside a transaction. Read on a pool of one
 * connection, so that every statement meets the connection the one before prepared. The key
 * lookup (ApiKeyFindByHash) stands for the prepared statements, TeamGet for the others.
 */
describe.runIf(await postgresAvailable())('postgres: statements prepared once per connection', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const project: ProjectRow = { id: 'prj_ps', teamId: 'team_ps', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
  const KEY_HASH = Buffer.alloc(32, 7);
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let store: PostgresStore;
  let db: Pool;
  let rows: Rows;

  beforeEach(async () => {
    schema = await makeSchema();
    store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 1 });
    await store.migrate();
    await store.teamInsert({ id: 'team_ps', name: 'T', plan: 'unlimited', createdAt: T0 });
    await store.projectInsert({ project, secret: { id: 'whs_ps', projectId: project.id, ciphertext: 's', createdAt: T0, expiresAt: null } });
    await store.apiKeyInsert({ id: 'key_ps', projectId: project.id, name: 'K', prefix: 'pk_ps', createdAt: T0, lastUsedAt: null, revokedAt: null, hash: KEY_HASH });
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

  const findKey = (client?: pg.PoolClient) => rows(ApiKeyFindByHash, [KEY_HASH], client);

  it('prepares a statement every job runs at its first run, and runs it again without preparing it anew', async () => {
    expect(await findKey()).toMatchObject([{ keyId: 'key_ps', teamName: 'T' }]);
    const first = await preparedAs(ApiKeyFindByHash);
    expect(first).toHaveLength(1);
    expect(await rows(ApiKeyFindByHash, [Buffer.alloc(32, 8)])).toEqual([]);
    expect(await findKey()).toHaveLength(1);
    expect(await preparedAs(ApiKeyFindByHash)).toEqual(first);
  });

  it('sends the other statements unnamed, parsed and planned with their values at each run', async () => {
    expect(await store.teamGet('team_ps')).toMatchObject({ id: 'team_ps' });
    expect(await rows(TeamGet, ['team_ps'])).toHaveLength(1);
    expect(await preparedAs(TeamGet)).toEqual([]);
  });

  it('prepares a statement again when a migration changed the type of a column it returns, on the pool', async () => {
    expect(await findKey()).toMatchObject([{ teamName: 'T' }]);
    await otherSession('ALTER TABLE teams ALTER COLUMN name TYPE varchar(200)');
    expect(await findKey()).toMatchObject([{ teamName: 'T' }]);
    expect(await findKey()).toMatchObject([{ teamName: 'T' }]);
  });

  it('runs a transaction again when a migration changed the type of a column one of its statements returns', async () => {
    const read = () => db.transaction((client) => findKey(client));
    expect(await read()).toMatchObject([{ teamName: 'T' }]);
    await otherSession('ALTER TABLE teams ALTER COLUMN name TYPE varchar(200)');
    expect(await read()).toMatchObject([{ teamName: 'T' }]);
    expect(await findKey()).toMatchObject([{ teamName: 'T' }]);
  });

  it('prepares a statement again on every connection of the pool once one found it stale, so that its one retry succeeds', async () => {
    const wide = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 2 });
    try {
      const widePool = (wide as unknown as { db: Pool }).db;
      const find = () => widePool.rows(ApiKeyFindByHash, [KEY_HASH]);
      // Both connections prepare it (two at once take both).
      await Promise.all([find(), find()]);
      await otherSession('ALTER TABLE teams ALTER COLUMN name TYPE varchar(200)');
      // The first connection finds it stale (and is closed); the retry goes to the second, under a new name.
      expect(await find()).toMatchObject([{ teamName: 'T' }]);
      expect(await Promise.all([find(), find()])).toMatchObject([[{ teamName: 'T' }], [{ teamName: 'T' }]]);
    } finally {
      await wide.close();
    }
  });

  it('prepares a statement again when something deallocated it on its connection', async () => {
    expect(await findKey()).toHaveLength(1);
    await rows('DEALLOCATE ALL');
    expect(await findKey()).toHaveLength(1);
    await rows('DEALLOCATE ALL');
    expect(await db.transaction((client) => findKey(client))).toHaveLength(1);
  });
});
