/**
 * The embedded store: one SQLite file in WAL mode, through better-sqlite3.
 *
 * How it differs from the PostgreSQL store: SQLite has a single writer, so every write goes
 * through GroupCommit (one BEGIN IMMEDIATE transaction per event-loop turn) and guarded
 * transitions need no row locks or SKIP LOCKED: `UPDATE … WHERE status = 'QUEUED'` runs alone.
 * Reads run directly on the same connection; WAL means they never wait for a writer, and a write's
 * promise resolves only after its commit, so a read issued after it sees it.
 *
 * Durability: synchronous=FULL (default) fsyncs the WAL after every group commit, before any of
 * its writes is acknowledged, so an acknowledged job survives power loss; the fsync runs on a
 * libuv thread (GroupCommit). NORMAL survives a process crash (kill -9) but not an OS crash.
 */
import { closeSync, fdatasync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type {
  ApiKeyPrincipal,
  ApiKeyRow,
  AttemptFinishParams,
  AttemptRow,
  AttemptStartParams,
  ClaimedJob,
  ExpiredLease,
  JobClaimParams,
  JobCreateParams,
  JobCreateResult,
  JobListParams,
  JobRescueParams,
  JobRow,
  JobStatus,
  JobTransitionResult,
  NewJob,
  ProjectPatch,
  ProjectRow,
  Store,
  SessionRow,
  TeamRow,
  UserRow,
  UserWithPassword,
  WebhookSecretRow,
} from '../store.js';
import { JOB_STATUSES } from '../store.js';
import { GroupCommit } from './group-commit.js';
import { BackgroundConnection } from './background-connection.js';
import { isSqliteUnavailable } from './sqlite-errors.js';
import { migrateSqlite } from './migrate.js';
import { principalFromRow } from '../principal-row.js';
import { ReadCache } from '../read-cache.js';
import { sessionFromRow, userFromRow } from '../session-row.js';
import * as q from './queries.js';

export interface SqliteStoreOptions {
  path: string;
  synchronous?: 'FULL' | 'NORMAL';
}

type Statement = Database.Statement<unknown[], unknown>;

/** SQLite has no boolean: acceptAny2xx comes back as 0/1. */
function toProject(row: unknown): ProjectRow {
  const project = row as Omit<ProjectRow, 'acceptAny2xx'> & { acceptAny2xx: number };
  return { ...project, acceptAny2xx: project.acceptAny2xx === 1 };
}

function claimedJob(seq: number, row: NewJob & { projectId: string; now: number; leaseExpiresAt: number }): ClaimedJob {
  return {
    seq,
    id: row.id,
    projectId: row.projectId,
    status: 'DISPATCHED',
    payload: row.payload,
    scheduledFor: row.scheduledFor,
    runAt: row.runAt,
    queuedAt: row.now,
    maxRetries: row.maxRetries,
    attemptCount: 0,
    roundStartAttemptCount: 0,
    lastError: null,
    createdAt: row.now,
    updatedAt: row.now,
    completedAt: null,
    failedAt: null,
    cancelledAt: null,
    leaseExpiresAt: row.leaseExpiresAt,
  };
}

const projectParams = (project: ProjectRow) => ({ ...project, acceptAny2xx: project.acceptAny2xx ? 1 : 0 });

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly writer: GroupCommit;
  private readonly statements = new Map<string, Statement>();
  /**
   * Dropped when this connection commits a change to keys, projects, teams or secrets
   * (afterCommit), and when PRAGMA data_version shows that another connection (the CLI) committed
   * anything. That pragma is read at most once per event-loop turn: requests parsed in one turn
   * are concurrent anyway.
   */
  private readonly cache = new ReadCache();
  /** WAL checkpoints and counts over every job, off the main thread. */
  private readonly background: BackgroundConnection;
  private cacheVersion = -1;
  private cacheCheckedThisTurn = false;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path);
    try {
      this.db.pragma('journal_mode = WAL');
      // FULL's fsync is GroupCommit's, off the event loop; SQLite's own would block it at every commit.
      this.db.pragma('synchronous = NORMAL');
      // Another process (the CLI beside a running server) may hold the write lock briefly.
      this.db.pragma('busy_timeout = 5000');
      this.db.pragma('foreign_keys = ON');
      // 16 MB of page cache (the default is 2 MB): with time-ordered ids the hot index pages are few,
      // and bench:ingest gave the same rate as with 64 MB, which cost 48 MB more at peak.
      this.db.pragma('cache_size = -16384');
    } catch (error) {
      // SQLite opens a write-protected file read-only and fails only here: close it (or its file
      // descriptor outlives the failed start) and say what is wrong in words an operator can act on.
      this.db.close();
      if (!isSqliteUnavailable(error)) throw error;
      throw new Error(`Cannot open the SQLite database ${options.path} for writing (${(error as Error).message}): is its file system read-only or full?`, {
        cause: error,
      });
    }
    this.writer = new GroupCommit(this.db, (options.synchronous ?? 'FULL') === 'FULL' ? (done) => this.syncWal(done) : null);
    this.background = new BackgroundConnection({
      databasePath: options.path,
      synchronous: 'NORMAL',
      // SQLite's own checkpoints (in the commit that crosses 1,000 WAL pages) only while the background one is away.
      onCheckpointing: (active) => this.db.open && this.db.pragma(`wal_autocheckpoint = ${active ? 0 : 1000}`),
    });
  }

  /** The WAL file, opened at the first sync (it exists once something was committed in WAL mode). */
  private walFd: number | null = null;

  private syncWal(done: (error: Error | null) => void): void {
    try {
      this.walFd ??= openSync(`${this.db.name}-wal`, 'r');
    } catch (error) {
      done(error as Error);
      return;
    }
    fdatasync(this.walFd, done);
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
   * error), once a small write commits again: not ready while writes would answer 503.
   */
  async ping(): Promise<void> {
    this.sql('SELECT 1').get();
    if (this.writer.failing) await this.writer.run(() => this.sql(q.WriteProbe).run({ now: String(Date.now()) }));
  }

  async close(): Promise<void> {
    await this.background.close();
    // Every accepted write committed and on disk before the file is let go.
    await this.writer.settle();
    if (this.walFd !== null) closeSync(this.walFd);
    this.walFd = null;
    this.db.close();
  }

  async settingGet(key: string): Promise<string | null> {
    const row = this.sql(q.SettingGet).get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }

  settingInsertIfAbsent(key: string, value: string): Promise<string> {
    return this.writer.run(() => {
      this.sql(q.SettingInsertIfAbsent).run(key, value);
      return (this.sql(q.SettingGet).get(key) as { value: string }).value;
    });
  }

  teamInsert(team: TeamRow): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.TeamInsert).run(team);
    });
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (this.sql(q.TeamGet).get(teamId) as TeamRow | undefined) ?? null;
  }

  teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.afterCommit(this.writer.run(
      () =>
        (this.sql(q.TeamUpdate).get({ teamId: params.teamId, name: params.name ?? null, plan: params.plan ?? null }) as
          | TeamRow
          | undefined) ?? null,
    ));
  }

  async teamCount(): Promise<number> {
    return (this.sql(q.TeamCount).get() as { n: number }).n;
  }

  projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    return this.afterCommit(this.writer.run(() => {
      this.sql(q.ProjectInsert).run(projectParams(params.project));
      this.sql(q.WebhookSecretInsert).run(params.secret);
    }));
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return this.cachedProject(projectId);
  }

  private cachedProject(projectId: string): ProjectRow | null {
    this.checkCacheVersion();
    const cached = this.cache.project(projectId);
    if (cached) return cached;
    const row = this.sql(q.ProjectGet).get(projectId);
    if (!row) return null;
    const project = toProject(row);
    this.cache.storeProject(this.cache.mark(), project);
    return project;
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.sql(q.ProjectListByTeam).all(teamId).map(toProject);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    // Read and write in one transaction so two partial PATCHes of different fields both hold.
    return this.afterCommit(this.writer.run(() => {
      const row = this.sql(q.ProjectGet).get(params.projectId);
      if (!row) return null;
      const updated: ProjectRow = { ...toProject(row), ...params.patch };
      this.sql(q.ProjectUpdate).run(projectParams(updated));
      return updated;
    }));
  }

  apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.ApiKeyInsert).run(key);
    });
  }

  /** Drops the caches once a write that can change what they hold has committed. */
  private afterCommit<T>(write: Promise<T>): Promise<T> {
    return write.then((result) => {
      this.cache.drop();
      return result;
    });
  }

  private checkCacheVersion(): void {
    if (this.cacheCheckedThisTurn) return;
    this.cacheCheckedThisTurn = true;
    setImmediate(() => {
      this.cacheCheckedThisTurn = false;
    });
    const version = (this.sql('PRAGMA data_version').get() as { data_version: number }).data_version;
    if (version !== this.cacheVersion) {
      this.cache.drop();
      this.cacheVersion = version;
    }
  }

  /** Every API request looks its key up: from the cache. */
  async apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    this.checkCacheVersion();
    const cached = this.cache.principal(hash);
    if (cached) return cached;
    const row = this.sql(q.ApiKeyFindByHash).get(hash) as Record<string, unknown> | undefined;
    if (!row) return null;
    const principal = principalFromRow(row);
    this.cache.storePrincipal(this.cache.mark(), hash, principal);
    return principal;
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (this.sql(q.ApiKeyGet).get(keyId) as ApiKeyRow | undefined) ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.sql(q.ApiKeyListByProject).all(projectId) as ApiKeyRow[];
  }

  apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.afterCommit(this.writer.run(() => {
      this.sql(q.ApiKeyRevoke).run(params);
      return (this.sql(q.ApiKeyGet).get(params.keyId) as ApiKeyRow | undefined) ?? null;
    }));
  }

  apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cache.touchKey(params.keyId, params.now);
    return this.writer.run(() => {
      this.sql(q.ApiKeyTouch).run(params);
    });
  }

  /** Every delivery signs with these: from the cache until the first of them expires. */
  async webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    this.checkCacheVersion();
    const cached = this.cache.activeSecrets(params.projectId, params.now);
    if (cached) return cached;
    const rows = this.sql(q.WebhookSecretListActive).all(params) as WebhookSecretRow[];
    this.cache.storeActiveSecrets(this.cache.mark(), params.projectId, params.now, rows);
    return rows;
  }

  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    return this.afterCommit(this.writer.run(() => {
      this.sql(q.WebhookSecretDeleteExpiring).run(params.projectId);
      this.sql(q.WebhookSecretExpireNewest).run({ projectId: params.projectId, expiresAt: params.now + params.overlapMs });
      this.sql(q.WebhookSecretInsert).run(params.secret);
    }));
  }

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    return this.writer.run((): JobCreateResult => {
      const { idempotency } = params;
      if (idempotency) {
        const previous = this.sql(q.IdempotencyKeyGet).get(params.projectId, idempotency.endpoint, idempotency.key) as
          | { requestHash: string; statusCode: number; body: string; createdAt: number }
          | undefined;
        if (previous && previous.createdAt > idempotency.validAfter) {
          if (previous.requestHash !== idempotency.requestHash) return { kind: 'idempotency_conflict' };
          return { kind: 'replayed', response: { statusCode: previous.statusCode, body: previous.body } };
        }
      }
      const { quota } = params;
      const usedBefore = quota
        ? (this.sql(q.UsageSum).get(params.teamId, quota.monthStartDay, quota.monthEndDay) as { n: number }).n
        : 0;
      let used = usedBefore;
      const insert = this.sql(q.JobInsert);
      const claim = params.claimDueNow;
      const claimed: ClaimedJob[] = [];
      const created = params.jobs.map((job) => {
        if (quota && used >= quota.limit) return false;
        if (claim && claimed.length < claim.limit && job.runAt <= params.now) {
          const row = { ...job, projectId: params.projectId, now: params.now, workerId: claim.workerId, leaseExpiresAt: claim.leaseExpiresAt };
          const seq = Number(this.sql(q.JobInsertClaimed).run(row).lastInsertRowid);
          claimed.push(claimedJob(seq, row));
        } else {
          insert.run({ ...job, projectId: params.projectId, now: params.now });
        }
        used += 1;
        return true;
      });
      if (used > usedBefore) this.sql(q.UsageAdd).run(params.teamId, new Date(params.now).toISOString().slice(0, 10), used - usedBefore);
      const response = params.renderResponse(created, usedBefore);
      if (idempotency && response) {
        this.sql(q.IdempotencyKeyUpsert).run({
          projectId: params.projectId,
          endpoint: idempotency.endpoint,
          key: idempotency.key,
          requestHash: idempotency.requestHash,
          statusCode: response.statusCode,
          body: response.body,
          now: params.now,
        });
      }
      return { kind: 'created', created, usedBefore, response, claimed };
    });
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (this.sql(q.JobGet).get(params.jobId, params.projectId) as JobRow | undefined) ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    const args = {
      projectId: params.projectId,
      beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER,
      limit: params.limit,
    };
    if (params.createdFrom != null || params.createdBefore != null) {
      return this.sql(q.JobListCreatedBetween).all({
        ...args,
        status: params.status,
        createdFrom: params.createdFrom ?? 0,
        createdBefore: params.createdBefore ?? Number.MAX_SAFE_INTEGER,
      }) as JobRow[];
    }
    if (params.status === null) return this.sql(q.JobList).all(args) as JobRow[];
    return this.sql(q.JobListByStatus).all({ ...args, status: params.status }) as JobRow[];
  }

  /** Runs a guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
  private transition(statement: string, params: Record<string, unknown> & { projectId: string; jobId: string }): Promise<JobTransitionResult> {
    return this.writer.run((): JobTransitionResult => {
      const job = this.sql(statement).get(params) as JobRow | undefined;
      if (job) return { ok: true, job };
      const current = this.sql(q.JobStatusGet).get(params.jobId, params.projectId) as { status: JobStatus } | undefined;
      return { ok: false, status: current?.status ?? null };
    });
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.transition(q.JobCancelIfQueued, params);
  }

  jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    return this.transition(q.JobRescheduleIfQueued, params);
  }

  jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.transition(q.JobRetryIfFailed, params);
  }

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.sql(q.AttemptListByJob).all(jobId) as AttemptRow[];
  }

  async projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    return projectIds.flatMap((id) => {
      const project = this.cachedProject(id);
      return project ? [project] : [];
    });
  }

  jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    return this.writer.run(() => {
      const claimed = this.sql(q.JobClaimDue).all({ ...params, excludeProjectIds: JSON.stringify(params.excludeProjectIds) }) as ClaimedJob[];
      // RETURNING gives no order; deliveries start earliest-due first.
      return claimed.sort((a, b) => a.runAt - b.runAt || a.seq - b.seq);
    });
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (this.sql(q.JobNextDueAt).get(params) as { runAt: number | null }).runAt;
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.writer.run(() => {
      const started = this.sql(q.JobStart).get(params) as { attemptNumber: number } | undefined;
      if (!started) return null;
      // Asked again for an attempt already recorded: nothing more to record.
      const recorded = this.sql(q.AttemptJobGet).get(params.attemptId) as { jobId: string } | undefined;
      if (recorded?.jobId === params.jobId) return started;
      this.sql(q.AttemptInsert).run({ attemptId: params.attemptId, jobId: params.jobId, attemptNumber: started.attemptNumber, now: params.now });
      return started;
    });
  }

  private finishAttempt(params: AttemptFinishParams): boolean {
    const { next, result } = params;
    const status = next.kind === 'complete' ? 'COMPLETED' : next.kind === 'fail' ? 'FAILED' : 'QUEUED';
    const changed = this.sql(q.JobFinishAttempt).run({
      jobId: params.jobId,
      workerId: params.workerId,
      attemptId: params.attemptId,
      now: params.now,
      status,
      runAt: next.kind === 'retry' ? next.runAt : next.kind === 'release' ? params.now : null,
      releasedAttempts: next.kind === 'release' ? 1 : 0,
      lastError: result.outcome === 'success' ? null : (result.error ?? result.outcome),
    }).changes;
    if (changed === 0) return false;
    this.sql(q.AttemptFinish).run({ attemptId: params.attemptId, now: params.now, ...result });
    return true;
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.writer.run(() => this.finishAttempt(params));
  }

  jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    return this.writer.run(() => {
      const renew = this.sql(q.JobLeaseRenew);
      for (const lease of params.leases) renew.run({ workerId: params.workerId, ...lease });
    });
  }

  jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    return this.writer.run(() => {
      const expired = this.sql(q.JobListExpiredLeases).all({ expiredBefore: params.expiredBefore, limit: params.limit }) as (JobRow & {
        leaseOwner: string;
        leaseAttemptId: string | null;
      })[];
      return expired.map(({ leaseOwner, leaseAttemptId, ...job }): ExpiredLease => {
        if (job.status === 'DISPATCHED' || leaseAttemptId === null) {
          this.sql(q.JobRequeueExpired).run({ jobId: job.id, now: params.now, expiredBefore: params.expiredBefore });
          return { job, attemptNumber: null };
        }
        const lease: ExpiredLease = { job, attemptNumber: job.attemptCount - job.roundStartAttemptCount };
        const runAt = params.retryAt(lease, toProject(this.sql(q.ProjectGet).get(job.projectId)));
        this.finishAttempt({
          jobId: job.id,
          attemptId: leaseAttemptId,
          workerId: leaseOwner,
          now: params.now,
          result: { outcome: 'lease_expired', statusCode: null, durationMs: params.now - job.updatedAt, error: 'lease expired: the worker stopped before the attempt finished', responseBody: null },
          next: runAt === null ? { kind: 'fail' } : { kind: 'retry', runAt },
        });
        return lease;
      });
    });
  }

  async jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.sql(q.JobListDispatchedTo).all(params.workerId) as ClaimedJob[];
  }

  jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    return this.writer.run(() => this.sql(q.JobReleaseDispatched).run(params).changes);
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
    for (const row of await this.background.all<{ status: JobStatus; n: number }>(q.JobCountByStatus)) counts[row.status] = row.n;
    return counts;
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
    return this.writer.run(() => this.sql(q.UserInsert).run({ ...user, isOperator: user.isOperator ? 1 : 0 }).changes === 1);
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
    return this.writer.run(() => this.sql(q.UserUpdatePassword).run(params).changes === 1);
  }

  teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.TeamMembershipInsert).run(params);
    });
  }

  sessionInsert(session: SessionRow): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.SessionInsert).run(session);
    });
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = this.sql(q.SessionGet).get(params) as Record<string, unknown> | undefined;
    return row ? sessionFromRow(row) : null;
  }

  sessionDelete(tokenHash: Buffer): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.SessionDelete).run(tokenHash);
    });
  }

  sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.SessionDeleteByUser).run(params);
    });
  }

  sessionDeleteExpired(now: number): Promise<number> {
    return this.writer.run(() => this.sql(q.SessionDeleteExpired).run(now).changes);
  }
}
