import { NotFoundError, UnauthorizedError } from '../../errors.js';
import type { ApiKeyRow, ProjectRow, Store, TeamRow, UserRow } from '../../store/store.js';
import type { Plan } from '../../plans.js';
import type { JobRequestContext } from '../jobs-service.js';

/**
 * Who is managing: the operator (admin token), or a dashboard user with their teams. An operator
 * user (users.is_operator) sees every team, as the admin token does.
 */
export type Viewer = { kind: 'admin' } | { kind: 'user'; user: UserRow; teamIds: ReadonlySet<string> | 'all' };

/**
 * Scoping for /manage/v1 and the dashboard. Another team's team, project, key or job answers
 * exactly as one that does not exist (404, same message), so ids leak nothing.
 */
export class AccessService {
  constructor(private readonly deps: { store: Store; planOf: (team: TeamRow) => Plan }) {}

  async viewerFor(user: UserRow): Promise<Viewer> {
    if (user.isOperator) return { kind: 'user', user, teamIds: 'all' };
    const teams = await this.deps.store.teamListByUser(user.id);
    return { kind: 'user', user, teamIds: new Set(teams.map((t) => t.id)) };
  }

  isOperator(viewer: Viewer): boolean {
    return viewer.kind === 'admin' || viewer.teamIds === 'all';
  }

  /** Creating teams and changing plans is the operator's: a plan is what a team pays for. */
  requireOperator(viewer: Viewer, what: string): void {
    if (!this.isOperator(viewer)) throw new UnauthorizedError(`${what} needs the admin token or an operator's session`);
  }

  canSeeTeam(viewer: Viewer, teamId: string): boolean {
    return viewer.kind === 'admin' || viewer.teamIds === 'all' || viewer.teamIds.has(teamId);
  }

  async visibleTeams(viewer: Viewer): Promise<TeamRow[]> {
    if (viewer.kind === 'user' && viewer.teamIds !== 'all') return this.deps.store.teamListByUser(viewer.user.id);
    return this.deps.store.teamList();
  }

  async requireTeam(viewer: Viewer, teamId: string): Promise<TeamRow> {
    const team = this.canSeeTeam(viewer, teamId) ? await this.deps.store.teamGet(teamId) : null;
    if (!team) throw new NotFoundError(`No team ${teamId}`);
    return team;
  }

  async requireProject(viewer: Viewer, projectId: string): Promise<ProjectRow> {
    const project = await this.deps.store.projectGet(projectId);
    if (!project || !this.canSeeTeam(viewer, project.teamId)) throw new NotFoundError(`No project ${projectId}`);
    return project;
  }

  async requireKey(viewer: Viewer, keyId: string): Promise<ApiKeyRow> {
    const key = await this.deps.store.apiKeyGet(keyId);
    const project = key ? await this.deps.store.projectGet(key.projectId) : null;
    if (!key || !project || !this.canSeeTeam(viewer, project.teamId)) throw new NotFoundError(`No key ${keyId}`);
    return key;
  }

  /** What the job service needs to act on a project's jobs, as an API key of that project would. */
  async jobContext(viewer: Viewer, projectId: string, receivedAt: number): Promise<JobRequestContext> {
    const project = await this.requireProject(viewer, projectId);
    const team = await this.requireTeam(viewer, project.teamId);
    return { project, team, plan: this.deps.planOf(team), receivedAt };
  }
}
