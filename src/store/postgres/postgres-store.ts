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
 * This class holds the reads and simple writes; job creation (job-creator.ts) and attempts with
 * their lease rescue (attempt-recorder.ts) have modules of their own.
 */
import { UnavailableError } from '../../errors.js';
import { countsByStatus } from '../job-rules.js';
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
  ExpiredLease,
  FailedJobsFilter,
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
  Store,
  SessionRow,
  TeamRow,
  UserRow,
  UserWithPassword,
  WebhookSecretRow,
} from '../store.js';
import { dueOrder } from '../store.js';
import { sessionFromRow } from '../session-row.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { CachedReads } from './cached-reads.js';
import { ConnectionPool, type ConnectionOptions } from './connection-pool.js';
import { JobCreator } from './job-creator.js';
import { PostgresListener } from './listener.js';
import { migratePostgres } from './migrate.js';
import * as q from './queries.js';
import { PostgresSchedules } from './schedules.js';
import { PostgresEvents } from './events.js';
import type { EventStore } from '../event-store.js';
import type { ScheduleStore } from '../schedule-store.js';
import { PostgresRetention } from './retention.js';
import { PostgresOverview } from './overview.js';
import type { OverviewStore } from '../overview-store.js';
import type { PruneCutoffs } from '../../retention.js';

interface PostgresStoreOptions extends ConnectionOptions {
  /** Called when the LISTEN connection is lost or comes back (for logs). */
  onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void;
  /** The LISTEN connection's heartbeat (defaults in listener.ts); tests shorten them. */
  listenHeartbeatIntervalMs?: number;
  listenHeartbeatTimeoutMs?: number;
}

