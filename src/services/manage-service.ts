import type { Clock } from '../clock.js';
import { generateApiKey } from '../crypto/api-keys.js';
import { newKeyId, newProjectId, newSecretId, newTeamId } from '../crypto/random-ids.js';
import { generateWebhookSecret, type SecretBox } from '../crypto/secret-box.js';
import { checkWebhookUrl } from '../delivery/address-guard.js';
import { InvalidRequestError, InvalidWebhookUrlError, NotFoundError } from '../errors.js';
import { DEFAULT_PLAN_NAME } from '../plans.js';
import type { ApiKeyRow, KeyLoad, ProjectRow, Store, TeamRow } from '../store/store.js';
import type { ProjectOverview } from '../store/overview-store.js';
import { formatNullableTimestamp, formatTimestamp, utcDay, utcMonth } from '../timestamp.js';
import { apiKeyView, eventView, healthView, overviewView, projectView, teamView } from './views/manage-views.js';
import { pageOf, readListLimit, readSeqCursor, singleValues } from './input/list-query.js';
import { followPause } from '../maintenance/project-holds.js';
import { healthOf, type ProjectHealth } from './project-health.js';
import type { PlansService } from './plans-service.js';
import { PROJECT_DEFAULTS, SECRET_ROTATION_OVERLAP_MS } from './project-settings.js';
import { KEY_FIELDS, readName, webhookUrlRule, readProjectPatch, requireObject, TEAM_FIELDS } from './input/validate-manage-input.js';

/** How many of a project's busiest keys its overview lists. */
const BUSIEST_KEYS = 10;

/** A project as the dashboard's list of a team's projects shows it. */
export interface ProjectSummary {
  project: ProjectRow;
  health: ProjectHealth;
  /** Attempts finished in the last 24 hours (the overview's window), and those that failed. */
  attempts: number;
  failedAttempts: number;
  hasJobs: boolean;
}

