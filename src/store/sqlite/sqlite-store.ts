/**
 * The embedded store: one SQLite file in WAL mode, through better-sqlite3.
 *
 * How it differs from the PostgreSQL store: SQLite has a single writer, so every write goes to
 * one connection on the writer thread (writer.ts, writes.ts), where the writes requested in one
 * event-loop turn run in one BEGIN IMMEDIATE transaction, and guarded transitions need no row
 * locks or SKIP LOCKED: `UPDATE … WHERE status = 'QUEUED'` runs alone. The event loop keeps only
 * the reads, on a connection of its own; WAL means they never wait for the writer, and a write's
 * promise resolves only after its commit, so a read issued after it sees it.
 *
 * Durability: synchronous=FULL (default) fsyncs the WAL in every commit, before any of its writes
 * is acknowledged, so an acknowledged job survives power loss; the fsync waits on the writer
 * thread, not on the event loop. NORMAL survives a process crash (kill -9) but not an OS crash.
 */
import { statfs } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import type {
  AttemptAcceptParams,
  AttemptReport,
  AttemptWithJob,
  ApiKeyPrincipal,
  ApiKeyRow,
  AttemptFinishParams,
  AttemptRow,
  AttemptStartParams,
  ClaimedJob,
  FailedJobsFilter,
  ExpiredLease,
  JobClaimParams,
  JobCreateParams,
  JobCreateResult,
  JobListParams,
  JobRescueParams,
  JobRow,
  JobStatus,
  JobTransitionResult,
  ProjectPatch,
  ProjectRow,
  PruneCounts,
  PrunedJobs,
  Store,
  SessionRow,
  TeamRow,
  UserRow,
  UserWithPassword,
  WebhookSecretRow,
} from '../store.js';
import type { PruneCutoffs } from '../../retention.js';
import { countsByStatus, leaseExpiredFinish, leaseRescuePlan, type ExpiredLeaseRow } from '../job-rules.js';
import { sessionFromRow, userFromRow } from '../session-row.js';
import { SqliteWriter } from './writer.js';
import { toProject, type LeaseRescue } from './writes.js';
import { BackgroundConnection } from './background-connection.js';
import { CachedReads } from './cached-reads.js';
import { migrateSqlite } from './migrate.js';
import { openReaderConnection } from './reader-connection.js';
import { countPrunableSqlite, storeFileSizes } from './retention-reads.js';
import { acquireServeLock } from './serve-lock.js';
import * as q from './queries.js';
import { toSchedule } from './schedule-writes.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { EventRow, EventStore } from '../event-store.js';
import type { OverviewStore } from '../overview-store.js';
import { readProjectOverview } from './overview-reads.js';

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

  async settingGet(key: string): Promise<string | null> {
    const row = this.sql(q.SettingGet).get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }

  settingInsertIfAbsent(key: string, value: string): Promise<string> {
    return this.writer.run('settingInsertIfAbsent', { key, value });
  }

  teamInsert(team: TeamRow): Promise<void> {
    return this.writer.run('teamInsert', team);
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (this.sql(q.TeamGet).get(teamId) as TeamRow | undefined) ?? null;
  }

  teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.cached.afterCommit(this.writer.run('teamUpdate', params));
  }

  async teamCount(): Promise<number> {
    return (this.sql(q.TeamCount).get() as { n: number }).n;
  }

  projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    return this.cached.afterCommit(this.writer.run('projectInsert', params));
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return this.cached.project(projectId);
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.sql(q.ProjectListByTeam).all(teamId).map(toProject);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    return this.cached.afterCommit(this.writer.run('projectUpdate', params));
  }

  apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    return this.writer.run('apiKeyInsert', key);
  }

  /** Every API request looks its key up: from the cache. */
  async apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    return this.cached.principal(hash);
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (this.sql(q.ApiKeyGet).get(keyId) as ApiKeyRow | undefined) ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.sql(q.ApiKeyListByProject).all(projectId) as ApiKeyRow[];
  }

  apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.cached.afterCommit(this.writer.run('apiKeyRevoke', params));
  }

  apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cached.touchKey(params.keyId, params.now);
    return this.writer.run('apiKeyTouch', params);
  }

  /** Every delivery signs with these: from the cache until the first of them expires. */
  async webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    return this.cached.activeSecrets(params);
  }

  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    return this.cached.afterCommit(this.writer.run('webhookSecretRotate', params));
  }

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    return this.writer.run('jobCreate', params);
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (this.sql(q.JobGet).get(params.jobId, params.projectId) as JobRow | undefined) ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    const [sql, values] = q.jobListStatement(params);
    return this.sql(sql).all(values) as JobRow[];
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.writer.run('jobCancelIfQueued', params);
  }

  jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    return this.writer.run('jobRescheduleIfQueued', params);
  }

  jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.writer.run('jobRetryIfFailed', params);
  }

  async projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void> {
    await this.writer.run('projectBackoff', { projectId: params.projectId, until: params.until });
  }

  jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }> {
    return this.writer.run('jobHoldBatch', params);
  }

  jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number> {
    return this.writer.run('jobReleaseHeldBatch', params);
  }

  async projectListWithHeldJobs(): Promise<string[]> {
    return (this.sql(q.ProjectListWithHeldJobs).all() as { id: string }[]).map((row) => row.id);
  }

  jobRetryFailedMany(params: FailedJobsFilter & { limit: number; now: number }): Promise<{ retried: number; hasMore: boolean }> {
    return this.writer.run('jobRetryFailedMany', params);
  }

  async jobCountFailed(params: FailedJobsFilter): Promise<number> {
    return (this.sql(q.JobCountFailed).get({ ...params, scheduleId: params.scheduleId ?? null }) as { n: number }).n;
  }

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.sql(q.AttemptListByJob).all(jobId) as AttemptRow[];
  }

  async projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    return projectIds.flatMap((id) => {
      const project = this.cached.project(id);
      return project ? [project] : [];
    });
  }

  jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    return this.writer.run('jobClaimDue', params);
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (this.sql(q.JobNextDueAt).get(params) as { runAt: number | null }).runAt;
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.writer.run('attemptStart', params);
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.writer.run('attemptFinish', params);
  }

  attemptAccept(params: AttemptAcceptParams): Promise<boolean> {
    return this.writer.run('attemptAccept', params);
  }

  async attemptGetWithJob(params: { jobId: string; attemptId: string }): Promise<AttemptWithJob | null> {
    const attempt = this.sql(q.AttemptGetOfJob).get(params) as AttemptRow | undefined;
    const job = attempt && (this.sql(q.JobGetById).get(params.jobId) as JobRow | undefined);
    const project = job && this.cached.project(job.projectId);
    return attempt && job && project ? { job, project, attempt } : null;
  }

  attemptReport(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean> {
    return this.writer.run('attemptReport', params);
  }

  jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    return this.writer.run('jobLeaseRenew', params);
  }

  /**
   * Reads the expired leases here, decides each (retryAt needs the project, and is the caller's),
   * then has the writer apply the decisions, each guarded on the lease as read: one renewed or
   * finished in between is left alone and not reported.
   */
  async jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    const expired = this.sql(q.JobListExpiredLeases).all({ expiredBefore: params.expiredBefore, now: params.now, limit: params.limit }) as ExpiredLeaseRow[];
    if (expired.length === 0) return [];
    const plans = expired.map(leaseRescuePlan);
    const rescues = plans.map((plan): LeaseRescue => {
      if (plan.kind === 'requeue') return { kind: 'requeue', jobId: plan.lease.job.id };
      const project = this.cached.project(plan.lease.job.projectId)!;
      return { kind: 'finish', finish: leaseExpiredFinish(plan, { now: params.now, project, retryAt: params.retryAt }) };
    });
    const rescued = await this.writer.run('jobRescueLeases', { now: params.now, expiredBefore: params.expiredBefore, rescues });
    return plans.filter((_, i) => rescued[i]).map((plan) => plan.lease);
  }

  async jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.sql(q.JobListDispatchedTo).all(params.workerId) as ClaimedJob[];
  }

  jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    return this.writer.run('jobReleaseDispatched', params);
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    return countsByStatus(await this.background.all<{ status: JobStatus; n: number }>(q.JobCountByStatus));
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.sql(q.UsageDaily).all(params.teamId, params.fromDay, params.toDay) as { day: string; jobsCreated: number }[];
  }

  async teamList(): Promise<TeamRow[]> {
    return this.sql(q.TeamList).all() as TeamRow[];
  }

  async teamListByUser(userId: string): Promise<TeamRow[]> {
    return this.sql(q.TeamListByUser).all(userId) as TeamRow[];
  }

  userInsert(user: UserWithPassword): Promise<boolean> {
    return this.writer.run('userInsert', user);
  }

  async userGet(userId: string): Promise<UserRow | null> {
    const row = this.sql(q.UserGet).get(userId) as UserRow | undefined;
    return row ? userFromRow(row) : null;
  }

  async userGetByEmail(email: string): Promise<UserWithPassword | null> {
    const row = this.sql(q.UserGetByEmail).get(email.toLowerCase()) as UserWithPassword | undefined;
    return row ? userFromRow(row) : null;
  }

  async userGetPasswordHash(userId: string): Promise<string | null> {
    return (this.sql(q.UserGetPasswordHash).get(userId) as { passwordHash: string } | undefined)?.passwordHash ?? null;
  }

  async userList(): Promise<UserRow[]> {
    return (this.sql(q.UserList).all() as UserRow[]).map(userFromRow);
  }

  async userCount(): Promise<number> {
    return (this.sql(q.UserCount).get() as { n: number }).n;
  }

  userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean> {
    return this.writer.run('userUpdatePassword', params);
  }

  teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    return this.writer.run('teamMembershipInsert', params);
  }

  sessionInsert(session: SessionRow): Promise<void> {
    return this.writer.run('sessionInsert', session);
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = this.sql(q.SessionGet).get(params) as Record<string, unknown> | undefined;
    return row ? sessionFromRow(row) : null;
  }

  sessionDelete(tokenHash: Buffer): Promise<void> {
    return this.writer.run('sessionDelete', { tokenHash });
  }

  sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    return this.writer.run('sessionDeleteByUser', params);
  }

  sessionDeleteExpired(now: number): Promise<number> {
    return this.writer.run('sessionDeleteExpired', { now });
  }

  // Retention (SPEC section 12): each prune is a small batch the writer commits between the group
  // commits of the API and the deliveries; the counts run on the background connection.
  readonly projectListRetention = async () => this.sql(q.ProjectListRetention).all() as { projectId: string; retentionDays: number | null }[];
  readonly jobPruneFinal = (params: { projectId: string; finalBy: number; limit: number }): Promise<PrunedJobs> => this.writer.run('jobPruneFinal', params);
  readonly idempotencyKeyPrune = (params: { createdBy: number; limit: number }): Promise<number> => this.writer.run('idempotencyKeyPrune', params);
  readonly usagePrune = (params: { beforeDay: string; limit: number }): Promise<number> => this.writer.run('usagePrune', params);
  readonly pruneCount = (cutoffs: PruneCutoffs): Promise<PruneCounts> => countPrunableSqlite(this.background, cutoffs);
  readonly storeSize = async () => storeFileSizes(this.path);

  // The project overview (../overview-store.ts): read on the background connection, as the counts
  // walk up to JOB_COUNT_LIMIT index entries per status; its figures are written with the attempts.
  readonly projectOverview: OverviewStore['projectOverview'] = (params) => readProjectOverview(this.background, params);
  /** One row per minute already (a single writer needs no shards): nothing to fold. */
  readonly overviewCompact: OverviewStore['overviewCompact'] = async () => 0;
  readonly overviewPrune: OverviewStore['overviewPrune'] = (params) => this.writer.run('overviewPrune', params);

  // Events (SPEC section 10): reads on this connection, writes on the writer.
  readonly eventInsert: EventStore['eventInsert'] = (event) => this.writer.run('eventInsert', event);
  readonly eventList: EventStore['eventList'] = async (params) =>
    this.sql(q.EventList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }) as EventRow[];
  readonly eventClaimDue: EventStore['eventClaimDue'] = (params) => this.writer.run('eventClaimDue', params);
  readonly eventFinish: EventStore['eventFinish'] = (params) => this.writer.run('eventFinish', params);
  readonly eventReleaseClaims: EventStore['eventReleaseClaims'] = (params) => this.writer.run('eventReleaseClaims', params);
  readonly webhookHealthRecord: EventStore['webhookHealthRecord'] = (params) => this.writer.run('webhookHealthRecord', params);
  readonly webhookHealthListFailing: EventStore['webhookHealthListFailing'] = async () =>
    (this.sql(q.WebhookHealthListFailing).all() as { projectId: string }[]).map((row) => row.projectId);
  readonly eventPrune: EventStore['eventPrune'] = (params) => this.writer.run('eventPrune', params);

  // Recurring schedules (SPEC section 9): reads on this connection, writes on the writer.
  readonly scheduleInsert: ScheduleStore['scheduleInsert'] = (params) => this.writer.run('scheduleInsert', params);
  readonly scheduleGet: ScheduleStore['scheduleGet'] = async (params) => {
    const row = this.sql(q.ScheduleGet).get(params.scheduleId, params.projectId);
    return row ? toSchedule(row) : null;
  };
  readonly scheduleList: ScheduleStore['scheduleList'] = async (params) =>
    this.sql(q.ScheduleList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }).map(toSchedule);
  readonly scheduleUpdate: ScheduleStore['scheduleUpdate'] = (params) => this.writer.run('scheduleUpdate', params);
  readonly scheduleDelete: ScheduleStore['scheduleDelete'] = (params) => this.writer.run('scheduleDelete', params);
  readonly scheduleClaimDue: ScheduleStore['scheduleClaimDue'] = (params) => this.writer.run('scheduleClaimDue', params);
  readonly scheduleAdvance: ScheduleStore['scheduleAdvance'] = (params) => this.writer.run('scheduleAdvance', params);
  readonly scheduleNextWakeAt: ScheduleStore['scheduleNextWakeAt'] = async (params) =>
    (this.sql(q.ScheduleNextWakeAt).get(params) as { wakeAt: number | null }).wakeAt;
  readonly scheduleStartedAheadUntil: ScheduleStore['scheduleStartedAheadUntil'] = async (params) =>
    (this.sql(q.JobStartedAheadOfSchedule).get(params) as { runAt: number | null }).runAt;
}
