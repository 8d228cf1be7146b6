import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** The one place that picks a driver, from DATABASE_URL; migrations run before it is handed out. */
export async function openStore(database: Config['database']): Promise<Store> {
  if (database.kind === 'postgres') {
    throw new ConfigError('DATABASE_URL=postgres://… is not supported by this version yet; use the embedded store (sqlite:<path>)');
  }
  const store = new SqliteStore({ path: database.path, synchronous: database.synchronous });
  await store.migrate();
  return store;
}
