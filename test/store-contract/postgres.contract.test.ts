import { readdirSync } from 'node:fs';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../support/postgres.js';
import { describeStoreContract } from './store-contract.js';

const MIGRATION_VERSIONS = readdirSync(new URL('../../src/store/postgres/migrations/', import.meta.url))
  .filter((file) => /^\d{4}_.+\.sql$/.test(file))
  .map((file) => Number(file.slice(0, 4)))
  .sort((a, b) => a - b);

describeStoreContract(
  'postgres',
  async () => {
    const schema = await makeSchema();
    return {
      openStore: () => new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 5 }),
      migrationRows: async () => {
        const client = new pg.Client({ connectionString: PG_TEST_URL });
        await client.connect();
        try {
          return (await client.query<{ version: number; name: string }>(`SELECT version, name FROM ${schema.name}.schema_migrations ORDER BY version`)).rows;
        } finally {
          await client.end();
        }
      },
      countRows: async (table) => {
        const client = new pg.Client({ connectionString: PG_TEST_URL });
        await client.connect();
        try {
          return (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema.name}.${table}`)).rows[0]!.n;
        } finally {
          await client.end();
        }
      },
      migrationVersions: MIGRATION_VERSIONS,
      drop: schema.drop,
    };
  },
  await postgresAvailable(),
);
