import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeTempDir } from '../support/temp-dir.js';
import { describeStoreContract } from './store-contract.js';

const MIGRATION_VERSIONS = readdirSync(new URL('../../src/store/sqlite/migrations/', import.meta.url))
  .filter((file) => /^\d{4}_.+\.sql$/.test(file))
  .map((file) => Number(file.slice(0, 4)))
  .sort((a, b) => a - b);

describeStoreContract('sqlite', async () => {
  const dir = makeTempDir();
  const path = join(dir.path, 'contract.db');
  return {
    openStore: () => new SqliteStore({ path }),
    migrationRows: async () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as { version: number; name: string }[];
      } finally {
        db.close();
      }
    },
    countRows: async (table) => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      } finally {
        db.close();
      }
    },
    migrationVersions: MIGRATION_VERSIONS,
    drop: async () => dir.remove(),
  };
});
