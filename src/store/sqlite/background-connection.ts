import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { HELPER_THREAD_LIMITS } from '../../threads/batched-thread.js';

/** How often the background connection moves committed pages from the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 1_000;

/**
 * The worker's code, kept as a string so that it runs the same from dist/ and under a TypeScript
 * loader. better-sqlite3 is loaded by the path the main thread resolved, wherever the worker starts.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driverPath);
const db = new Database(workerData.databasePath, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = ' + workerData.synchronous);
// PASSIVE never waits for the writer or for readers: it copies what it can and tries again later.
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
setInterval(() => {
  try {
    checkpoint.run();
  } catch {
    // A full or read-only disk: the main connection reports that on its own writes.
  }
}, workerData.checkpointIntervalMs);
const statements = new Map();
parentPort.on('message', ({ id, sql }) => {
  try {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    parentPort.postMessage({ id, rows: statement.all() });
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
parentPort.postMessage({ ready: true });
`;

/**
 * A second connection to the embedded database, in a worker thread, for the work that must not
 * run on the main thread. better-sqlite3 runs everything on the calling thread, so on the main
 * thread such work is time in which no timer fires and no webhook leaves:
 * - WAL checkpoints: SQLite runs them inside the commit that crosses 1,000 WAL pages, copying the
 *   pages and fsyncing the database file (4 to 13 ms in bench:ingest's strace), in the middle of
 *   the delivery path. Here they run every second instead, beside the writer (WAL allows it);
 *   the writer thread checkpoints only when the WAL passes its limit (writer-worker.ts);
 * - counts over every job (queue depth for /metrics): about 130 ms with a million jobs.
 */
export class BackgroundConnection {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (error: Error) => void }>();

  constructor(
    private readonly options: {
      databasePath: string;
      synchronous: string;
    },
  ) {
    this.start();
  }

  all<R>(sql: string): Promise<R[]> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject });
      worker.postMessage({ id, sql });
    });
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      resourceLimits: HELPER_THREAD_LIMITS,
      workerData: {
        driverPath: createRequire(import.meta.url).resolve('better-sqlite3'),
        databasePath: this.options.databasePath,
        synchronous: this.options.synchronous,
        checkpointIntervalMs: CHECKPOINT_INTERVAL_MS,
      },
    });
    // The worker's timer never keeps the process alive.
    worker.unref();
    worker.on('message', (message: { ready?: true; id: number; rows?: unknown[]; error?: string }) => {
      if (message.ready) return;
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error !== undefined) waiting?.reject(new Error(message.error));
      else waiting?.resolve(message.rows!);
    });
    const stopped = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
    };
    worker.on('error', stopped);
    worker.on('exit', (code) => stopped(new Error(`the background connection's thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }
}
