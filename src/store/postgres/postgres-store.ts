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
 * Keys, projects and secrets are cached per instance (ReadCache) while the instance listens:
 * every change to them sends a NOTIFY in its own transaction, and every instance drops its cache
 * when it arrives (within about a millisecond here). While the LISTEN connection is down, nothing
 * is cached. A LISTEN connection that goes silent without an error is found out by its heartbeat
 * (see PostgresListener), so a missed notification leaves a revoked key working on this instance
 * for at most the heartbeat's interval plus its timeout.
 *
 * A database that cannot be reached surfaces as UnavailableError (503, Retry-After) within the
 * connect or statement timeout, never as a hang or a 500 (postgres-errors.ts says which errors).
 */
import { randomInt } from 'node:crypto';
import pg from 'pg';
import { UnavailableError } from '../../errors.js';
import {
  JOB_STATUSES,
  assembleAnswer,
  type ApiKeyPrincipal,
  type ApiKeyRow,
  type AttemptFinishParams,
  type AttemptRow,
  type AttemptStartParams,
  type ClaimedJob,
  type ExpiredLease,
  type JobClaimParams,
  type JobCreateParams,
  type JobCreateResult,
  type JobListParams,
  type JobRescueParams,
  type JobRow,
  type JobStatus,
  type JobTransitionResult,
  type ProjectPatch,
  type ProjectRow,
  type Store,
  type SessionRow,
  type TeamRow,
  type UserRow,
  type UserWithPassword,
  type WebhookSecretRow,
} from '../store.js';
import { principalFromRow } from '../principal-row.js';
import { ReadCache } from '../read-cache.js';
import { sessionFromRow } from '../session-row.js';
import { PostgresListener } from './listener.js';
import { migratePostgres } from './migrate.js';
import { isPostgresUnavailable, isWriteConflict, translatePostgresError } from './postgres-errors.js';
import * as q from './queries.js';
import { TickBatcher } from './tick-batcher.js';

export interface PostgresStoreOptions {
  url: string;
  /** Connections per instance. */
  poolSize?: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** Tests run each file in a schema of its own. */
  schema?: string;
  /** Called when the LISTEN connection is lost or comes back (for logs). */
  onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void;
  /** The LISTEN connection's heartbeat (defaults in listener.ts); tests shorten them. */
  listenHeartbeatIntervalMs?: number;
  listenHeartbeatTimeoutMs?: number;
}

const NOTIFY_CHANNEL = 'punctual_job_due';
const CONFIG_CHANNEL = 'punctual_config_changed';
/** Jobs due further ahead than this are left to other instances' next-due timers (they look at least every 30 s). */
const NOTIFY_HORIZON_MS = 30_000;
/**
 * Rows a team's usage of a day is spread over (0003_shard_usage_daily.sql): two instances' groups
 * for one team take the same row's lock 1 time in 16, instead of every time.
 */
const USAGE_SHARDS = 16;
const CONNECT_TIMEOUT_MS_DEFAULT = 5_000;
const STATEMENT_TIMEOUT_MS_DEFAULT = 10_000;
/**
 * TCP keepalive on every connection, probing after this much silence (then, with Node's libuv,
 * ten probes a second apart): an idle connection whose server vanished without a word (a dead
 * host, a dropped route) fails within about 20 s instead of the operating system's two hours,
 * so the pool does not hand it out and a migration does not wait on it for ever.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/** bigint columns hold epoch milliseconds, well inside Number's exact range: read them as numbers. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

type Queryable = Pick<pg.PoolClient, 'query'>;

/** A team's quota month: requests of one group normally share it, but one may span a month's end. */
const quotaKey = (params: JobCreateParams) => `${params.teamId} ${params.quota!.monthStartDay}`;

/** Which of a request's jobs are created (false: past the quota), and the month's usage before them. */
type Outcome = { created: boolean[]; usedBefore: number };

const allCreated = (params: JobCreateParams): Outcome => ({ created: params.jobs.map(() => true), usedBefore: 0 });

