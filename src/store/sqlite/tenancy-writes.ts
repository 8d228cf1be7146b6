/**
 * The embedded store's writes of settings, teams, projects and their webhook secrets, each a
 * function of its parameters run on the writer thread inside the group's transaction, in its own
 * savepoint (write-registry.ts says how a call reaches it). The store passes the function itself:
 * `writer.run(tenancyWrites.settingInsertIfAbsent, params)`.
 */
import type { ProjectPatch, ProjectRow, TeamRow, WebhookSecretRow } from '../tenancy-store.js';
import { bumpCacheEpoch } from './cache-epoch.js';
import { ProjectBackoff, ProjectGet, ProjectInsert, ProjectUpdate, SettingGet, SettingInsertIfAbsent, TeamInsert, TeamMembershipInsert, TeamUpdate, WebhookSecretDeleteExpiring, WebhookSecretExpireNewest, WebhookSecretInsert, WriteProbe } from './queries/tenancy.js';
import type { Sql } from './sql.js';
import { projectParams, toProject } from './sqlite-rows.js';

export function settingInsertIfAbsent(sql: Sql, p: { key: string; value: string }): string {
  sql(SettingInsertIfAbsent).run(p.key, p.value);
  return (sql(SettingGet).get(p.key) as { value: string }).value;
}

export function writeProbe(sql: Sql, p: { now: number }): void {
  sql(WriteProbe).run({ now: String(p.now) });
}

export function teamInsert(sql: Sql, team: TeamRow): void {
  sql(TeamInsert).run(team);
}

export function teamUpdate(sql: Sql, p: { teamId: string; name?: string; plan?: string }): TeamRow | null {
  const team = (sql(TeamUpdate).get({ teamId: p.teamId, name: p.name ?? null, plan: p.plan ?? null }) as TeamRow | undefined) ?? null;
  if (team) bumpCacheEpoch(sql);
  return team;
}

export function teamMembershipInsert(sql: Sql, p: { userId: string; teamId: string; now: number }): void {
  sql(TeamMembershipInsert).run(p);
}

export function projectInsert(sql: Sql, p: { project: ProjectRow; secret: WebhookSecretRow }): void {
  sql(ProjectInsert).run(projectParams(p.project));
  sql(WebhookSecretInsert).run(p.secret);
  bumpCacheEpoch(sql);
}

/** Read and write in one transaction so two partial PATCHes of different fields both hold. */
export function projectUpdate(sql: Sql, p: { projectId: string; patch: ProjectPatch }): ProjectRow | null {
  const row = sql(ProjectGet).get(p.projectId);
  if (!row) return null;
  const updated: ProjectRow = { ...toProject(row), ...p.patch };
  sql(ProjectUpdate).run(projectParams(updated));
  bumpCacheEpoch(sql);
  return updated;
}

export function projectBackoff(sql: Sql, p: { projectId: string; until: number }): void {
  sql(ProjectBackoff).run(p);
}

export function webhookSecretRotate(sql: Sql, p: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): void {
  sql(WebhookSecretDeleteExpiring).run(p.projectId);
  sql(WebhookSecretExpireNewest).run({ projectId: p.projectId, expiresAt: p.now + p.overlapMs });
  sql(WebhookSecretInsert).run(p.secret);
  bumpCacheEpoch(sql);
}
