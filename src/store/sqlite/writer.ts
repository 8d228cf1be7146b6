import { BatchedThread, fromThreadError, HELPER_THREAD_LIMITS, siblingModule } from '../../threads/batched-thread.js';
import { isSqliteUnavailable, translateSqliteError } from './sqlite-errors.js';
import type { WriteName, WriteParams, WriteRequest, WriteResult } from './writes.js';

export interface WriterSettings {
  path: string;
  synchronous: 'FULL' | 'NORMAL';
  cacheKib: number;
  walLimitBytes: number;
}

/**
 * The main thread's handle on the writer thread (writer-worker.ts). Writes requested during one
 * turn of the event loop go to the thread together, after the I/O phase (setImmediate), so every
 * request parsed in that phase joins the same transaction; each write's promise settles when its
 * transaction is durable. A write refused by the disk (full, read-only, I/O error), or lost with a
 * thread that died, rejects as UNAVAILABLE; the next write starts a new thread if needed.
 */
export class SqliteWriter {
  private readonly thread: BatchedThread<WriteRequest, unknown>;
  /** True from a write refused by the disk until a write commits again (readiness). */
  private refusedByDisk = false;

  constructor(settings: WriterSettings) {
    this.thread = new BatchedThread({
      moduleUrl: siblingModule('writer-worker', import.meta.url),
      workerData: settings,
      resourceLimits: HELPER_THREAD_LIMITS,
      send: 'immediate',
      maxInFlight: 2,
    });
    this.thread.prepare();
  }

  get failing(): boolean {
    return this.refusedByDisk;
  }

  async run<K extends WriteName>(name: K, params: WriteParams<K>): Promise<WriteResult<K>> {
    const outcome = await this.thread.request({ name, params } as WriteRequest);
    if (outcome.ok) {
      this.refusedByDisk = false;
      return outcome.value as WriteResult<K>;
    }
    const error = fromThreadError(outcome.error);
    if (isSqliteUnavailable(error)) this.refusedByDisk = true;
    throw translateSqliteError(error);
  }

  /** Every accepted write committed and durable, then the thread closes its connection and exits. */
  close(): Promise<void> {
    return this.thread.close();
  }
}
