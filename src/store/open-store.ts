import type { Config } from '../config.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

/** The one place that picks a driver, from DATABASE_URL; migrations run before it is handed out. */
export async function openStore(
  database: Config['database'],
  options: { schema?: string; onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void } = {},
): Promise<Store> {
  const store: Store =
    database.kind === 'postgres'
      ? new PostgresStore({
          url: database.url,
          poolSize: database.poolSize,
          connectTimeoutMs: database.connectTimeoutMs,
          statementTimeoutMs: database.statementTimeoutMs,
          ...(options.schema && { schema: options.schema }),
          ...(options.onListenerState && { onListenerState: options.onListenerState }),
        })
      : new SqliteStore({ path: database.path, synchronous: database.synchronous });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
