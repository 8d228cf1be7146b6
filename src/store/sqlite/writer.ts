import { BatchedThread, fromThreadError, HELPER_THREAD_LIMITS, siblingModule } from '../../threads/batched-thread.js';
import { isSqliteFull, isSqliteUnavailable, translateSqliteError } from './sqlite-errors.js';
import { writeProbe } from './tenancy-writes.js';
import type { RegisteredWrite, WriteRequest } from './write-registry.js';

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
  /**
   * True from a write refused by the disk until the readiness probe's own write commits (probe()).
   * Not any write: on a full or read-only disk one that changes nothing (a claim that finds no due
   * job) commits all the same, and one that changes little may fit in space SQLite already holds.
   */
  private refusedByDisk = false;
  /** The last refusal was for lack of space (SQLITE_FULL). */
  private refusedForSpace = false;
  /** Refusals so far: a probe clears the state only if none came while it ran. */
  private refusals = 0;

  constructor(settings: WriterSettings) {
    this.thread = new BatchedThread({
      moduleUrl: siblingModule('writer-worker', import.meta.url),
      workerData: settings,
      resourceLimits: HELPER_THREAD_LIMITS,
      send: 'immediate',
      // One batch at a time: the thread commits and syncs a batch before it reads the next, so a
      // second one sent meanwhile would only wait there, and what waits here instead goes with the
      // next batch, in one message, one transaction and one sync (2 → 1: CPU per job about 10 %
      // less under load, lateness alike; BENCHMARKS.md, stop 42).
      maxInFlight: 1,
    });
    this.thread.prepare();
  }

  get failing(): boolean {
    return this.refusedByDisk;
  }

  /** Failing since a write refused for lack of space. */
  get outOfSpace(): boolean {
    return this.refusedByDisk && this.refusedForSpace;
  }

  /** The readiness probe: a small write of its own; once it commits, no longer failing. */
  async probe(now: number): Promise<void> {
    const refusals = this.refusals;
    await this.run(writeProbe, { now });
    if (this.refusals === refusals) this.refusedByDisk = this.refusedForSpace = false;
  }

  /**
   * Runs a write of the write modules (write-registry.ts) on the writer thread: the function goes
   * by its name, which the thread looks up in the same modules.
   */
  async run<W extends RegisteredWrite>(write: W, params: Parameters<W>[1]): Promise<ReturnType<W>> {
    const outcome = await this.thread.request({ name: write.name, params });
    if (outcome.ok) return outcome.value as ReturnType<W>;
    const error = fromThreadError(outcome.error);
    if (isSqliteUnavailable(error)) {
      this.refusedByDisk = true;
      this.refusedForSpace = isSqliteFull(error);
      this.refusals += 1;
    }
    throw translateSqliteError(error);
  }

  /** Every accepted write committed and durable, then the thread closes its connection and exits. */
  close(): Promise<void> {
    return this.thread.close();
  }
}
