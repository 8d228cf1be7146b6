/**
 * The embedded store: one SQLite file in WAL mode, through better-sqlite3.
 *
 * How it differs from the PostgreSQL store: SQLite has a single writer, so every write goes
 * through GroupCommit (one BEGIN IMMEDIATE transaction per event-loop turn) and guarded
 * transitions need no row locks or SKIP LOCKED: `UPDATE … WHERE status = 'QUEUED'` runs alone.
 * Reads run directly on the same connection; WAL means they never wait for a writer, and a write's
 * promise resolves only after its commit, so a read issued after it sees it.
 *
 * Durability: synchronous=FULL (default) fsyncs the WAL at every group commit, so an acknowledged
 * job survives power loss; NORMAL survives a process crash (kill -9) but not an OS crash.
 */
import { mkdirSync } from 'node:fs';
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
  TeamRow,
  WebhookSecretRow,
} from '../store.js';
import { JOB_STATUSES } from '../store.js';
import { GroupCommit } from './group-commit.js';
import { migrateSqlite } from './migrate.js';
import { principalFromRow } from '../principal-row.js';
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
  private readonly principals = new Map<string, ApiKeyPrincipal>();
  private principalsVersion = -1;

  constructor(options: SqliteStoreOptions) {
    mkdirSync(dirname(options.path), { recursive: true });
    this.db = new Database(options.path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    // Another process (the CLI beside a running server) may hold the write lock briefly.
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    // 64 MB of page cache (the default is 2 MB): the hot index pages stay in memory under load.
    this.db.pragma('cache_size = -65536');
    this.writer = new GroupCommit(this.db);
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

  async ping(): Promise<void> {
    this.sql('SELECT 1').get();
  }

  async close(): Promise<void> {
    this.writer.flush();
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
    return this.writer.run(() => {
      this.sql(q.ProjectInsert).run(projectParams(params.project));
      this.sql(q.WebhookSecretInsert).run(params.secret);
    });
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    const row = this.sql(q.ProjectGet).get(projectId);
    return row ? toProject(row) : null;
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

  /** Drops cached principals once a write that can change them has committed. */
  private afterCommit<T>(write: Promise<T>): Promise<T> {
    return write.then((result) => {
      this.principals.clear();
      return result;
    });
  }

  /**
   * Every API request looks its key up, so principals are cached, exactly: the cache is dropped
   * when this connection changes a key, project or team, and whenever PRAGMA data_version shows
   * another connection (the CLI) committed anything.
   */
  async apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    const version = (this.sql('PRAGMA data_version').get() as { data_version: number }).data_version;
    if (version !== this.principalsVersion) {
      this.principals.clear();
      this.principalsVersion = version;
    }
    const cacheKey = hash.toString('latin1');
    const cached = this.principals.get(cacheKey);
    if (cached) return cached;
    const principal = this.readPrincipal(hash);
    if (principal) this.principals.set(cacheKey, principal);
    return principal;
  }

  private readPrincipal(hash: Buffer): ApiKeyPrincipal | null {
    const row = this.sql(q.ApiKeyFindByHash).get(hash) as Record<string, unknown> | undefined;
    return row ? principalFromRow(row) : null;
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
    for (const principal of this.principals.values()) {
      if (principal.key.id === params.keyId) principal.key.lastUsedAt = Math.max(principal.key.lastUsedAt ?? 0, params.now);
    }
    return this.writer.run(() => {
      this.sql(q.ApiKeyTouch).run(params);
    });
  }

  async webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    return this.sql(q.WebhookSecretListActive).all(params) as WebhookSecretRow[];
  }

  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    return this.writer.run(() => {
      this.sql(q.WebhookSecretDeleteExpiring).run(params.projectId);
      this.sql(q.WebhookSecretExpireNewest).run({ projectId: params.projectId, expiresAt: params.now + params.overlapMs });
      this.sql(q.WebhookSecretInsert).run(params.secret);
    });
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
    const get = this.sql(q.ProjectGet);
    return projectIds.flatMap((id) => {
      const row = get.get(id);
      return row ? [toProject(row)] : [];
    });
  }

  jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    return this.writer.run(() => {
      const claimed = this.sql(q.JobClaimDue).all({ ...params, excludeProjectIds: JSON.stringify(params.excludeProjectIds) }) as ClaimedJob[];
      // RETURNING gives no order; deliveries start earliest-due first.
      return claimed.sort((a, b) => a.runAt - b.runAt || a.seq - b.seq);
    });
  }

  async jobNextDueAt(): Promise<number | null> {
    return (this.sql(q.JobNextDueAt).get() as { runAt: number | null }).runAt;
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.writer.run(() => {
      const started = this.sql(q.JobStart).get(params) as { attemptNumber: number } | undefined;
      if (!started) return null;
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

  jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    return this.writer.run(() => this.sql(q.JobReleaseDispatched).run(params).changes);
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
    for (const row of this.sql(q.JobCountByStatus).all() as { status: JobStatus; n: number }[]) counts[row.status] = row.n;
    return counts;
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.sql(q.UsageDaily).all(params.teamId, params.fromDay, params.toDay) as { day: string; jobsCreated: number }[];
  }
}
