/**
 * The PostgreSQL store: any number of Punctual instances share one database.
 *
 * How it differs from the embedded store: many writers. Claims pick rows with
 * `FOR UPDATE SKIP LOCKED` in one statement, so instances never wait on each other's claims and no
 * transaction stays open during a webhook request. Guarded transitions (`… WHERE status =
 * 'QUEUED'`) are single statements, so a cancel and a claim of one job serialise on its row lock
 * and exactly one wins. Instances wake each other with NOTIFY as a hint; the next-due timer of
 * each instance stays behind it, and the instance that made a job due always wakes itself.
 *
 * Keys, projects and secrets are cached per instance only while it hears the other instances'
 * changes, and dropped on each (cached-reads.ts says how long a missed one can go unnoticed).
 *
 * A database that cannot be reached surfaces as UnavailableError (503, Retry-After) within the
 * connect or statement timeout, never as a hang or a 500 (connection-pool.ts; postgres-errors.ts
 * says which errors).
 *
 * This class opens the connections and hands each noun to a module of its own: tenancy.ts, auth.ts,
 * jobs.ts (creation in job-creator.ts), attempts.ts (batched in attempt-recorder.ts), retention.ts,
 * overview.ts, events.ts and schedules.ts, whose methods it presents as its own
 * (../forward-methods.ts).
 */
import { UnavailableError } from '../../errors.js';
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
import { AttemptRecorder } from './attempt-recorder.js';
import { PostgresAttempts } from './attempts.js';
import { PostgresAuth } from './auth.js';
import { CachedReads } from './cached-reads.js';
import { ConnectionPool, type ConnectionOptions } from './connection-pool.js';
import { PostgresEvents } from './events.js';
import { JobCreator } from './job-creator.js';
import { PostgresJobs } from './jobs.js';
import { PostgresListener } from './listener.js';
import { migratePostgres } from './migrate.js';
import { PostgresOverview } from './overview.js';
import { DatabaseNow, DatabaseWritable } from './queries/database.js';
import { PostgresRetention } from './retention.js';
import { PostgresSchedules } from './schedules.js';
import { PostgresTenancy } from './tenancy.js';

interface PostgresStoreOptions extends ConnectionOptions {
  /** Called when the LISTEN connection is lost or comes back (for logs). */
  onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void;
  /** The LISTEN connection's heartbeat (defaults in listener.ts); tests shorten them. */
  listenHeartbeatIntervalMs?: number;
  listenHeartbeatTimeoutMs?: number;
}

const NOTIFY_CHANNEL = 'punctual_job_due';
const CONFIG_CHANNEL = 'punctual_config_changed';

/**
 * The nouns' methods, which the constructor copies onto the store from its noun objects
 * (forwardMethods, with lists checked exhaustive against these interfaces).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the constructor defines every member of these interfaces (forwardMethods)
export interface PostgresStore extends TenancyStore, AuthStore, JobStore, AttemptStore, RetentionStore, OverviewStore, EventStore, ScheduleStore {}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  /** Other instances may hold live leases: only expired ones are rescued, at start too. */
  readonly soleInstance = false;
  /** Every instance needs the same key, so none is generated here: PUNCTUAL_SECRET_KEY is required. */
  readonly secretKeyFile = null;
  private readonly db: ConnectionPool;
  private readonly creator: JobCreator;
  private readonly recorder: AttemptRecorder;
  private listener: PostgresListener | null = null;
  private onJobDue: ((runAt: number) => void) | null = null;
  private readonly cached: CachedReads;

  constructor(private readonly options: PostgresStoreOptions) {
    this.db = new ConnectionPool(options);
    this.creator = new JobCreator(this.db);
    this.recorder = new AttemptRecorder(this.db);
    this.cached = new CachedReads(this.db);
    const events = new PostgresEvents(this.db);
    forwardMethods(this, new PostgresTenancy(this.db, this.cached), TENANCY_STORE_METHODS);
    forwardMethods(this, new PostgresAuth(this.db, this.cached), AUTH_STORE_METHODS);
    forwardMethods(this, new PostgresJobs(this.db, this.creator, this.recorder), JOB_STORE_METHODS);
    forwardMethods(this, new PostgresAttempts(this.db, this.recorder, this.cached), ATTEMPT_STORE_METHODS);
    forwardMethods(this, new PostgresRetention(this.db), RETENTION_STORE_METHODS);
    forwardMethods(this, new PostgresOverview(this.db), OVERVIEW_STORE_METHODS);
    forwardMethods(this, events, EVENT_STORE_METHODS);
    forwardMethods(this, new PostgresSchedules(this.db, events), SCHEDULE_STORE_METHODS);
  }

  /** On a connection of its own, without the pool's timeouts: see migrate.ts. */
  migrate(): Promise<void> {
    return migratePostgres(this.db.config('punctual-migrate'));
  }

  async databaseNow(): Promise<number> {
    return (await this.db.rows<{ now: number }>(DatabaseNow))[0]!.now;
  }

  /** Ready means reachable and writable: a replica or a demoted primary is not ready. */
  async ping(): Promise<void> {
    const [row] = await this.db.rows<{ writable: boolean }>(DatabaseWritable);
    if (!row?.writable) throw new UnavailableError('The database is read-only (a replica?)', {}, { 'retry-after': '1' });
  }

  /**
   * Due-job hints from other instances, and changes that drop the read cache. Reconnects by
   * itself; a lost hint only costs the timer's wait, and the cache is off while disconnected.
   */
  async listenJobDue(listener: (runAt: number) => void): Promise<void> {
    this.onJobDue = listener;
    if (this.listener) return;
    this.listener = new PostgresListener({
      config: this.db.config('punctual-listen'),
      heartbeatIntervalMs: this.options.listenHeartbeatIntervalMs,
      heartbeatTimeoutMs: this.options.listenHeartbeatTimeoutMs,
      onNotification: (channel, payload) => {
        if (channel === CONFIG_CHANNEL) return this.cached.drop();
        const runAt = Number(payload);
        if (channel === NOTIFY_CHANNEL && Number.isFinite(runAt)) this.onJobDue?.(runAt);
      },
      onState: (state, error) => {
        // Changes committed before LISTEN succeeded are in what the next reads see; from then on
        // each one arrives as a notification. Lost, anything may have been missed.
        this.cached.setListening(state === 'connected');
        this.options.onListenerState?.(state, error);
      },
    });
    await this.listener.start();
  }

  async close(): Promise<void> {
    this.cached.setListening(false);
    await this.listener?.close();
    await this.db.end();
  }
}
