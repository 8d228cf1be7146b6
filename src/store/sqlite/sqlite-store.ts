/**
 * The embedded store: one SQLite file in WAL mode, through better-sqlite3.
 *
 * How it differs from the PostgreSQL store: SQLite has a single writer, so every write goes to
 * one connection on the writer thread (writer.ts; the writes are in the *-writes.ts files), where
 * the writes requested in one event-loop turn run in one BEGIN IMMEDIATE transaction, and guarded
 * transitions need no row locks or SKIP LOCKED: `UPDATE … WHERE status = 'QUEUED'` runs alone.
 * The event loop keeps only the reads, on a connection of its own; WAL means they never wait for
 * the writer, and a write's promise resolves only after its commit, so a read issued after it sees it.
 *
 * Durability: synchronous=FULL (default) fsyncs the WAL in every commit, before any of its writes
 * is acknowledged, so an acknowledged job survives power loss; the fsync waits on the writer
 * thread, not on the event loop. NORMAL survives a process crash (kill -9) but not an OS crash.
 *
 * This class opens the connections and hands each noun to a module of its own (tenancy.ts, auth.ts,
 * jobs.ts, attempts.ts, retention.ts, overview.ts, events.ts, schedules.ts), whose methods it
 * presents as its own (../forward-methods.ts).
 */
import { statfs } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import { ATTEMPT_STORE_METHODS, type AttemptStore } from '../attempt-store.js';
import { AUTH_STORE_METHODS, type AuthStore } from '../auth-store.js';
import { EVENT_STORE_METHODS, type EventStore } from '../event-store.js';
import { forwardMethods } from '../forward-methods.js';
import { JOB_STORE_METHODS, type JobStore } from '../job-store.js';
import { OVERVIEW_STORE_METHODS, type OverviewStore } from '../overview-store.js';
import { RETENTION_STORE_METHODS, type RetentionStore } from '../retention-store.js';
import { SCHEDULE_STORE_METHODS, type ScheduleStore } from '../schedule-store.js';
import type { Store } from '../store.js';
import { TENANCY_STORE_METHODS, type TenancyStore } from '../tenancy-store.js';
import { SqliteAttempts } from './attempts.js';
import { SqliteAuth } from './auth.js';
import { BackgroundConnection } from './background-connection.js';
import { CachedReads } from './cached-reads.js';
import { SqliteEvents } from './events.js';
import { SqliteJobs } from './jobs.js';
import { migrateSqlite } from './migrate.js';
import { SqliteOverview } from './overview.js';
import { openReaderConnection } from './reader-connection.js';
import { SqliteRetention } from './retention.js';
import { SqliteSchedules } from './schedules.js';
import { acquireServeLock } from './serve-lock.js';
import { SqliteTenancy } from './tenancy.js';
import { SqliteWriter } from './writer.js';

interface SqliteStoreOptions {
  path: string;
  synchronous?: 'FULL' | 'NORMAL';
  /** The WAL's bound (WAL_LIMIT_BYTES by default; tests set a small one). */
  walLimitBytes?: number;
  /** Holds the serve lock (serve-lock.ts: one `punctual serve` per file) until close(). */
  serve?: boolean;
}

type Statement = Database.Statement<unknown[], unknown>;

/**
 * SQLite's page cache (the default is 2 MB). The writer's holds the pages every insert touches
 * (the right edge of each index) and the rows being claimed and finished; the readers' serves
 * status reads and lists, which the OS's file cache backs anyway. 16 and 8 MB: bench:ingest gave
 * the same rate as with 64 MB, which cost 48 MB more at peak.
 */
const WRITER_CACHE_KIB = 16 * 1024;
const READER_CACHE_KIB = 8 * 1024;
/** Past this size the WAL is checkpointed and started over by the writer (writer-worker.ts). */
const WAL_LIMIT_BYTES = 64 * 1024 * 1024;
/** After a write refused for lack of space, not ready again until the volume has this much free. */
const READY_FREE_BYTES = 1024 * 1024;