export class ManageService {
  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      plans: PlansService;
      secretBox: SecretBox;
      allowPrivateWebhooks: boolean;
      /** Jobs became due at this instant (a project resumed); the server's claim loop wakes. */
      onJobDue: (runAt: number) => void;
      /** The project's settings changed: this instance's delivery engine holds its jobs to them at once. */
      onProjectChanged: (project: ProjectRow) => void;
      /** A hold ended by turning holdOnFailure off: the project's waiting jobs go out. */
      releaseHold: (projectId: string) => Promise<void>;
    },
  ) {}

  private readPlan(body: Record<string, unknown>): string | undefined {
    if (!('plan' in body)) return undefined;
    const plan = body.plan;
    if (typeof plan !== 'string' || !this.deps.plans.has(plan)) {
      throw new InvalidRequestError(`plan must be one of ${this.deps.plans.names.join(', ')}`, { field: 'plan' });
    }
    return plan;
  }

  private async readWebhookUrl(value: unknown, field = 'webhookUrl'): Promise<string | null> {
    if (value === null) return null;
    if (typeof value !== 'string') throw new InvalidWebhookUrlError(webhookUrlRule(field), { field });
    const check = await checkWebhookUrl(value, this.deps.allowPrivateWebhooks);
    if (!check.ok) throw new InvalidWebhookUrlError(`${field} ${check.reason}`, { field });
    return check.url.href;
  }

  async requireTeam(teamId: string): Promise<TeamRow> {
    const team = await this.deps.store.teamGet(teamId);
    if (!team) throw new NotFoundError(`No team ${teamId}`);
    return team;
  }

  async requireProject(projectId: string): Promise<ProjectRow> {
    const project = await this.deps.store.projectGet(projectId);
    if (!project) throw new NotFoundError(`No project ${projectId}`);
    return project;
  }

  async createTeam(input: unknown) {
    const body = requireObject(input, TEAM_FIELDS, 'a team');
    const name = readName(body, true)!;
    const plan = this.readPlan(body) ?? DEFAULT_PLAN_NAME;
    const team: TeamRow = { id: newTeamId(), name, plan, createdAt: this.deps.clock.now() };
    await this.deps.store.teamInsert(team);
    return teamView(team);
  }

  async getTeam(teamId: string) {
    return teamView(await this.requireTeam(teamId));
  }

  async updateTeam(teamId: string, input: unknown) {
    const body = requireObject(input, TEAM_FIELDS, 'a team');
    const name = readName(body, false);
    const plan = this.readPlan(body);
    const team = await this.deps.store.teamUpdate({ teamId, ...(name !== undefined && { name }), ...(plan !== undefined && { plan }) });
    if (!team) throw new NotFoundError(`No team ${teamId}`);
    return teamView(team);
  }

  async listProjects(teamId: string) {
    await this.requireTeam(teamId);
    const projects = await this.deps.store.projectListByTeam(teamId);
    return { projects: await Promise.all(projects.map(async (project) => projectView(project, await this.health(project.id)))) };
  }

  private settingsReader(team: TeamRow) {
    return { maxRetriesCap: this.deps.plans.planOf(team).maxRetriesCap, readWebhookUrl: (value: unknown, field?: string) => this.readWebhookUrl(value, field) };
  }

  /**
   * Creates a project with its first webhook secret, returned once here and readable later. It
   * takes every setting an update takes (SPEC section 7); those not given have their defaults.
   */
  async createProject(teamId: string, input: unknown) {
    // The team first: its plan caps retryPolicy.maxRetries.
    const team = await this.requireTeam(teamId);
    const settings = await readProjectPatch(input, this.settingsReader(team));
    if (settings.name === undefined) throw new InvalidRequestError('name is required', { field: 'name' });
    const now = this.deps.clock.now();
    const project: ProjectRow = { ...PROJECT_DEFAULTS, webhookUrl: null, ...settings, name: settings.name, id: newProjectId(), teamId, createdAt: now };
    const webhookSecret = generateWebhookSecret();
    await this.deps.store.projectInsert({
      project,
      secret: { id: newSecretId(), projectId: project.id, ciphertext: this.deps.secretBox.seal(webhookSecret), createdAt: now, expiresAt: null },
    });
    return { ...projectView(project, healthOf({ run: null, hold: null })), webhookSecret };
  }

  async getProject(projectId: string) {
    const project = await this.requireProject(projectId);
    return projectView(project, await this.health(projectId));
  }

  async updateProject(projectId: string, input: unknown) {
    const project = await this.requireProject(projectId);
    const patch = await readProjectPatch(input, this.settingsReader(await this.requireTeam(project.teamId)));
    const updated = await this.deps.store.projectUpdate({ projectId, patch });
    if (!updated) throw new NotFoundError(`No project ${projectId}`);
    this.deps.onProjectChanged(updated);
    await followPause(this.deps.store, projectId, { wasPaused: project.paused, paused: updated.paused }, () => this.deps.onJobDue(this.deps.clock.now()));
    // holdOnFailure turned off ends a hold in the same update (the store's projectUpdate).
    if (project.holdOnFailure && !updated.holdOnFailure) await this.deps.releaseHold(projectId);
    // A higher keyConcurrency gives keys' held jobs their turn in the same update (0016's trigger):
    // they are due now, and the claim loop would otherwise sleep past them.
    if (updated.keyConcurrency > project.keyConcurrency) this.deps.onJobDue(this.deps.clock.now());
    return projectView(updated, await this.health(projectId));
  }

  async createKey(projectId: string, input: unknown) {
    const body = requireObject(input, KEY_FIELDS, 'a key');
    const name = readName(body, true)!;
    await this.requireProject(projectId);
    const { key, hash, prefix } = generateApiKey();
    const row: ApiKeyRow = { id: newKeyId(), projectId, name, prefix, createdAt: this.deps.clock.now(), lastUsedAt: null, revokedAt: null };
    await this.deps.store.apiKeyInsert({ ...row, hash });
    return { keyId: row.id, name, key, createdAt: formatTimestamp(row.createdAt) };
  }

  /** GET /manage/v1/projects/:projectId/events: newest first, cursor-paginated as the jobs list. */
  async listEvents(projectId: string, query: Record<string, unknown>) {
    await this.requireProject(projectId);
    const { limit: limitText, cursor } = singleValues(query, ['limit', 'cursor']);
    const limit = readListLimit(limitText);
    const rows = await this.deps.store.eventList({ projectId, beforeSeq: cursor === undefined ? null : readSeqCursor(cursor), limit: limit + 1 });
    const { page, nextCursor } = pageOf(rows, limit);
    return { events: page.map(eventView), nextCursor };
  }

  async listKeys(projectId: string) {
    await this.requireProject(projectId);
    return { keys: (await this.deps.store.apiKeyListByProject(projectId)).map(apiKeyView) };
  }

  async revokeKey(keyId: string) {
    const key = await this.deps.store.apiKeyRevoke({ keyId, now: this.deps.clock.now() });
    if (!key) throw new NotFoundError(`No key ${keyId}`);
    return { keyId: key.id, revokedAt: formatTimestamp(key.revokedAt!) };
  }

  /** The secrets that sign deliveries now, newest first, in clear: only for the operator or dashboard. */
  async listWebhookSecrets(projectId: string) {
    await this.requireProject(projectId);
    const rows = await this.deps.store.webhookSecretListActive({ projectId, now: this.deps.clock.now() });
    return {
      webhookSecrets: rows.map((row) => ({
        webhookSecret: this.deps.secretBox.open(row.ciphertext),
        createdAt: formatTimestamp(row.createdAt),
        expiresAt: formatNullableTimestamp(row.expiresAt),
      })),
    };
  }

  async rotateWebhookSecret(projectId: string) {
    await this.requireProject(projectId);
    const now = this.deps.clock.now();
    const webhookSecret = generateWebhookSecret();
    await this.deps.store.webhookSecretRotate({
      projectId,
      secret: { id: newSecretId(), projectId, ciphertext: this.deps.secretBox.seal(webhookSecret), createdAt: now, expiresAt: null },
      overlapMs: SECRET_ROTATION_OVERLAP_MS,
      now,
    });
    return { webhookSecret };
  }

  /** A project's overview (store/overview-store.ts) as of now: the dashboard's first tab. */
  async overview(projectId: string): Promise<ProjectOverview & { at: number }> {
    await this.requireProject(projectId);
    const at = this.deps.clock.now();
    return { at, ...(await this.deps.store.projectOverview({ projectId, now: at })) };
  }

  /** A project's busiest concurrency keys (SPEC section 15), at most BUSIEST_KEYS of them: the dashboard's overview. */
  async busiestKeys(projectId: string): Promise<KeyLoad[]> {
    return this.deps.store.jobBusiestKeys({ projectId, limit: BUSIEST_KEYS });
  }

  /** A project's delivery health as the API shows it (SPEC section 13). */
  async getHealth(projectId: string) {
    await this.requireProject(projectId);
    return healthView(await this.health(projectId));
  }

  /** A project's delivery health now (project-health.ts). */
  async health(projectId: string): Promise<ProjectHealth> {
    return healthOf(await this.deps.store.webhookHealthGet({ projectId }));
  }

  /**
   * The team's projects as the dashboard lists them, each with its delivery health and its
   * attempts of the last 24 hours (the overview's figures, with its job counts cut to "any?").
   */
  async projectSummaries(teamId: string): Promise<ProjectSummary[]> {
    await this.requireTeam(teamId);
    const now = this.deps.clock.now();
    const projects = await this.deps.store.projectListByTeam(teamId);
    return Promise.all(
      projects.map(async (project): Promise<ProjectSummary> => {
        const [overview, health] = await Promise.all([this.deps.store.projectOverview({ projectId: project.id, now, jobCountLimit: 0 }), this.health(project.id)]);
        return {
          project,
          health,
          attempts: overview.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0),
          failedAttempts: overview.deliveryMinutes.reduce((sum, m) => sum + m.failedAttempts, 0),
          hasJobs: Object.values(overview.jobsByStatus).some((n) => n > 0),
        };
      }),
    );
  }

  /** The same as the management API and the CLI show it: timestamps, and the windows. */
  async getOverview(projectId: string) {
    const [overview, health] = await Promise.all([this.overview(projectId), this.health(projectId)]);
    return overviewView(overview, health);
  }

  async usage(teamId: string) {
    const team = await this.requireTeam(teamId);
    const plan = this.deps.plans.planOf(team);
    const now = this.deps.clock.now();
    const month = utcMonth(now);
    const rows = await this.deps.store.usageDaily({ teamId, fromDay: utcDay(month.start), toDay: utcDay(month.end) });
    const byDay = new Map(rows.map((r) => [r.day, r.jobsCreated]));
    const daily: { date: string; jobsCreated: number }[] = [];
    for (let day = month.start; day <= now; day += 86_400_000) {
      const date = utcDay(day);
      daily.push({ date, jobsCreated: byDay.get(date) ?? 0 });
    }
    return {
      plan: team.plan,
      period: { start: formatTimestamp(month.start), end: formatTimestamp(month.end) },
      jobsCreated: rows.reduce((sum, r) => sum + r.jobsCreated, 0),
      quota: plan.jobsPerMonth,
      rateLimit: plan.requestsPerSecond === null ? null : { requestsPerSecond: plan.requestsPerSecond, burst: plan.burst },
      daily,
    };
  }
}
