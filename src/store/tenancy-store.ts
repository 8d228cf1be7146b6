/**
 * The storage contract of tenancy, part of Store (store.ts): settings, teams and their members,
 * projects with their settings and signing secrets, and each team's daily usage. A project's
 * webhook secrets live here, not with authentication, because a project is created with its first.
 */
import { methodList } from './forward-methods.js';

export interface TeamRow {
  id: string;
  name: string;
  plan: string;
  createdAt: number;
}

interface ProjectSettings {
  name: string;
  webhookUrl: string | null;
  /** The project's default retry count; null means "the plan's cap". */
  retryMaxRetries: number | null;
  retryInitialDelayMs: number;
  retryFactor: number;
  retryMaxDelayMs: number;
  deliveryTimeoutMs: number;
  deliveryConcurrency: number;
  acceptAny2xx: boolean;
  /** Days a final job is kept (SPEC section 12); null means "the server's default" (PUNCTUAL_RETENTION_DAYS). */
  retentionDays: number | null;
  /** Nothing is delivered while true (SPEC section 10); jobs wait QUEUED. */
  paused: boolean;
  /** Where events are POSTed (SPEC section 10); null: none are recorded. */
  eventsUrl: string | null;
  eventsFormat: EventsFormat;
  /** At most this many attempts start per second (SPEC section 11); null, no limit. */
  deliveryRatePerSecond: number | null;
  /** A 202 means "accepted, working on it" (SPEC section 11): the attempt waits for the receiver's report. */
  asyncCompletion: boolean;
  /** How long an accepted attempt waits for its report (and a "running" report extends it by). */
  asyncCompletionTimeoutMs: number;
  /** Attempts of one concurrencyKey's jobs at once (SPEC section 15); at 1, a key's jobs run in strict order. */
  keyConcurrency: number;
  /** A project that turns failing is held (SPEC section 13): nothing starts until a probe succeeds. */
  holdOnFailure: boolean;
  /** The event types sent to the eventsUrl (SPEC section 13); null: the default set (every type but job.completed). */
  eventTypes: string[] | null;
  /** HTTP statuses that end a job at once (retryPolicy.stopOn, SPEC section 13). */
  retryStopOn: number[];
}

export const EVENTS_FORMATS = ['json', 'slack'] as const;
export type EventsFormat = (typeof EVENTS_FORMATS)[number];

export interface ProjectRow extends ProjectSettings {
  id: string;
  teamId: string;
  createdAt: number;
}

export type ProjectPatch = Partial<ProjectSettings>;

export interface WebhookSecretRow {
  id: string;
  projectId: string;
  /** Sealed by crypto/secret-box.ts; the store never sees a secret in clear. */
  ciphertext: string;
  createdAt: number;
  /** null for the newest secret; set when a rotation replaced it. */
  expiresAt: number | null;
}

export interface TenancyStore {
  settingGet(key: string): Promise<string | null>;
  /** Stores value unless the key exists; returns whichever value is stored. */
  settingInsertIfAbsent(key: string, value: string): Promise<string>;
  teamInsert(team: TeamRow): Promise<void>;
  teamGet(teamId: string): Promise<TeamRow | null>;
  teamUpdate(params: { teamId: string; name?: string; plan?: string }): Promise<TeamRow | null>;
  teamCount(): Promise<number>;
  /** Every team, oldest first (the operator's view). */
  teamList(): Promise<TeamRow[]>;
  /** The teams a user belongs to, oldest first. */
  teamListByUser(userId: string): Promise<TeamRow[]>;
  /** Adds a membership; adding one that exists changes nothing. */
  teamMembershipInsert(params: { userId: string; teamId: string; now: number }): Promise<void>;
  projectInsert(params: { project: ProjectRow; secret: WebhookSecretRow }): Promise<void>;
  projectGet(projectId: string): Promise<ProjectRow | null>;
  projectGetMany(projectIds: string[]): Promise<ProjectRow[]>;
  projectListByTeam(teamId: string): Promise<ProjectRow[]>;
  projectUpdate(params: { projectId: string; patch: ProjectPatch }): Promise<ProjectRow | null>;
  /**
   * A receiver answered 429/503 with Retry-After (SPEC section 11): the project's deliveries wait
   * until `until` on every instance (claims step over it, starts give its jobs back); a later hold wins.
   */
  projectBackoff(params: { projectId: string; until: number; now: number }): Promise<void>;
  /** Projects not paused that still hold jobs (a resume cut short by a crash). */
  projectListWithHeldJobs(): Promise<string[]>;
  /** Secrets still signing at `now`, newest first. */
  webhookSecretListActive(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]>;
  /** Adds `secret` as newest; the previous newest expires at now + overlapMs; older ones are dropped. */
  webhookSecretRotate(params: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): Promise<void>;
  /** Jobs created per UTC day in [fromDay, toDay), days as YYYY-MM-DD. */
  usageDaily(params: { teamId: string; fromDay: string; toDay: string }): Promise<{ day: string; jobsCreated: number }[]>;
}

/** TenancyStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const TENANCY_STORE_METHODS = methodList<TenancyStore>()(['settingGet', 'settingInsertIfAbsent', 'teamInsert', 'teamGet', 'teamUpdate', 'teamCount', 'teamList', 'teamListByUser', 'teamMembershipInsert', 'projectInsert', 'projectGet', 'projectGetMany', 'projectListByTeam', 'projectUpdate', 'projectBackoff', 'projectListWithHeldJobs', 'webhookSecretListActive', 'webhookSecretRotate', 'usageDaily'] as const);
