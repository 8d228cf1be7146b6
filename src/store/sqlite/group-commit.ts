import type Database from 'better-sqlite3';
import { isSqliteUnavailable, translateSqliteError, WAL_SYNC_FAILED } from './sqlite-errors.js';

/** What one write came to: its value, or what it threw (as translateSqliteError made it). */
export interface WriteOutcome {
  ok: boolean;
  value: unknown;
}

/** Writes asked for together (a message's), answered together once their group is durable. */
interface PendingBatch {
  writes: (() => unknown)[];
  done: (outcomes: WriteOutcome[]) => void;
}

/**
 * What the writer adds to each group: `afterWrite` learns whether a write's savepoint was kept;
 * `rolledBack` that what the writes of a group did so far is undone; `beforeCommit` writes inside
 * the group's transaction, before its COMMIT (a failure there fails the group, as a failed COMMIT
 * does).
 */
export interface GroupHooks {
  afterWrite?: (kept: boolean) => void;
  /** The group's writes were rolled back together, to be run again one savepoint each. */
  rolledBack?: () => void;
  beforeCommit?: () => void;
}

/** Makes every committed WAL frame durable (fdatasync of the WAL file); throws if it could not. */
export type WalSync = () => void;

/**
 * Group commit for the embedded store. Writes requested during one turn of the event loop run in
 * one `BEGIN IMMEDIATE` transaction, committed once; each write's promise settles only after that
 * commit is durable, so an answer sent afterwards survives a crash (and, with `sync`, power loss).
 *
 * Durability: SQLite itself does not fsync at commit (synchronous=NORMAL); `sync` fdatasyncs the WAL
 * after COMMIT, and only then are the group's promises settled. It runs on this thread, which is the
 * writer thread (writer-worker.ts), not the event loop that answers requests: writes asked for
 * meanwhile wait in the thread's queue and form the next group. Run on a libuv thread instead, the
 * next group could commit during the sync, but its answer would still wait for a sync begun after
 * its COMMIT, so nothing is answered sooner; and handing each sync to another thread and back cost
 * two thread wake-ups per group, 6-12 % of the embedded store's CPU per job at 500 jobs a second
 * (BENCHMARKS.md, stop 42).
 *
 * A write that throws is rolled back alone and rejects alone: the group's writes run together, and
 * when one throws the transaction is rolled back and the group runs again with each write in its
 * own savepoint.
 * A commit that fails rejects every write of the group. A full disk or a read-only file rejects as
 * UNAVAILABLE, and the connection stays usable: the next group tries again.
 *
 * A sync that fails is another matter: the group is committed, readable, and not known to be on
 * disk, and a later sync that succeeds does not say it is (after a failed fdatasync, Linux may
 * mark the pages it could not write as clean, so they are never written again). SQLite's WAL
 * frames are chained by their checksums: recovery after a crash would stop at the first frame
 * not on disk and drop every later one, acknowledged or not. So from a failed sync on, every write
 * is refused as UNAVAILABLE without running, until the process restarts and SQLite recovers from
 * what the disk holds, as PostgreSQL stops at a failed fsync.
 */
export class GroupCommit {
  private pending: PendingBatch[] = [];
  private scheduled = false;
  /** True from a write refused by the disk (full, read-only, I/O error) until a commit succeeds. */
  private refusedByDisk = false;
  /** The failed sync, once one failed: no write runs or is answered after it (see above). */
  private syncFailure: Error | null = null;
  private readonly inSavepoint: (fn: () => unknown) => unknown;

  constructor(
    private readonly db: Database.Database,
    private readonly sync: WalSync | null = null,
    private readonly hooks: GroupHooks = {},
  ) {
    // better-sqlite3 turns a transaction function called inside an open transaction into a SAVEPOINT.
    this.inSavepoint = db.transaction((fn: () => unknown) => fn());
  }

  /** One write; resolves with its value, or rejects with what it threw, once its group is durable. */
  async run<T>(fn: () => T): Promise<T> {
    const [outcome] = await this.runAll([fn]);
    if (!outcome!.ok) throw outcome!.value;
    return outcome!.value as T;
  }

