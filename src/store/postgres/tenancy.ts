/**
 * Tenancy in PostgreSQL (../tenancy-store.ts). Changes to teams, projects and secrets go through
 * the read cache's change(), which tells every instance to drop its cache in the same transaction.
 */
import type { ProjectPatch, ProjectRow, TeamRow, TenancyStore, WebhookSecretRow } from '../tenancy-store.js';
import type { CachedReads } from './cached-reads.js';
import type { ConnectionPool } from './connection-pool.js';
import { ProjectBackoff, ProjectGetForUpdate, ProjectInsert, ProjectListByTeam, ProjectListWithHeldJobs, ProjectLock, ProjectUpdate, SettingGet, SettingInsertIfAbsent, TeamCount, TeamGet, TeamInsert, TeamList, TeamListByUser, TeamMembershipInsert, TeamUpdate, UsageDaily, WebhookSecretDeleteExpiring, WebhookSecretExpireNewest, WebhookSecretInsert } from './queries/tenancy.js';

export class PostgresTenancy implements TenancyStore {
  constructor(
    private readonly db: ConnectionPool,
    private readonly cached: CachedReads,
  ) {}

  async settingGet(key: string): Promise<string | null> {
    return (await this.db.rows<{ value: string }>(SettingGet, [key]))[0]?.value ?? null;
  }

  async settingInsertIfAbsent(key: string, value: string): Promise<string> {
    const stored = (await this.db.rows<{ value: string }>(SettingInsertIfAbsent, [key, value]))[0]?.value;
    // Inserted by another instance while this statement ran: visible to the next statement.
    return stored ?? (await this.settingGet(key))!;
  }

  async teamInsert(team: TeamRow): Promise<void> {
    await this.db.query(TeamInsert, [team.id, team.name, team.plan, team.createdAt]);
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (await this.db.rows<TeamRow>(TeamGet, [teamId]))[0] ?? null;
  }

  async teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.cached.change(async (client) => (await this.db.rows<TeamRow>(TeamUpdate, [params.teamId, params.name ?? null, params.plan ?? null], client))[0] ?? null);
  }

  async teamCount(): Promise<number> {
    return (await this.db.rows<{ n: number }>(TeamCount))[0]!.n;
  }

  async teamList(): Promise<TeamRow[]> {
    return this.db.rows<TeamRow>(TeamList);
  }

  async teamListByUser(userId: string): Promise<TeamRow[]> {
    return this.db.rows<TeamRow>(TeamListByUser, [userId]);
  }

  async teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    await this.db.query(TeamMembershipInsert, [params.userId, params.teamId, params.now]);
  }

  private static projectValues(p: ProjectRow): unknown[] {
    return [p.id, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx, p.retentionDays, p.paused, p.eventsUrl, p.eventsFormat, p.deliveryRatePerSecond, p.asyncCompletion, p.asyncCompletionTimeoutMs, p.holdOnFailure, p.eventTypes, p.retryStopOn, p.keyConcurrency];
  }

  async projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    const { project: p, secret: s } = params;
    await this.db.transaction(async (client) => {
      await this.db.query(
        ProjectInsert,
        [p.id, p.teamId, p.name, p.webhookUrl, p.retryMaxRetries, p.retryInitialDelayMs, p.retryFactor, p.retryMaxDelayMs, p.deliveryTimeoutMs, p.deliveryConcurrency, p.acceptAny2xx, p.retentionDays, p.paused, p.eventsUrl, p.eventsFormat, p.deliveryRatePerSecond, p.asyncCompletion, p.asyncCompletionTimeoutMs, p.holdOnFailure, p.eventTypes, p.retryStopOn, p.createdAt, p.keyConcurrency],
        client,
      );
      await this.db.query(WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return (await this.projectGetMany([projectId]))[0] ?? null;
  }

  projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    return this.cached.projects(projectIds);
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.db.rows<ProjectRow>(ProjectListByTeam, [teamId]);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    // Read and write under the row lock so two partial PATCHes of different fields both hold.
    return this.cached.change(async (client) => {
      const current = (await this.db.rows<ProjectRow>(ProjectGetForUpdate, [params.projectId], client))[0];
      if (!current) return null;
      const updated: ProjectRow = { ...current, ...params.patch };
      await this.db.query(ProjectUpdate, PostgresTenancy.projectValues(updated), client);
      // Resumed: every instance's scheduler looks for the jobs that waited (due at once: "run at" 0).
      if (current.paused && !updated.paused) await this.db.notifyDue(0, 0, client);
      return updated;
    });
  }

  async projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void> {
    // Not through the read cache's change(): the cached project rows do not hold it.
    await this.db.query(ProjectBackoff, [params.projectId, params.until]);
    // Other instances' schedulers look again when it ends (a hint, within the notify horizon).
    await this.db.notifyDue(params.until, params.now);
  }

  async projectListWithHeldJobs(): Promise<string[]> {
    return (await this.db.rows<{ id: string }>(ProjectListWithHeldJobs)).map((row) => row.id);
  }

  /** Every delivery signs with these: from the cache until the first of them expires. */
  webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    return this.cached.activeSecrets(params);
  }

  async webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    const s = params.secret;
    await this.cached.change(async (client) => {
      await this.db.query(ProjectLock, [params.projectId], client);
      await this.db.query(WebhookSecretDeleteExpiring, [params.projectId], client);
      await this.db.query(WebhookSecretExpireNewest, [params.projectId, params.now + params.overlapMs], client);
      await this.db.query(WebhookSecretInsert, [s.id, s.projectId, s.ciphertext, s.createdAt, s.expiresAt], client);
    });
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.db.rows<{ day: string; jobsCreated: number }>(UsageDaily, [params.teamId, params.fromDay, params.toDay]);
  }
}
