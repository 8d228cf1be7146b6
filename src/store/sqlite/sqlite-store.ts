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
 * This class opens the connections and hands each noun to a module of its own: tenancy.ts,
 * auth.ts, jobs.ts and attempts.ts; retention, the overview, events and schedules are short enough
 * to stay below.
 */
import { statfs } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import type { AttemptStore } from '../attempt-store.js';
import type { AuthStore } from '../auth-store.js';
import type { EventRow, EventStore } from '../event-store.js';
import type { JobStore } from '../job-store.js';
import type { OverviewStore } from '../overview-store.js';
import type { PruneCounts, PrunedJobs } from '../retention-store.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { Store } from '../store.js';
import type { TenancyStore } from '../tenancy-store.js';
import type { PruneCutoffs } from '../../retention.js';
import { SqliteAttempts } from './attempts.js';
import { SqliteAuth } from './auth.js';
import { BackgroundConnection } from './background-connection.js';
import { CachedReads } from './cached-reads.js';
import * as eventWrites from './event-writes.js';
import { SqliteJobs } from './jobs.js';
import { migrateSqlite } from './migrate.js';
import { readProjectOverview } from './overview-reads.js';
import * as overviewWrites from './overview-writes.js';
import { EventList, WebhookHealthListFailing } from './queries/events.js';
import { ProjectListRetention } from './queries/retention.js';
import { JobStartedAheadOfSchedule, ScheduleGet, ScheduleList, ScheduleNextWakeAt } from './queries/schedules.js';
import { openReaderConnection } from './reader-connection.js';
import * as retentionWrites from './retention-writes.js';
import { countPrunableSqlite, storeFileSizes } from './retention-reads.js';
import * as scheduleWrites from './schedule-writes.js';
import { acquireServeLock } from './serve-lock.js';
import { toSchedule } from './sqlite-rows.js';
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
  private readonly tenancy: SqliteTenancy;
  private readonly auth: SqliteAuth;
  private readonly jobs: SqliteJobs;
  private readonly attempts: SqliteAttempts;
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
    this.tenancy = new SqliteTenancy(sql, this.writer, this.cached);
    this.auth = new SqliteAuth(sql, this.writer, this.cached);
    this.jobs = new SqliteJobs(sql, this.writer, this.cached, this.background);
    this.attempts = new SqliteAttempts(sql, this.writer, this.cached);
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

  // Tenancy (../tenancy-store.ts), in tenancy.ts.
  readonly settingGet: TenancyStore['settingGet'] = (key) => this.tenancy.settingGet(key);
  readonly settingInsertIfAbsent: TenancyStore['settingInsertIfAbsent'] = (key, value) => this.tenancy.settingInsertIfAbsent(key, value);
  readonly teamInsert: TenancyStore['teamInsert'] = (team) => this.tenancy.teamInsert(team);
  readonly teamGet: TenancyStore['teamGet'] = (teamId) => this.tenancy.teamGet(teamId);
  readonly teamUpdate: TenancyStore['teamUpdate'] = (params) => this.tenancy.teamUpdate(params);
  readonly teamCount: TenancyStore['teamCount'] = () => this.tenancy.teamCount();
  readonly teamList: TenancyStore['teamList'] = () => this.tenancy.teamList();
  readonly teamListByUser: TenancyStore['teamListByUser'] = (userId) => this.tenancy.teamListByUser(userId);
  readonly teamMembershipInsert: TenancyStore['teamMembershipInsert'] = (params) => this.tenancy.teamMembershipInsert(params);
  readonly projectInsert: TenancyStore['projectInsert'] = (params) => this.tenancy.projectInsert(params);
  readonly projectGet: TenancyStore['projectGet'] = (projectId) => this.tenancy.projectGet(projectId);
  readonly projectGetMany: TenancyStore['projectGetMany'] = (projectIds) => this.tenancy.projectGetMany(projectIds);
  readonly projectListByTeam: TenancyStore['projectListByTeam'] = (teamId) => this.tenancy.projectListByTeam(teamId);
  readonly projectUpdate: TenancyStore['projectUpdate'] = (params) => this.tenancy.projectUpdate(params);
  readonly projectBackoff: TenancyStore['projectBackoff'] = (params) => this.tenancy.projectBackoff(params);
  readonly projectListWithHeldJobs: TenancyStore['projectListWithHeldJobs'] = () => this.tenancy.projectListWithHeldJobs();
  readonly webhookSecretListActive: TenancyStore['webhookSecretListActive'] = (params) => this.tenancy.webhookSecretListActive(params);
  readonly webhookSecretRotate: TenancyStore['webhookSecretRotate'] = (params) => this.tenancy.webhookSecretRotate(params);
  readonly usageDaily: TenancyStore['usageDaily'] = (params) => this.tenancy.usageDaily(params);

  // Users, sessions and API keys (../auth-store.ts), in auth.ts.
  readonly userInsert: AuthStore['userInsert'] = (user) => this.auth.userInsert(user);
  readonly userGet: AuthStore['userGet'] = (userId) => this.auth.userGet(userId);
  readonly userGetByEmail: AuthStore['userGetByEmail'] = (email) => this.auth.userGetByEmail(email);
  readonly userGetPasswordHash: AuthStore['userGetPasswordHash'] = (userId) => this.auth.userGetPasswordHash(userId);
  readonly userList: AuthStore['userList'] = () => this.auth.userList();
  readonly userCount: AuthStore['userCount'] = () => this.auth.userCount();
  readonly userUpdatePassword: AuthStore['userUpdatePassword'] = (params) => this.auth.userUpdatePassword(params);
  readonly sessionInsert: AuthStore['sessionInsert'] = (session) => this.auth.sessionInsert(session);
  readonly sessionGet: AuthStore['sessionGet'] = (params) => this.auth.sessionGet(params);
  readonly sessionDelete: AuthStore['sessionDelete'] = (tokenHash) => this.auth.sessionDelete(tokenHash);
  readonly sessionDeleteByUser: AuthStore['sessionDeleteByUser'] = (params) => this.auth.sessionDeleteByUser(params);
  readonly sessionDeleteExpired: AuthStore['sessionDeleteExpired'] = (now) => this.auth.sessionDeleteExpired(now);
  readonly apiKeyInsert: AuthStore['apiKeyInsert'] = (key) => this.auth.apiKeyInsert(key);
  readonly apiKeyFindByHash: AuthStore['apiKeyFindByHash'] = (hash) => this.auth.apiKeyFindByHash(hash);
  readonly apiKeyGet: AuthStore['apiKeyGet'] = (keyId) => this.auth.apiKeyGet(keyId);
  readonly apiKeyListByProject: AuthStore['apiKeyListByProject'] = (projectId) => this.auth.apiKeyListByProject(projectId);
  readonly apiKeyRevoke: AuthStore['apiKeyRevoke'] = (params) => this.auth.apiKeyRevoke(params);
  readonly apiKeyTouch: AuthStore['apiKeyTouch'] = (params) => this.auth.apiKeyTouch(params);

  // Jobs (../job-store.ts), in jobs.ts.
  readonly jobCreate: JobStore['jobCreate'] = (params) => this.jobs.jobCreate(params);
  readonly jobGet: JobStore['jobGet'] = (params) => this.jobs.jobGet(params);
  readonly jobList: JobStore['jobList'] = (params) => this.jobs.jobList(params);
  readonly jobCancelIfQueued: JobStore['jobCancelIfQueued'] = (params) => this.jobs.jobCancelIfQueued(params);
  readonly jobRescheduleIfQueued: JobStore['jobRescheduleIfQueued'] = (params) => this.jobs.jobRescheduleIfQueued(params);
  readonly jobRetryIfFailed: JobStore['jobRetryIfFailed'] = (params) => this.jobs.jobRetryIfFailed(params);
  readonly jobBulkAct: JobStore['jobBulkAct'] = (params) => this.jobs.jobBulkAct(params);
  readonly jobBulkCount: JobStore['jobBulkCount'] = (params) => this.jobs.jobBulkCount(params);
  readonly jobHoldBatch: JobStore['jobHoldBatch'] = (params) => this.jobs.jobHoldBatch(params);
  readonly jobReleaseHeldBatch: JobStore['jobReleaseHeldBatch'] = (params) => this.jobs.jobReleaseHeldBatch(params);
  readonly jobClaimDue: JobStore['jobClaimDue'] = (params) => this.jobs.jobClaimDue(params);
  readonly jobNextDueAt: JobStore['jobNextDueAt'] = (params) => this.jobs.jobNextDueAt(params);
  readonly jobLeaseRenew: JobStore['jobLeaseRenew'] = (params) => this.jobs.jobLeaseRenew(params);
  readonly jobRescueExpiredLeases: JobStore['jobRescueExpiredLeases'] = (params) => this.jobs.jobRescueExpiredLeases(params);
  readonly jobListDispatchedTo: JobStore['jobListDispatchedTo'] = (params) => this.jobs.jobListDispatchedTo(params);
  readonly jobReleaseDispatched: JobStore['jobReleaseDispatched'] = (params) => this.jobs.jobReleaseDispatched(params);
  readonly jobCountByStatus: JobStore['jobCountByStatus'] = () => this.jobs.jobCountByStatus();

  // Attempts (../attempt-store.ts), in attempts.ts.
  readonly attemptListByJob: AttemptStore['attemptListByJob'] = (jobId) => this.attempts.attemptListByJob(jobId);
  readonly attemptStart: AttemptStore['attemptStart'] = (params) => this.attempts.attemptStart(params);
  readonly attemptFinish: AttemptStore['attemptFinish'] = (params) => this.attempts.attemptFinish(params);
  readonly attemptAccept: AttemptStore['attemptAccept'] = (params) => this.attempts.attemptAccept(params);
  readonly attemptGetWithJob: AttemptStore['attemptGetWithJob'] = (params) => this.attempts.attemptGetWithJob(params);
  readonly attemptReport: AttemptStore['attemptReport'] = (params) => this.attempts.attemptReport(params);

  // Retention (SPEC section 12): each prune is a small batch the writer commits between the group
  // commits of the API and the deliveries; the counts run on the background connection.
  readonly projectListRetention = async () => this.sql(ProjectListRetention).all() as { projectId: string; retentionDays: number | null }[];
  readonly jobPruneFinal = (params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs> => this.writer.run(retentionWrites.jobPruneFinal, params);
  readonly idempotencyKeyPrune = (params: { createdBy: number; limit: number }): Promise<number> => this.writer.run(retentionWrites.idempotencyKeyPrune, params);
  readonly usagePrune = (params: { beforeDay: string; limit: number }): Promise<number> => this.writer.run(retentionWrites.usagePrune, params);
  readonly pruneCount = (cutoffs: PruneCutoffs): Promise<PruneCounts> => countPrunableSqlite(this.background, cutoffs);
  readonly storeSize = async () => storeFileSizes(this.path);

  // The project overview (../overview-store.ts): read on the background connection, as the counts
  // walk up to JOB_COUNT_LIMIT index entries per status; its figures are written with the attempts.
  readonly projectOverview: OverviewStore['projectOverview'] = (params) => readProjectOverview(this.background, params);
  /** One row per minute already (a single writer needs no shards): nothing to fold. */
  readonly overviewCompact: OverviewStore['overviewCompact'] = async () => 0;
  readonly overviewPrune: OverviewStore['overviewPrune'] = (params) => this.writer.run(overviewWrites.overviewPrune, params);

  // Events (SPEC section 10): reads on this connection, writes on the writer.
  readonly eventInsert: EventStore['eventInsert'] = (event) => this.writer.run(eventWrites.eventInsert, event);
  readonly eventList: EventStore['eventList'] = async (params) =>
    this.sql(EventList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }) as EventRow[];
  readonly eventClaimDue: EventStore['eventClaimDue'] = (params) => this.writer.run(eventWrites.eventClaimDue, params);
  readonly eventFinish: EventStore['eventFinish'] = (params) => this.writer.run(eventWrites.eventFinish, params);
  readonly eventReleaseClaims: EventStore['eventReleaseClaims'] = (params) => this.writer.run(eventWrites.eventReleaseClaims, params);
  readonly webhookHealthRecord: EventStore['webhookHealthRecord'] = (params) => this.writer.run(eventWrites.webhookHealthRecord, params);
  readonly webhookHealthListFailing: EventStore['webhookHealthListFailing'] = async () =>
    (this.sql(WebhookHealthListFailing).all() as { projectId: string }[]).map((row) => row.projectId);
  readonly eventPrune: EventStore['eventPrune'] = (params) => this.writer.run(eventWrites.eventPrune, params);

  // Recurring schedules (SPEC section 9): reads on this connection, writes on the writer.
  readonly scheduleInsert: ScheduleStore['scheduleInsert'] = (params) => this.writer.run(scheduleWrites.scheduleInsert, params);
  readonly scheduleGet: ScheduleStore['scheduleGet'] = async (params) => {
    const row = this.sql(ScheduleGet).get(params.scheduleId, params.projectId);
    return row ? toSchedule(row) : null;
  };
  readonly scheduleList: ScheduleStore['scheduleList'] = async (params) =>
    this.sql(ScheduleList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }).map(toSchedule);
  readonly scheduleUpdate: ScheduleStore['scheduleUpdate'] = (params) => this.writer.run(scheduleWrites.scheduleUpdate, params);
  readonly scheduleDelete: ScheduleStore['scheduleDelete'] = (params) => this.writer.run(scheduleWrites.scheduleDelete, params);
  readonly scheduleClaimDue: ScheduleStore['scheduleClaimDue'] = (params) => this.writer.run(scheduleWrites.scheduleClaimDue, params);
  readonly scheduleAdvance: ScheduleStore['scheduleAdvance'] = (params) => this.writer.run(scheduleWrites.scheduleAdvance, params);
  readonly scheduleNextWakeAt: ScheduleStore['scheduleNextWakeAt'] = async (params) =>
    (this.sql(ScheduleNextWakeAt).get(params) as { wakeAt: number | null }).wakeAt;
  readonly scheduleStartedAheadUntil: ScheduleStore['scheduleStartedAheadUntil'] = async (params) =>
    (this.sql(JobStartedAheadOfSchedule).get(params) as { runAt: number | null }).runAt;
}