  /**
   * Writes asked for together: each one's outcome, in order, once their group is durable. One
   * promise for the lot (the writer thread's answer to a message), not one a write.
   */
  runAll(writes: (() => unknown)[]): Promise<WriteOutcome[]> {
    return new Promise<WriteOutcome[]>((done) => {
      this.pending.push({ writes, done });
      if (!this.scheduled) {
        this.scheduled = true;
        // setImmediate runs after the current I/O phase, so every request parsed in it joins this group.
        setImmediate(() => this.flush());
      }
    });
  }

  /** Whether the last writes were refused by the disk and none has been committed since (readiness). */
  get failing(): boolean {
    return this.refusedByDisk;
  }

  private fail(batches: PendingBatch[], error: unknown): void {
    if (isSqliteUnavailable(error)) this.refusedByDisk = true;
    const failed: WriteOutcome = { ok: false, value: translateSqliteError(error) };
    for (const batch of batches) batch.done(batch.writes.map(() => failed));
  }

  /** Runs everything pending now; also used on close so no accepted write is dropped. */
  flush(): void {
    this.scheduled = false;
    const batches = this.pending;
    this.pending = [];
    if (batches.length === 0) return;
    if (this.syncFailure) {
      this.fail(batches, this.syncFailure);
      return;
    }
    const group = batches.length === 1 ? batches[0]!.writes : batches.flatMap((batch) => batch.writes);
    let outcomes: WriteOutcome[];
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (error) {
      this.fail(batches, error);
      return;
    }
    try {
      outcomes = this.runTogether(group) ?? this.runApart(group);
      this.hooks.beforeCommit?.();
      this.db.exec('COMMIT');
    } catch (error) {
      // On a full or read-only disk the rollback can fail too; SQLite then has rolled back already.
      this.rollback();
      this.fail(batches, error);
      return;
    }
    if (this.sync) {
      try {
        this.sync();
      } catch (error) {
        // Committed, but not known to be on disk: nothing may be acknowledged on it, nor after it.
        this.syncFailure = Object.assign(error as Error, { code: WAL_SYNC_FAILED });
        this.fail(batches, this.syncFailure);
        return;
      }
    }
    if (outcomes.every((outcome) => outcome.ok)) this.refusedByDisk = false;
    let at = 0;
    for (const batch of batches) {
      batch.done(batches.length === 1 ? outcomes : outcomes.slice(at, at + batch.writes.length));
      at += batch.writes.length;
    }
  }

  /**
   * The group's writes one after the other, with nothing between them: their outcomes, or null
   * when one threw, after rolling the whole transaction back and opening a new one (the writes
   * are functions of the database and their parameters, so running them again is running them
   * once). A savepoint around each write cost 13 µs a write, a third of the SQL of a job's
   * creation and outcome, for the rare write that fails.
   */
  private runTogether(group: (() => unknown)[]): WriteOutcome[] | null {
    const outcomes: WriteOutcome[] = [];
    try {
      for (const write of group) outcomes.push({ ok: true, value: write() });
    } catch {
      this.hooks.rolledBack?.();
      this.rollback();
      this.db.exec('BEGIN IMMEDIATE');
      return null;
    }
    for (let i = 0; i < group.length; i++) this.hooks.afterWrite?.(true);
    return outcomes;
  }

  /** Each write in its own savepoint: one that throws is rolled back alone and rejects alone. */
  private runApart(group: (() => unknown)[]): WriteOutcome[] {
    return group.map((write) => {
      let outcome: WriteOutcome;
      try {
        outcome = { ok: true, value: this.inSavepoint(write) };
      } catch (error) {
        if (isSqliteUnavailable(error)) this.refusedByDisk = true;
        outcome = { ok: false, value: translateSqliteError(error) };
      }
      this.hooks.afterWrite?.(outcome.ok);
      return outcome;
    });
  }

  private rollback(): void {
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } catch {
      // nothing more to undo
    }
  }
}
