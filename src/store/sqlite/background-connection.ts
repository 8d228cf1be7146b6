import { BatchedThread, fromThreadError, HELPER_THREAD_LIMITS, siblingModule } from '../../threads/batched-thread.js';

/** How often the background connection moves committed pages from the WAL into the database file. */
const CHECKPOINT_INTERVAL_MS = 1_000;

export interface BackgroundQuery {
  sql: string;
  params: unknown[];
}

export interface BackgroundSettings {
  databasePath: string;
  synchronous: string;
  checkpointIntervalMs: number;
}

/**
 * A second connection to the embedded database, in a worker thread (background-worker.ts), for the
 * work that must not run on the main thread. better-sqlite3 runs everything on the calling thread,
 * so on the main thread such work is time in which no timer fires and no webhook leaves:
 * - WAL checkpoints: SQLite runs them inside the commit that crosses 1,000 WAL pages, copying the
 *   pages and fsyncing the database file (4 to 13 ms in bench:ingest's strace), in the middle of
 *   the delivery path. Here they run every second instead, beside the writer (WAL allows it);
 *   the writer thread checkpoints only when the WAL passes its limit (writer-worker.ts);
 * - counts over every job (queue depth for /metrics): about 130 ms with a million jobs; and what
 *   retention would delete (`punctual prune --dry-run`).
 */
export class BackgroundConnection {
  private readonly thread: BatchedThread<BackgroundQuery, unknown[]>;

  constructor(options: { databasePath: string; synchronous: string }) {
    this.thread = new BatchedThread({
      moduleUrl: siblingModule('background-worker', import.meta.url),
      workerData: { ...options, checkpointIntervalMs: CHECKPOINT_INTERVAL_MS } satisfies BackgroundSettings,
      resourceLimits: HELPER_THREAD_LIMITS,
      send: 'microtask',
      // Its checkpoint timer never keeps the process alive.
      unref: true,
    });
    this.thread.prepare();
  }

  async all<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    const outcome = await this.thread.request({ sql, params });
    if (!outcome.ok) throw fromThreadError(outcome.error);
    return outcome.value as R[];
  }

  close(): Promise<void> {
    return this.thread.close();
  }
}