/**
 * The nouns' methods, which the constructor copies onto the store from its noun objects
 * (forwardMethods, with lists checked exhaustive against these interfaces).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the constructor defines every member of these interfaces (forwardMethods)
export interface SqliteStore extends TenancyStore, AuthStore, JobStore, AttemptStore, RetentionStore, OverviewStore, EventStore, ScheduleStore {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  /**
   * One process serves a file (`punctual serve` holds its serve lock; the CLI beside it claims
   * nothing), so a lease found at start was left by a process that died: taken over at once.
   */
  readonly soleInstance = true;
  /**
   * Without PUNCTUAL_SECRET_KEY, the key that seals webhook secrets is generated once and kept
   * beside the database: losing it makes those secrets unreadable, so it belongs in the same backup.
   */
  readonly secretKeyFile: string;
  private readonly path: string;
  private readonly db: Database.Database;
  private readonly writer: SqliteWriter;
  private readonly statements = new Map<string, Statement>();
  private readonly cached = new CachedReads((text) => this.sql(text));
  /** WAL checkpoints and counts over every job, off the main thread. */
  private readonly background: BackgroundConnection;
  private releaseServeLock: (() => void) | null;

  constructor(options: SqliteStoreOptions) {
    this.path = options.path;
    this.secretKeyFile = join(dirname(options.path), 'punctual.secret-key');
    // Before the file is opened: a second server must not touch the first one's database.
    this.releaseServeLock = options.serve ? acquireServeLock(options.path) : null;
    try {
      this.db = openReaderConnection(options.path, READER_CACHE_KIB);
    } catch (error) {
      this.releaseServeLock?.();
      throw error;
    }
    this.writer = new SqliteWriter({ path: options.path, synchronous: options.synchronous ?? 'FULL', cacheKib: WRITER_CACHE_KIB, walLimitBytes: options.walLimitBytes ?? WAL_LIMIT_BYTES });
    this.background = new BackgroundConnection({
      databasePath: options.path,
      synchronous: 'NORMAL',
    });
    const sql = (text: string) => this.sql(text);
    forwardMethods(this, new SqliteTenancy(sql, this.writer, this.cached), TENANCY_STORE_METHODS);
    forwardMethods(this, new SqliteAuth(sql, this.writer, this.cached), AUTH_STORE_METHODS);
    forwardMethods(this, new SqliteJobs(sql, this.writer, this.cached, this.background), JOB_STORE_METHODS);
    forwardMethods(this, new SqliteAttempts(sql, this.writer, this.cached), ATTEMPT_STORE_METHODS);
    forwardMethods(this, new SqliteRetention(sql, this.writer, this.background, options.path), RETENTION_STORE_METHODS);
    forwardMethods(this, new SqliteOverview(this.writer, this.background), OVERVIEW_STORE_METHODS);
    forwardMethods(this, new SqliteEvents(sql, this.writer), EVENT_STORE_METHODS);
    forwardMethods(this, new SqliteSchedules(sql, this.writer), SCHEDULE_STORE_METHODS);
  }

  /** Prepared once, on first use, and reused. */
  private sql(text: string): Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  async migrate(): Promise<void> {
    migrateSqlite(this.db);
  }

  /**
   * Ready while the file can be read and, after the disk refused a write (full, read-only, I/O
   * error), once a small write commits again: not ready while writes would answer 503. After a
   * full disk, also not before the volume has READY_FREE_BYTES free: a small write can commit on a
   * full disk, in WAL space SQLite reuses from its start after a checkpoint, while any request's
   * write is refused.
   */
  async ping(): Promise<void> {
    this.sql('SELECT 1').get();
    if (!this.writer.failing) return;
    if (this.writer.outOfSpace) {
      const volume = await statfs(dirname(this.path));
      const free = volume.bavail * volume.bsize;
      if (free < READY_FREE_BYTES) throw new Error(`the volume of ${this.path} is full (${free} bytes free)`);
    }
    await this.writer.probe(Date.now());
  }

  async close(): Promise<void> {
    try {
      await this.background.close();
      // Every accepted write committed and on disk before the file is let go.
      await this.writer.close();
      this.db.close();
    } finally {
      this.releaseServeLock?.();
      this.releaseServeLock = null;
    }
  }
}
