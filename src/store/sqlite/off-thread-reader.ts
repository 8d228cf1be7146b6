import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * The worker's code, kept as a string so that it runs the same from dist/ and under a TypeScript
 * loader. better-sqlite3 is loaded by the path the main thread resolved, wherever the worker starts.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driverPath);
const db = new Database(workerData.databasePath, { readonly: true, fileMustExist: true });
db.pragma('busy_timeout = 5000');
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
`;

/**
 * Runs long read-only queries (a count over every job) on a second connection in a worker thread.
 * better-sqlite3 runs queries on the calling thread, and a count over a million jobs takes about
 * 130 ms: on the main thread that is 130 ms in which no timer fires and no webhook leaves, every
 * time /metrics is scraped. WAL lets this reader see the last commit without blocking the writer.
 */
export class OffThreadReader {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (error: Error) => void }>();

  constructor(private readonly databasePath: string) {}

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
      workerData: { driverPath: createRequire(import.meta.url).resolve('better-sqlite3'), databasePath: this.databasePath },
    });
    // An idle reader never keeps the process alive.
    worker.unref();
    worker.on('message', ({ id, rows, error }: { id: number; rows?: unknown[]; error?: string }) => {
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      if (error !== undefined) waiting?.reject(new Error(error));
      else waiting?.resolve(rows!);
    });
    const failAll = (error: Error) => {
      this.worker = null;
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`the reader thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }
}