const NOTIFY_CHANNEL = 'punctual_job_due';
const CONFIG_CHANNEL = 'punctual_config_changed';

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  /** Other instances may hold live leases: only expired ones are rescued, at start too. */
  readonly soleInstance = false;
  /** Every instance needs the same key, so none is generated here: PUNCTUAL_SECRET_KEY is required. */
  readonly secretKeyFile = null;
  private readonly db: ConnectionPool;
  private readonly creator: JobCreator;
  private readonly attempts: AttemptRecorder;
  private listener: PostgresListener | null = null;
  private onJobDue: ((runAt: number) => void) | null = null;
  private readonly cached: CachedReads;
  private readonly retention: PostgresRetention;
  private readonly schedules: PostgresSchedules;
  private readonly events: PostgresEvents;
  private readonly overview: PostgresOverview;

  constructor(private readonly options: PostgresStoreOptions) {
    this.db = new ConnectionPool(options);
    this.retention = new PostgresRetention(this.db);
    this.events = new PostgresEvents(this.db);
    this.overview = new PostgresOverview(this.db);
    this.schedules = new PostgresSchedules(this.db, this.events);
    this.creator = new JobCreator(this.db);
    this.attempts = new AttemptRecorder(this.db);
    this.cached = new CachedReads(this.db);
  }

  /** On a connection of its own, without the pool's timeouts: see migrate.ts. */
  migrate(): Promise<void> {
    return migratePostgres(this.db.config('punctual-migrate'));
  }

  async databaseNow(): Promise<number> {
    return (await this.db.rows<{ now: number }>(q.DatabaseNow))[0]!.now;
  }

  /** Ready means reachable and writable: a replica or a demoted primary is not ready. */
  async ping(): Promise<void> {
    const [row] = await this.db.rows<{ writable: boolean }>(q.DatabaseWritable);
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

  async settingGet(key: string): Promise<string | null> {
    return (await this.db.rows<{ value: string }>(q.SettingGet, [key]))[0]?.value ?? null;
  }

  async settingInsertIfAbsent(key: string, value: string): Promise<string> {
    const stored = (await this.db.rows<{ value: string }>(q.SettingInsertIfAbsent, [key, value]))[0]?.value;
    // Inserted by another instance while this statement ran: visible to the next statement.
    return stored ?? (await this.settingGet(key))!;
  }

  async teamInsert(team: TeamRow): Promise<void> {
    await this.db.query(q.TeamInsert, [team.id, team.name, team.plan, team.createdAt]);
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (await this.db.rows<TeamRow>(q.TeamGet, [teamId]))[0] ?? null;
  }

  async teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.cached.change(async (client) => (await this.db.rows<TeamRow>(q.TeamUpdate, [params.teamId, params.name ?? null, params.plan ?? null], client))[0] ?? null);
  }

  async teamCount(): Promise<number> {
    return (await this.db.rows<{ n: number }>(q.TeamCount))[0]!.n;
  }

  private static projectValues(p: ProjectRow): unknown[] {
    return [p.id, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx, p.retentionDays, p.paused, p.eventsUrl, p.eventsFormat, p.deliveryRatePerSecond, p.asyncCompletion, p.asyncCompletionTimeoutMs];
  }

  async projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    const { project: p, secret: s } = params;
    await this.db.transaction(async (client) => {
      await this.db.query(
        q.ProjectInsert,
        [p.id, p.teamId, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx, p.retentionDays, p.paused, p.eventsUrl, p.eventsFormat, p.deliveryRatePerSecond, p.asyncCompletion, p.asyncCompletionTimeoutMs, p.createdAt],
        client,
      );
      await this.db.query(q.WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return (await this.projectGetMany([projectId]))[0] ?? null;
  }

  projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    return this.cached.projects(projectIds);
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.db.rows<ProjectRow>(q.ProjectListByTeam, [teamId]);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    // Read and write under the row lock so two partial PATCHes of different fields both hold.
    return this.cached.change(async (client) => {
      const current = (await this.db.rows<ProjectRow>(q.ProjectGetForUpdate, [params.projectId], client))[0];
      if (!current) return null;
      const updated: ProjectRow = { ...current, ...params.patch };
      await this.db.query(q.ProjectUpdate, PostgresStore.projectValues(updated), client);
      // Resumed: every instance's scheduler looks for the jobs that waited (due at once: "run at" 0).
      if (current.paused && !updated.paused) await this.db.notifyDue(0, 0, client);
      return updated;
    });
  }

  async apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    await this.db.query(q.ApiKeyInsert, [key.id, key.projectId, key.name, key.hash, key.prefix, key.createdAt, key.lastUsedAt, key.revokedAt]);
  }

  /** Every API request looks its key up: from the cache. */
  apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    return this.cached.principal(hash);
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (await this.db.rows<ApiKeyRow>(q.ApiKeyGet, [keyId]))[0] ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.db.rows<ApiKeyRow>(q.ApiKeyListByProject, [projectId]);
  }

  async apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.cached.change(async (client) => (await this.db.rows<ApiKeyRow>(q.ApiKeyRevoke, [params.keyId, params.now], client))[0] ?? null);
  }

  async apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cached.touchKey(params.keyId, params.now);
    await this.db.query(q.ApiKeyTouch, [params.keyId, params.now]);
  }

  /** Every delivery signs with these: from the cache until the first of them expires. */
  webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    return this.cached.activeSecrets(params);
  }

  async webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    const s = params.secret;
    await this.cached.change(async (client) => {
      await this.db.query(q.ProjectLock, [params.projectId], client);
      await this.db.query(q.WebhookSecretDeleteExpiring, [params.projectId], client);
      await this.db.query(q.WebhookSecretExpireNewest, [params.projectId, params.now + params.overlapMs], client);
      await this.db.query(q.WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    return this.creator.create(params);
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (await this.db.rows<JobRow>(q.JobGet, [params.jobId, params.projectId]))[0] ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    return this.db.rows<JobRow>(...q.jobListStatement(params));
  }

  /** Runs a guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
  private async transition(statement: string, params: { projectId: string; jobId: string }, extra: unknown[]): Promise<JobTransitionResult> {
    const job = (await this.db.rows<JobRow>(statement, [params.jobId, params.projectId, ...extra]))[0];
    if (job) return { ok: true, job };
    const current = (await this.db.rows<{ status: JobStatus }>(q.JobStatusGet, [params.jobId, params.projectId]))[0];
    return { ok: false, status: current?.status ?? null };
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.transition(q.JobCancelIfQueued, params, [params.now]);
  }

  async jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(q.JobRescheduleIfQueued, params, [params.now, params.scheduledFor]);
    if (result.ok) await this.db.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(q.JobRetryIfFailed, params, [params.now]);
    if (result.ok) await this.db.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void> {
    // Not through the read cache's change(): the cached project rows do not hold it.
    await this.db.query(q.ProjectBackoff, [params.projectId, params.until]);
    // Other instances' schedulers look again when it ends (a hint, within the notify horizon).
    await this.db.notifyDue(params.until, params.now);
  }

  async jobHoldBatch(params: { projectId: string; afterSeq: number; limit: number }): Promise<{ nextAfterSeq: number | null }> {
    const [end] = await this.db.rows<{ lastSeq: number | null; n: number }>(q.JobHoldBatch, [params.projectId, params.afterSeq, params.limit]);
    return { nextAfterSeq: end!.n < params.limit ? null : Number(end!.lastSeq) };
  }

  async jobReleaseHeldBatch(params: { projectId: string; limit: number }): Promise<number> {
    const released = (await this.db.query(q.JobReleaseHeldBatch, [params.projectId, params.limit])).rowCount ?? 0;
    if (released > 0) await this.db.notifyDue(0, 0);
    return released;
  }

  async projectListWithHeldJobs(): Promise<string[]> {
    return (await this.db.rows<{ id: string }>(q.ProjectListWithHeldJobs)).map((row) => row.id);
  }

  async jobRetryFailedMany(params: FailedJobsFilter & { limit: number; now: number }): Promise<{ retried: number; hasMore: boolean }> {
    const window = PostgresStore.failedWindow(params);
    const retried = (await this.db.query(q.JobRetryFailedMany, [...window, params.limit, params.now])).rowCount ?? 0;
    if (retried > 0) await this.db.notifyDue(params.now, params.now);
    const hasMore = (await this.db.rows<{ found: boolean }>(q.JobFailedExists, window))[0]!.found;
    return { retried, hasMore };
  }

  async jobCountFailed(params: FailedJobsFilter): Promise<number> {
    return (await this.db.rows<{ n: number }>(q.JobCountFailed, PostgresStore.failedWindow(params)))[0]!.n;
  }

  private static failedWindow(p: FailedJobsFilter): unknown[] {
    return [p.projectId, p.failedFrom, p.failedBefore, p.createdFrom, p.createdBefore, p.scheduleId ?? null];
  }

  async jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    const { now, dueBy, limit, workerId, leaseExtraMs, excludeProjectIds, heldByProject, claimRule } = params;
    const held = Object.entries(heldByProject);
    const claimed = await this.db.rows<ClaimedJob>(q.JobClaimDue, [
      now,
      dueBy,
      limit,
      workerId,
      leaseExtraMs,
      excludeProjectIds,
      held.map(([projectId]) => projectId),
      held.map(([, count]) => count),
      claimRule.aheadFactor,
      claimRule.share,
      claimRule.rateWindowsPerSecond,
    ]);
    // RETURNING gives no order; deliveries start earliest-due first.
    return claimed.sort(dueOrder);
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (await this.db.rows<{ runAt: number | null }>(q.JobNextDueAt, [params.after]))[0]!.runAt;
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.attempts.start(params);
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.attempts.finish(params);
  }

  attemptAccept(params: AttemptAcceptParams): Promise<boolean> {
    return this.attempts.accept(params);
  }

  async attemptGetWithJob(params: { jobId: string; attemptId: string }): Promise<AttemptWithJob | null> {
    const [attempt] = await this.db.rows<AttemptRow>(q.AttemptGetOfJob, [params.jobId, params.attemptId]);
    const [job] = attempt ? await this.db.rows<JobRow>(q.JobGetById, [params.jobId]) : [];
    const project = job && (await this.projectGet(job.projectId));
    return attempt && job && project ? { job, project, attempt } : null;
  }

  attemptReport(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean> {
    return this.attempts.report(params);
  }

  async jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    await this.db.query(q.JobLeaseRenew, [params.workerId, params.leases.map((l) => l.jobId), params.leases.map((l) => l.leaseExpiresAt)]);
  }

  jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    return this.attempts.rescueExpiredLeases(params);
  }

  jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.db.rows<ClaimedJob>(q.JobListDispatchedTo, [params.workerId]);
  }

  async jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    const released = (await this.db.query(q.JobReleaseDispatched, [params.workerId, params.now])).rowCount ?? 0;
    if (released > 0) await this.db.notifyDue(params.now, params.now);
    return released;
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    return countsByStatus(await this.db.rows<{ status: JobStatus; n: number }>(q.JobCountByStatus));
  }

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.db.rows<AttemptRow>(q.AttemptListByJob, [jobId]);
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.db.rows<{ day: string; jobsCreated: number }>(q.UsageDaily, [params.teamId, params.fromDay, params.toDay]);
  }

  async teamList(): Promise<TeamRow[]> {
    return this.db.rows<TeamRow>(q.TeamList);
  }

  async teamListByUser(userId: string): Promise<TeamRow[]> {
    return this.db.rows<TeamRow>(q.TeamListByUser, [userId]);
  }

  async userInsert(user: UserWithPassword): Promise<boolean> {
    const result = await this.db.query(q.UserInsert, [user.id, user.email, user.passwordHash, user.isOperator, user.createdAt, user.updatedAt]);
    return result.rowCount === 1;
  }

  async userGet(userId: string): Promise<UserRow | null> {
    return (await this.db.rows<UserRow>(q.UserGet, [userId]))[0] ?? null;
  }

  async userGetByEmail(email: string): Promise<UserWithPassword | null> {
    return (await this.db.rows<UserWithPassword>(q.UserGetByEmail, [email.toLowerCase()]))[0] ?? null;
  }

  async userGetPasswordHash(userId: string): Promise<string | null> {
    return (await this.db.rows<{ passwordHash: string }>(q.UserGetPasswordHash, [userId]))[0]?.passwordHash ?? null;
  }

  async userList(): Promise<UserRow[]> {
    return this.db.rows<UserRow>(q.UserList);
  }

  async userCount(): Promise<number> {
    return (await this.db.rows<{ n: number }>(q.UserCount))[0]!.n;
  }

  async userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean> {
    return (await this.db.query(q.UserUpdatePassword, [params.userId, params.passwordHash, params.now])).rowCount === 1;
  }

  async teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    await this.db.query(q.TeamMembershipInsert, [params.userId, params.teamId, params.now]);
  }

  async sessionInsert(s: SessionRow): Promise<void> {
    await this.db.query(q.SessionInsert, [s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.expiresAt]);
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = (await this.db.rows<Record<string, unknown>>(q.SessionGet, [params.tokenHash, params.now]))[0];
    return row ? sessionFromRow(row) : null;
  }

  async sessionDelete(tokenHash: Buffer): Promise<void> {
    await this.db.query(q.SessionDelete, [tokenHash]);
  }

  async sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    await this.db.query(q.SessionDeleteByUser, [params.userId, params.keepTokenHash]);
  }

  async sessionDeleteExpired(now: number): Promise<number> {
    return (await this.db.query(q.SessionDeleteExpired, [now])).rowCount ?? 0;
  }

  // Retention (SPEC section 12), in retention.ts.
  readonly projectListRetention = () => this.retention.projectList();
  readonly jobPruneFinal = (params: { projectId: string; finalBy: number; limit: number }) => this.retention.jobPruneFinal(params);
  readonly idempotencyKeyPrune = (params: { createdBy: number; limit: number }) => this.retention.idempotencyKeyPrune(params);
  readonly usagePrune = (params: { beforeDay: string; limit: number }) => this.retention.usagePrune(params);
  readonly pruneCount = (cutoffs: PruneCutoffs) => this.retention.count(cutoffs);
  readonly storeSize = () => this.retention.size();

  // The project overview (../overview-store.ts), in overview.ts; its figures are written with the attempts (attempt-recorder.ts).
  readonly projectOverview: OverviewStore['projectOverview'] = (params) => this.overview.read(params);
  readonly overviewCompact: OverviewStore['overviewCompact'] = (params) => this.overview.compact(params);
  readonly overviewPrune: OverviewStore['overviewPrune'] = (params) => this.overview.prune(params);

  // Events (SPEC section 10), in events.ts.
  readonly eventInsert: EventStore['eventInsert'] = (event) => this.events.insert(event);
  readonly eventList: EventStore['eventList'] = (params) => this.events.list(params);
  readonly eventClaimDue: EventStore['eventClaimDue'] = (params) => this.events.claimDue(params);
  readonly eventFinish: EventStore['eventFinish'] = (params) => this.events.finish(params);
  readonly eventReleaseClaims: EventStore['eventReleaseClaims'] = (params) => this.events.releaseClaims(params);
  readonly webhookHealthRecord: EventStore['webhookHealthRecord'] = (params) => this.events.healthRecord(params);
  readonly webhookHealthListFailing: EventStore['webhookHealthListFailing'] = () => this.events.listFailing();
  readonly eventPrune: EventStore['eventPrune'] = (params) => this.events.prune(params);

  // Recurring schedules (SPEC section 9), in schedules.ts.
  readonly scheduleInsert: ScheduleStore['scheduleInsert'] = (params) => this.schedules.insert(params);
  readonly scheduleGet: ScheduleStore['scheduleGet'] = (params) => this.schedules.get(params);
  readonly scheduleList: ScheduleStore['scheduleList'] = (params) => this.schedules.list(params);
  readonly scheduleUpdate: ScheduleStore['scheduleUpdate'] = (params) => this.schedules.update(params);
  readonly scheduleDelete: ScheduleStore['scheduleDelete'] = (params) => this.schedules.delete(params);
  readonly scheduleClaimDue: ScheduleStore['scheduleClaimDue'] = (params) => this.schedules.claimDue(params);
  readonly scheduleAdvance: ScheduleStore['scheduleAdvance'] = (params) => this.schedules.advance(params);
  readonly scheduleNextWakeAt: ScheduleStore['scheduleNextWakeAt'] = (params) => this.schedules.nextWakeAt(params);
  readonly scheduleStartedAheadUntil: ScheduleStore['scheduleStartedAheadUntil'] = (params) => this.schedules.startedAheadUntil(params);
}