/**
 * Requests with a quota, in order, against their months' usage (`used`, by quotaKey): each gets the
 * room left after the ones before it, its first jobs created and the rest refused.
 */
function allot(requests: JobCreateParams[], used: Map<string, number>): Outcome[] {
  return requests.map((params) => {
    const key = quotaKey(params);
    const usedBefore = used.get(key)!;
    const room = Math.max(0, params.quota!.limit - usedBefore);
    used.set(key, usedBefore + Math.min(room, params.jobs.length));
    return { created: params.jobs.map((_, i) => i < room), usedBefore };
  });
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;
  private listener: PostgresListener | null = null;
  private onJobDue: ((runAt: number) => void) | null = null;
  /** Off until the LISTEN connection hears CONFIG_CHANNEL, and again whenever it is lost. */
  private readonly cache = new ReadCache(false);
  private createGroup: { params: JobCreateParams; resolve: (result: JobCreateResult) => void; reject: (error: unknown) => void }[] = [];

  constructor(private readonly options: PostgresStoreOptions) {
    const statementTimeout = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS_DEFAULT;
    this.pool = new pg.Pool({
      ...this.connectionConfig('punctual'),
      max: options.poolSize ?? 10,
      idleTimeoutMillis: 30_000,
      // The server cancels a statement past this; the client gives up a little later if the server is gone.
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + 1_000,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    this.pool.on('error', () => {});
  }

  /** What every connection of this store shares: the pool's, the LISTEN connection and the migration's. */
  private connectionConfig(applicationName: string): pg.ClientConfig {
    return {
      connectionString: this.options.url,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS_DEFAULT,
      application_name: applicationName,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
      types,
      ...(this.options.schema && { options: `-c search_path=${this.options.schema}` }),
    };
  }

  /**
   * One statement. On the pool (its own implicit transaction), a statement that lost a deadlock or
   * a serialization conflict was rolled back whole and runs once more; inside a transaction
   * (`client` given) the whole transaction is retried instead, by transaction().
   */
  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], client: Queryable = this.pool): Promise<pg.QueryResult<R>> {
    try {
      return await client.query<R>(text, values);
    } catch (error) {
      if (client !== this.pool || !isWriteConflict(error)) throw translatePostgresError(error);
    }
    try {
      return await client.query<R>(text, values);
    } catch (error) {
      throw translatePostgresError(error);
    }
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], client?: Queryable): Promise<R[]> {
    return (await this.query<R>(text, values, client)).rows;
  }

  /**
   * A short transaction on one connection; never held across anything but its own statements. One
   * that lost a deadlock or a serialization conflict was rolled back whole by PostgreSQL and runs
   * once more; a second loss answers 503, for the client to retry.
   */
  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await this.transactionOnce(fn);
    } catch (error) {
      if (!(error instanceof UnavailableError && isWriteConflict(error.cause))) throw error;
    }
    return this.transactionOnce(fn);
  }

  private async transactionOnce<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw translatePostgresError(error);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // fn's statements throw translated errors: look at what PostgreSQL said.
      const cause = error instanceof UnavailableError ? error.cause : error;
      broken = isPostgresUnavailable(cause) && !isWriteConflict(cause);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      throw translatePostgresError(error);
    } finally {
      client.release(broken);
    }
  }

  /**
   * A hint to the other instances, sent after the change it is about was committed: if it cannot
   * be sent, the change stands (so the caller must not answer an error for it) and the others find
   * the job with their next-due timers. Inside a transaction it fails with it.
   */
  private async notifyDue(runAt: number, now: number, client?: Queryable): Promise<void> {
    if (runAt - now > NOTIFY_HORIZON_MS) return;
    if (client) {
      await this.query(q.NotifyDue, [String(runAt)], client);
      return;
    }
    await this.query(q.NotifyDue, [String(runAt)]).catch(() => {});
  }

  /** On a connection of its own, without the pool's timeouts: see migrate.ts. */
  migrate(): Promise<void> {
    return migratePostgres(this.connectionConfig('punctual-migrate'));
  }

  async databaseNow(): Promise<number> {
    return (await this.rows<{ now: number }>(q.DatabaseNow))[0]!.now;
  }

  /** Ready means reachable and writable: a replica or a demoted primary is not ready. */
  async ping(): Promise<void> {
    const [row] = await this.rows<{ writable: boolean }>(q.DatabaseWritable);
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
      config: this.connectionConfig('punctual-listen'),
      heartbeatIntervalMs: this.options.listenHeartbeatIntervalMs,
      heartbeatTimeoutMs: this.options.listenHeartbeatTimeoutMs,
      onNotification: (channel, payload) => {
        if (channel === CONFIG_CHANNEL) return this.cache.drop();
        const runAt = Number(payload);
        if (channel === NOTIFY_CHANNEL && Number.isFinite(runAt)) this.onJobDue?.(runAt);
      },
      onState: (state, error) => {
        // Changes committed before LISTEN succeeded are in what the next reads see; from then on
        // each one arrives as a notification. Lost, anything may have been missed.
        this.cache.setEnabled(state === 'connected');
        this.options.onListenerState?.(state, error);
      },
    });
    await this.listener.start();
  }

  async close(): Promise<void> {
    this.cache.setEnabled(false);
    await this.listener?.close();
    await this.pool.end();
  }

  async settingGet(key: string): Promise<string | null> {
    return (await this.rows<{ value: string }>(q.SettingGet, [key]))[0]?.value ?? null;
  }

  async settingInsertIfAbsent(key: string, value: string): Promise<string> {
    const stored = (await this.rows<{ value: string }>(q.SettingInsertIfAbsent, [key, value]))[0]?.value;
    // Inserted by another instance while this statement ran: visible to the next statement.
    return stored ?? (await this.settingGet(key))!;
  }

  async teamInsert(team: TeamRow): Promise<void> {
    await this.query(q.TeamInsert, [team.id, team.name, team.plan, team.createdAt]);
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (await this.rows<TeamRow>(q.TeamGet, [teamId]))[0] ?? null;
  }

  async teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.configChange(async (client) => (await this.rows<TeamRow>(q.TeamUpdate, [params.teamId, params.name ?? null, params.plan ?? null], client))[0] ?? null);
  }

  /** A change to keys, projects, teams or secrets: every instance drops its read cache when it commits. */
  private async configChange<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await this.transaction(async (client) => {
        const result = await fn(client);
        await this.query(q.NotifyConfigChanged, [], client);
        return result;
      });
    } finally {
      // Committed or not (a lost COMMIT answer may hide a commit): read again from here on.
      this.cache.drop();
    }
  }

  async teamCount(): Promise<number> {
    return (await this.rows<{ n: number }>(q.TeamCount))[0]!.n;
  }

  private static projectValues(p: ProjectRow): unknown[] {
    return [p.id, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx];
  }

  async projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    const { project: p, secret: s } = params;
    await this.transaction(async (client) => {
      await this.query(
        q.ProjectInsert,
        [p.id, p.teamId, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx, p.createdAt],
        client,
      );
      await this.query(q.WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return (await this.projectGetMany([projectId]))[0] ?? null;
  }

  async projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    const cached = projectIds.map((id) => this.cache.project(id));
    const missing = projectIds.filter((_, i) => !cached[i]);
    if (missing.length === 0) return cached as ProjectRow[];
    const mark = this.cache.mark();
    const read = await this.rows<ProjectRow>(q.ProjectGetMany, [missing]);
    for (const project of read) this.cache.storeProject(mark, project);
    const byId = new Map(read.map((p) => [p.id, p]));
    return projectIds.flatMap((id, i) => cached[i] ?? byId.get(id) ?? []);
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.rows<ProjectRow>(q.ProjectListByTeam, [teamId]);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    // Read and write under the row lock so two partial PATCHes of different fields both hold.
    return this.configChange(async (client) => {
      const current = (await this.rows<ProjectRow>(q.ProjectGetForUpdate, [params.projectId], client))[0];
      if (!current) return null;
      const updated: ProjectRow = { ...current, ...params.patch };
      await this.query(q.ProjectUpdate, PostgresStore.projectValues(updated), client);
      return updated;
    });
  }

  async apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    await this.query(q.ApiKeyInsert, [key.id, key.projectId, key.name, key.hash, key.prefix, key.createdAt, key.lastUsedAt, key.revokedAt]);
  }

  async apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    const cached = this.cache.principal(hash);
    if (cached) return cached;
    const mark = this.cache.mark();
    const row = (await this.rows<Record<string, unknown>>(q.ApiKeyFindByHash, [hash]))[0];
    if (!row) return null;
    const principal = principalFromRow(row);
    this.cache.storePrincipal(mark, hash, principal);
    return principal;
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (await this.rows<ApiKeyRow>(q.ApiKeyGet, [keyId]))[0] ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.rows<ApiKeyRow>(q.ApiKeyListByProject, [projectId]);
  }

  async apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.configChange(async (client) => (await this.rows<ApiKeyRow>(q.ApiKeyRevoke, [params.keyId, params.now], client))[0] ?? null);
  }

  async apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cache.touchKey(params.keyId, params.now);
    await this.query(q.ApiKeyTouch, [params.keyId, params.now]);
  }

  async webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    const cached = this.cache.activeSecrets(params.projectId, params.now);
    if (cached) return cached;
    const mark = this.cache.mark();
    const rows = await this.rows<WebhookSecretRow>(q.WebhookSecretListActive, [params.projectId, params.now]);
    this.cache.storeActiveSecrets(mark, params.projectId, params.now, rows);
    return rows;
  }

  async webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    const s = params.secret;
    await this.configChange(async (client) => {
      await this.query(q.ProjectLock, [params.projectId], client);
      await this.query(q.WebhookSecretDeleteExpiring, [params.projectId], client);
      await this.query(q.WebhookSecretExpireNewest, [params.projectId, params.now + params.overlapMs], client);
      await this.query(q.WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  jobCreate(params: JobCreateParams): Promise<JobCreateResult> {
    const { idempotency, quota } = params;
    if (!idempotency) return this.jobCreateGrouped(params);
    // With an Idempotency-Key: a transaction of its own, claiming the key before storing anything.
    return this.transaction(async (client): Promise<JobCreateResult> => {
      const keyArgs = [params.projectId, idempotency.endpoint, idempotency.key];
      const claimed = await this.rows(q.IdempotencyKeyClaim, [...keyArgs, idempotency.requestHash, params.now, idempotency.validAfter], client);
      if (claimed.length === 0) {
        const previous = (await this.rows<{ requestHash: string; statusCode: number; body: string }>(q.IdempotencyKeyGet, keyArgs, client))[0];
        if (previous) {
          if (previous.requestHash !== idempotency.requestHash) return { kind: 'idempotency_conflict' };
          return { kind: 'replayed', response: { statusCode: previous.statusCode, body: previous.body } };
        }
      }
      const { created, usedBefore } = quota ? allot([params], await this.lockQuotas([params], client))[0]! : allCreated(params);
      if (created.includes(true)) await this.query(q.JobInsertGroup, this.insertGroupArgs([{ params }], [{ created }], params.now), client);
      const response = assembleAnswer(params.answer, created, usedBefore);
      if (response) await this.query(q.IdempotencyKeyStore, [...keyArgs, response.statusCode, response.body], client);
      else await this.query(q.IdempotencyKeyDelete, keyArgs, client);
      return { kind: 'created', created, usedBefore, response, claimed: [] };
    });
  }

  /** Dispatches without an idempotency key, joined with those of the same event-loop turn. */
  private jobCreateGrouped(params: JobCreateParams): Promise<JobCreateResult> {
    return new Promise((resolve, reject) => {
      this.createGroup.push({ params, resolve, reject });
      if (this.createGroup.length === 1) setImmediate(() => void this.flushCreateGroup());
    });
  }

  /**
   * The turn's dispatches of teams without a quota: one statement inserts the jobs and adds them to
   * each team's usage of the day. Those of teams with a quota go apart (quota checks cost two more
   * statements, which the others should not wait for): one transaction locks the teams, reads
   * their month's usage and inserts the jobs that fit, leaving out those past a quota in request
   * order, exactly as one transaction per request would.
   */
  private async flushCreateGroup(): Promise<void> {
    const group = this.createGroup;
    this.createGroup = [];
    const free = group.filter(({ params }) => !params.quota);
    const limited = group.filter(({ params }) => params.quota);
    if (free.length > 0) void this.insertGroup(free);
    if (limited.length > 0) void this.insertGroup(limited);
  }

  /** Stores a group whose requests all have a quota, or all have none. */
  private async insertGroup(group: typeof this.createGroup): Promise<void> {
    // All requests of a group share one `now` (the earliest): created/updated/queued differ by well under a millisecond.
    const now = Math.min(...group.map(({ params }) => params.now));
    const requests = group.map(({ params }) => params);
    let outcomes: Outcome[];
    try {
      if (!requests[0]!.quota) {
        outcomes = requests.map(allCreated);
        await this.query(q.JobInsertGroup, this.insertGroupArgs(group, outcomes, now));
      } else {
        outcomes = await this.transaction(async (client) => {
          const decided = allot(requests, await this.lockQuotas(requests, client));
          await this.query(q.JobInsertGroup, this.insertGroupArgs(group, decided, now), client);
          return decided;
        });
      }
    } catch (error) {
      for (const { reject } of group) reject(error);
      return;
    }
    for (const [i, { params, resolve }] of group.entries()) {
      const { created, usedBefore } = outcomes[i]!;
      resolve({ kind: 'created', created, usedBefore, response: assembleAnswer(params.answer, created, usedBefore), claimed: [] });
    }
  }

  /**
   * Locks the teams (in id order, as every instance does) and reads each one's usage of its quota's
   * month, keyed by quotaKey. Read after the lock, in a statement of its own, so that it sees what
   * the transaction that held the lock before committed.
   */
  private async lockQuotas(requests: JobCreateParams[], client: Queryable): Promise<Map<string, number>> {
    const months = new Map(requests.map((params) => [quotaKey(params), params]));
    const teamIds = [...new Set(requests.map((params) => params.teamId))].sort();
    await this.query(q.TeamsLock, [teamIds], client);
    const entries = [...months.values()];
    const rows = await this.rows<{ n: number }>(
      q.UsageSumMany,
      [entries.map((p) => p.teamId), entries.map((p) => p.quota!.monthStartDay), entries.map((p) => p.quota!.monthEndDay)],
      client,
    );
    return new Map(entries.map((params, i) => [quotaKey(params), Number(rows[i]!.n)]));
  }

  /** JobInsertGroup's arguments: the jobs created, and each team's count in id order (the order its usage rows are locked in). */
  private insertGroupArgs(group: { params: JobCreateParams }[], outcomes: Pick<Outcome, 'created'>[], now: number): unknown[] {
    const jobs = group.flatMap(({ params }, i) =>
      params.jobs.filter((_, k) => outcomes[i]!.created[k]).map((job) => ({ ...job, projectId: params.projectId })),
    );
    // Each request's jobs count on the UTC day of its own time (a group can span midnight).
    const counts = new Map<string, { teamId: string; day: string; n: number }>();
    for (const [i, { params }] of group.entries()) {
      const n = outcomes[i]!.created.filter(Boolean).length;
      const day = new Date(params.now).toISOString().slice(0, 10);
      const key = `${params.teamId} ${day}`;
      if (n > 0) counts.set(key, { teamId: params.teamId, day, n: (counts.get(key)?.n ?? 0) + n });
    }
    // The statement locks the usage rows in this order. Every instance must use the same one, or
    // two groups taking the same rows in opposite orders deadlock.
    const perTeam = [...counts.keys()].sort().map((key) => counts.get(key)!);
    const earliest = Math.min(...jobs.map((j) => j.runAt));
    return [
      now,
      jobs.map((j) => j.id),
      jobs.map((j) => j.projectId),
      jobs.map((j) => j.payload),
      jobs.map((j) => j.scheduledFor),
      jobs.map((j) => j.runAt),
      jobs.map((j) => j.maxRetries),
      perTeam.map((u) => u.teamId),
      perTeam.map((u) => u.day),
      perTeam.map((u) => u.n),
      jobs.length > 0 && earliest - now <= NOTIFY_HORIZON_MS ? String(earliest) : null,
      randomInt(USAGE_SHARDS),
    ];
  }

  async jobGet(params: { projectId: string; jobId: string }): Promise<JobRow | null> {
    return (await this.rows<JobRow>(q.JobGet, [params.jobId, params.projectId]))[0] ?? null;
  }

  async jobList(params: JobListParams): Promise<JobRow[]> {
    const args = [params.projectId, params.beforeSeq ?? Number.MAX_SAFE_INTEGER, params.limit];
    if (params.createdFrom != null || params.createdBefore != null) {
      return this.rows<JobRow>(q.JobListCreatedBetween, [
        ...args,
        params.status,
        params.createdFrom ?? 0,
        params.createdBefore ?? Number.MAX_SAFE_INTEGER,
      ]);
    }
    if (params.status === null) return this.rows<JobRow>(q.JobList, args);
    return this.rows<JobRow>(q.JobListByStatus, [...args, params.status]);
  }

  /** Runs a guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
  private async transition(statement: string, params: { projectId: string; jobId: string }, extra: unknown[]): Promise<JobTransitionResult> {
    const job = (await this.rows<JobRow>(statement, [params.jobId, params.projectId, ...extra]))[0];
    if (job) return { ok: true, job };
    const current = (await this.rows<{ status: JobStatus }>(q.JobStatusGet, [params.jobId, params.projectId]))[0];
    return { ok: false, status: current?.status ?? null };
  }

  jobCancelIfQueued(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    return this.transition(q.JobCancelIfQueued, params, [params.now]);
  }

  async jobRescheduleIfQueued(params: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(q.JobRescheduleIfQueued, params, [params.now, params.scheduledFor]);
    if (result.ok) await this.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async jobRetryIfFailed(params: { projectId: string; jobId: string; now: number }): Promise<JobTransitionResult> {
    const result = await this.transition(q.JobRetryIfFailed, params, [params.now]);
    if (result.ok) await this.notifyDue(result.job.runAt, params.now);
    return result;
  }

  async jobClaimDue(params: JobClaimParams): Promise<ClaimedJob[]> {
    const claimed = await this.rows<ClaimedJob>(q.JobClaimDue, [
      params.now,
      params.dueBy,
      params.limit,
      params.workerId,
      params.leaseExtraMs,
      params.excludeProjectIds,
    ]);
    return claimed.sort((a, b) => a.runAt - b.runAt || a.seq - b.seq);
  }

  async jobNextDueAt(params: { after: number }): Promise<number | null> {
    return (await this.rows<{ runAt: number | null }>(q.JobNextDueAt, [params.after]))[0]!.runAt;
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.starts.run(params);
  }

  /** Attempts starting in the same event-loop turn (jobs due at the same moment) share one statement. */
  private readonly starts = new TickBatcher<AttemptStartParams, { attemptNumber: number } | null>(async (batch) => {
    const rows = await this.rows<{ jobId: string; attemptNumber: number }>(q.AttemptStartMany, [
      batch.map((b) => b.jobId),
      batch.map((b) => b.attemptId),
      batch.map((b) => b.workerId),
      batch.map((b) => b.now),
      batch.map((b) => b.leaseExpiresAt),
    ]);
    const started = new Map(rows.map((row) => [row.jobId, row.attemptNumber]));
    return batch.map((b) => (started.has(b.jobId) ? { attemptNumber: started.get(b.jobId)! } : null));
  }, PostgresStore.mayBeOneRowsFault);

  /**
   * A batch statement that failed for another reason than the database being unreachable (a
   * value it refused, say) changed nothing and may have failed for one row: its rows run again
   * one at a time. An unreachable database would fail them all alike, so they are not.
   */
  private static mayBeOneRowsFault(error: unknown): boolean {
    return !(error instanceof UnavailableError);
  }

  /** Results arriving in the same event-loop turn share one statement (and one commit). */
  private readonly finishes = new TickBatcher<AttemptFinishParams, boolean>(async (batch) => {
    const rows = await this.rows<{ jobId: string }>(q.AttemptFinishMany, [
      batch.map((b) => b.jobId),
      batch.map((b) => b.attemptId),
      batch.map((b) => b.workerId),
      batch.map((b) => b.now),
      batch.map((b) => (b.next.kind === 'complete' ? 'COMPLETED' : b.next.kind === 'fail' ? 'FAILED' : 'QUEUED')),
      batch.map((b) => (b.next.kind === 'retry' ? b.next.runAt : b.next.kind === 'release' ? b.now : null)),
      batch.map((b) => (b.next.kind === 'release' ? 1 : 0)),
      batch.map((b) => (b.result.outcome === 'success' ? null : (b.result.error ?? b.result.outcome))),
      batch.map((b) => b.result.outcome),
      batch.map((b) => b.result.statusCode),
      batch.map((b) => b.result.durationMs),
      batch.map((b) => b.result.error),
      batch.map((b) => b.result.responseBody),
    ]);
    const applied = new Set(rows.map((row) => row.jobId));
    const requeuedAt = batch
      .filter((b) => applied.has(b.jobId) && (b.next.kind === 'retry' || b.next.kind === 'release'))
      .map((b) => (b.next.kind === 'retry' ? b.next.runAt : b.now));
    if (requeuedAt.length > 0) {
      // After the commit, and only a hint (other instances' timers find the jobs anyway): a failed
      // hint must not fail results that are already stored, or a retry of them would find them
      // applied and report the lease lost.
      await this.notifyDue(Math.min(...requeuedAt), Math.min(...batch.map((b) => b.now)));
    }
    return batch.map((b) => applied.has(b.jobId));
  }, PostgresStore.mayBeOneRowsFault);

  private finishAttempt(params: AttemptFinishParams, client?: Queryable): Promise<boolean> {
    const { next, result } = params;
    const status = next.kind === 'complete' ? 'COMPLETED' : next.kind === 'fail' ? 'FAILED' : 'QUEUED';
    return this.rows<{ n: number }>(
      q.AttemptFinish,
      [
        params.jobId,
        params.attemptId,
        params.workerId,
        params.now,
        status,
        next.kind === 'retry' ? next.runAt : next.kind === 'release' ? params.now : null,
        next.kind === 'release' ? 1 : 0,
        result.outcome === 'success' ? null : (result.error ?? result.outcome),
        result.outcome,
        result.statusCode,
        result.durationMs,
        result.error,
        result.responseBody,
      ],
      client,
    ).then((rows) => rows[0]!.n === 1);
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.finishes.run(params);
  }

  async jobLeaseRenew(params: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): Promise<void> {
    await this.query(q.JobLeaseRenew, [params.workerId, params.leases.map((l) => l.jobId), params.leases.map((l) => l.leaseExpiresAt)]);
  }

  jobRescueExpiredLeases(params: JobRescueParams): Promise<ExpiredLease[]> {
    return this.transaction(async (client) => {
      const expired = await this.rows<JobRow & { leaseOwner: string; leaseAttemptId: string | null }>(
        q.JobListExpiredLeases,
        [params.expiredBefore, params.limit],
        client,
      );
      const rescued: ExpiredLease[] = [];
      for (const { leaseOwner, leaseAttemptId, ...job } of expired) {
        if (job.status === 'DISPATCHED' || leaseAttemptId === null) {
          await this.query(q.JobRequeueExpired, [job.id, params.now, params.expiredBefore], client);
          rescued.push({ job, attemptNumber: null });
          continue;
        }
        const lease: ExpiredLease = { job, attemptNumber: job.attemptCount - job.roundStartAttemptCount };
        const project = (await this.rows<ProjectRow>(q.ProjectGet, [job.projectId], client))[0]!;
        const runAt = params.retryAt(lease, project);
        await this.finishAttempt(
          {
            jobId: job.id,
            attemptId: leaseAttemptId,
            workerId: leaseOwner,
            now: params.now,
            result: {
              outcome: 'lease_expired',
              statusCode: null,
              durationMs: params.now - job.updatedAt,
              error: 'lease expired: the worker stopped before the attempt finished',
              responseBody: null,
            },
            next: runAt === null ? { kind: 'fail' } : { kind: 'retry', runAt },
          },
          client,
        );
        rescued.push(lease);
      }
      if (rescued.length > 0) await this.notifyDue(params.now, params.now, client);
      return rescued;
    });
  }

  jobListDispatchedTo(params: { workerId: string }): Promise<ClaimedJob[]> {
    return this.rows<ClaimedJob>(q.JobListDispatchedTo, [params.workerId]);
  }

  async jobReleaseDispatched(params: { workerId: string; now: number }): Promise<number> {
    const released = (await this.query(q.JobReleaseDispatched, [params.workerId, params.now])).rowCount ?? 0;
    if (released > 0) await this.notifyDue(params.now, params.now);
    return released;
  }

  async jobCountByStatus(): Promise<Record<JobStatus, number>> {
    const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
    for (const row of await this.rows<{ status: JobStatus; n: number }>(q.JobCountByStatus)) counts[row.status] = row.n;
    return counts;
  }

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.rows<AttemptRow>(q.AttemptListByJob, [jobId]);
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.rows<{ day: string; jobsCreated: number }>(q.UsageDaily, [params.teamId, params.fromDay, params.toDay]);
  }

  async teamList(): Promise<TeamRow[]> {
    return this.rows<TeamRow>(q.TeamList);
  }

  async teamListByUser(userId: string): Promise<TeamRow[]> {
    return this.rows<TeamRow>(q.TeamListByUser, [userId]);
  }

  async userInsert(user: UserWithPassword): Promise<boolean> {
    const result = await this.query(q.UserInsert, [user.id, user.email, user.passwordHash, user.isOperator, user.createdAt, user.updatedAt]);
    return result.rowCount === 1;
  }

  async userGet(userId: string): Promise<UserRow | null> {
    return (await this.rows<UserRow>(q.UserGet, [userId]))[0] ?? null;
  }

  async userGetByEmail(email: string): Promise<UserWithPassword | null> {
    return (await this.rows<UserWithPassword>(q.UserGetByEmail, [email.toLowerCase()]))[0] ?? null;
  }

  async userGetPasswordHash(userId: string): Promise<string | null> {
    return (await this.rows<{ passwordHash: string }>(q.UserGetPasswordHash, [userId]))[0]?.passwordHash ?? null;
  }

  async userList(): Promise<UserRow[]> {
    return this.rows<UserRow>(q.UserList);
  }

  async userCount(): Promise<number> {
    return (await this.rows<{ n: number }>(q.UserCount))[0]!.n;
  }

  async userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean> {
    return (await this.query(q.UserUpdatePassword, [params.userId, params.passwordHash, params.now])).rowCount === 1;
  }

  async teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    await this.query(q.TeamMembershipInsert, [params.userId, params.teamId, params.now]);
  }

  async sessionInsert(s: SessionRow): Promise<void> {
    await this.query(q.SessionInsert, [s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.expiresAt]);
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = (await this.rows<Record<string, unknown>>(q.SessionGet, [params.tokenHash, params.now]))[0];
    return row ? sessionFromRow(row) : null;
  }

  async sessionDelete(tokenHash: Buffer): Promise<void> {
    await this.query(q.SessionDelete, [tokenHash]);
  }

  async sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    await this.query(q.SessionDeleteByUser, [params.userId, params.keepTokenHash]);
  }

  async sessionDeleteExpired(now: number): Promise<number> {
    return (await this.query(q.SessionDeleteExpired, [now])).rowCount ?? 0;
  }
}
