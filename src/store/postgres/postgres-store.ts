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
 * overview.ts, events.ts and schedules.ts.
 */
import { UnavailableError } from '../../errors.js';
import type { PruneCutoffs } from '../../retention.js';
import type { AttemptStore } from '../attempt-store.js';
import type { AuthStore } from '../auth-store.js';
import type { EventStore } from '../event-store.js';
import type { JobStore } from '../job-store.js';
import type { OverviewStore } from '../overview-store.js';
import type { ScheduleStore } from '../schedule-store.js';
import type { Store } from '../store.js';
import type { TenancyStore } from '../tenancy-store.js';
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
  private readonly retention: PostgresRetention;
  private readonly schedules: PostgresSchedules;
  private readonly events: PostgresEvents;
  private readonly overview: PostgresOverview;
  private readonly tenancy: PostgresTenancy;
  private readonly auth: PostgresAuth;
  private readonly jobs: PostgresJobs;
  private readonly attempts: PostgresAttempts;

  constructor(private readonly options: PostgresStoreOptions) {
    this.db = new ConnectionPool(options);
    this.retention = new PostgresRetention(this.db);
    this.events = new PostgresEvents(this.db);
    this.overview = new PostgresOverview(this.db);
    this.schedules = new PostgresSchedules(this.db, this.events);
    this.creator = new JobCreator(this.db);
    this.recorder = new AttemptRecorder(this.db);
    this.cached = new CachedReads(this.db);
    this.tenancy = new PostgresTenancy(this.db, this.cached);
    this.auth = new PostgresAuth(this.db, this.cached);
    this.jobs = new PostgresJobs(this.db, this.creator, this.recorder);
    this.attempts = new PostgresAttempts(this.db, this.recorder, this.cached);
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
