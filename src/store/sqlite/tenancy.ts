/**
 * Tenancy in the embedded store (../tenancy-store.ts): reads on the reader connection, projects and
 * secrets through the read cache, writes on the writer thread (tenancy-writes.ts).
 */
import type { ProjectPatch, ProjectRow, TeamRow, TenancyStore, WebhookSecretRow } from '../tenancy-store.js';
import type { CachedReads } from './cached-reads.js';
import { ProjectListByTeam, ProjectListWithHeldJobs, SettingGet, TeamCount, TeamGet, TeamList, TeamListByUser, UsageDaily } from './queries/tenancy.js';
import type { Sql } from './sql.js';
import { toProject } from './sqlite-rows.js';
import * as tenancyWrites from './tenancy-writes.js';
import type { SqliteWriter } from './writer.js';

export class SqliteTenancy implements TenancyStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
    private readonly cached: CachedReads,
  ) {}

  async settingGet(key: string): Promise<string | null> {
    const row = this.sql(SettingGet).get(key) as { value: string } | undefined;
    return row?.value ?? null;
  }

  settingInsertIfAbsent(key: string, value: string): Promise<string> {
    return this.writer.run(tenancyWrites.settingInsertIfAbsent, { key, value });
  }

  teamInsert(team: TeamRow): Promise<void> {
    return this.writer.run(tenancyWrites.teamInsert, team);
  }

  async teamGet(teamId: string): Promise<TeamRow | null> {
    return (this.sql(TeamGet).get(teamId) as TeamRow | undefined) ?? null;
  }

  teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null> {
    return this.cached.afterCommit(this.writer.run(tenancyWrites.teamUpdate, params));
  }

  async teamCount(): Promise<number> {
    return (this.sql(TeamCount).get() as { n: number }).n;
  }

  async teamList(): Promise<TeamRow[]> {
    return this.sql(TeamList).all() as TeamRow[];
  }

  async teamListByUser(userId: string): Promise<TeamRow[]> {
    return this.sql(TeamListByUser).all(userId) as TeamRow[];
  }

  teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void> {
    return this.writer.run(tenancyWrites.teamMembershipInsert, params);
  }

  projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void> {
    return this.cached.afterCommit(this.writer.run(tenancyWrites.projectInsert, params));
  }

  async projectGet(projectId: string): Promise<ProjectRow | null> {
    return this.cached.project(projectId);
  }

  async projectGetMany(projectIds: string[]): Promise<ProjectRow[]> {
    return projectIds.flatMap((id) => {
      const project = this.cached.project(id);
      return project ? [project] : [];
    });
  }

  async projectListByTeam(teamId: string): Promise<ProjectRow[]> {
    return this.sql(ProjectListByTeam).all(teamId).map(toProject);
  }

  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null> {
    return this.cached.afterCommit(this.writer.run(tenancyWrites.projectUpdate, params));
  }

  async projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void> {
    await this.writer.run(tenancyWrites.projectBackoff, { projectId: params.projectId, until: params.until });
  }

  async projectListWithHeldJobs(): Promise<string[]> {
    return (this.sql(ProjectListWithHeldJobs).all() as { id: string }[]).map((row) => row.id);
  }

  /** Every delivery signs with these: from the cache until the first of them expires. */
  async webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    return this.cached.activeSecrets(params);
  }

  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void> {
    return this.cached.afterCommit(this.writer.run(tenancyWrites.webhookSecretRotate, params));
  }

  async usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]> {
    return this.sql(UsageDaily).all(params.teamId, params.fromDay, params.toDay) as { day: string; jobsCreated: number }[];
  }
}
