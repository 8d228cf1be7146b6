import type { Config } from '../config.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';
import type { Store } from './store.js';

interface OpenStoreOptions {
  /**
   * This process serves (`punctual serve`), as opposed to a CLI command beside a server: a store
   * that allows one server per database takes that lock now and lets it go on close().
   */
  serve?: boolean;
  /** PostgreSQL: tests run each file in a schema of its own. */
  schema?: string;
  /** PostgreSQL: the LISTEN connection was lost or is back (for logs). */
  onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void;
}

/** The one place that picks a driver, from DATABASE_URL; migrations run before it is handed out. */
export async function openStore(database: Config['database'], options: OpenStoreOptions = {}): Promise<Store> {
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
      : new SqliteStore({ path: database.path, synchronous: database.synchronous, serve: options.serve ?? false });
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
