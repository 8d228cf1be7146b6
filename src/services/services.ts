import type { Clock } from '../clock.js';
import { SecretBox } from '../crypto/secret-box.js';
import type { CallbackTokens } from '../crypto/callback-tokens.js';
import type { Plans } from '../plans.js';
import type { WebhookSender } from '../delivery/webhook-client.js';
import type { Metrics } from '../metrics.js';
import type { ProjectRow, Store } from '../store/store.js';
import { AuthService } from './auth/auth-service.js';
import type { ImmediateDelivery } from './immediate-delivery.js';
import { JobBulkActions } from './job-bulk-actions.js';
import { JobCreation } from './job-creation.js';
import { JobsService } from './jobs-service.js';
import { AttemptReports } from './attempt-reports.js';
import { ManageService } from './manage-service.js';
import { PlansService } from './plans-service.js';
import { RateLimitService } from './rate-limit-service.js';
import { AccessService } from './auth/access-service.js';
import { LoginThrottle } from './auth/login-throttle.js';
import { SessionService } from './auth/session-service.js';
import { UserService } from './auth/user-service.js';
import { RetentionPruner } from '../maintenance/retention-pruner.js';
import { ScheduleFiring } from '../maintenance/schedule-firing.js';
import { SchedulesService } from './schedules-service.js';
import { SigningSecrets } from './signing-secrets.js';
import { TestDeliveries } from './test-deliveries.js';
import type { RateLimiter } from '../rate-limits/token-bucket.js';
import type { Tracer } from '../tracing/tracer.js';

/** The service layer: the HTTP API, the CLI and the dashboard all go through these. */
export interface Services {
  /** Enqueues, batches and a schedule's fires. */
  jobCreation: JobCreation;
  jobs: JobsService;
  /** Cancel, reschedule or retry every job of a filter (SPEC section 14), and bulk replay. */
  bulk: JobBulkActions;
  /** Async completion's reports on accepted attempts (SPEC section 11). */
  reports: AttemptReports;
  rateLimits: RateLimitService;
  manage: ManageService;
  /** A team's plan (PUNCTUAL_PLANS), as every request, the dashboard and the delivery engine look it up. */
  plans: PlansService;
  /** The secrets that sign deliveries now, in clear: given to the delivery engine. */
  signingSecrets: SigningSecrets;
  testDeliveries: TestDeliveries;
  auth: AuthService;
  access: AccessService;
  users: UserService;
  sessions: SessionService;
  /** Started by the server (`punctual serve`); the CLI's `prune` runs a pass of its own. */
  retention: RetentionPruner;
  schedules: SchedulesService;
  /** Started by the server (`punctual serve`). */
  scheduleFiring: ScheduleFiring;
}

interface ServiceDeps {
  store: Store;
  rateLimiter: RateLimiter;
  callbackTokens: CallbackTokens;
  metrics: Metrics;
  webhookClient: WebhookSender;
  /** Span export, when on (a job created already claimed gets its claim span here). */
  tracer: Tracer | null;
  /** Set by the server once its delivery engine exists; the CLI has none. */
  onJobDue: (runAt: number) => void;
  /** Set by the server once its delivery engine exists: a project's settings changed. */
  onProjectChanged: (project: ProjectRow) => void;
  immediateDelivery: () => ImmediateDelivery | null;
  clock: Clock;
  plans: Plans;
  secretKey: string;
  adminTokenHash: Buffer;
  allowPrivateWebhooks: boolean;
  onBackgroundError: (error: unknown) => void;
  defaultRetentionDays: number;
}

export function createServices(deps: ServiceDeps): Services {
  const plans = new PlansService(deps.plans);
  const secretBox = new SecretBox(deps.secretKey);
  const signingSecrets = new SigningSecrets({ store: deps.store, clock: deps.clock, secretBox });
  const testDeliveries = new TestDeliveries({
    store: deps.store,
    clock: deps.clock,
    webhookClient: deps.webhookClient,
    signingSecrets,
    onJobDue: (runAt) => deps.onJobDue(runAt),
    onError: deps.onBackgroundError,
  });
  const manage = new ManageService({
    store: deps.store,
    clock: deps.clock,
    plans,
    secretBox,
    allowPrivateWebhooks: deps.allowPrivateWebhooks,
    onJobDue: (runAt) => deps.onJobDue(runAt),
    onProjectChanged: (project) => deps.onProjectChanged(project),
    releaseHold: (projectId) => testDeliveries.probes.release(projectId),
  });
  const jobCreation = new JobCreation({
    store: deps.store,
    clock: deps.clock,
    metrics: deps.metrics,
    tracer: deps.tracer,
    onJobDue: (runAt) => deps.onJobDue(runAt),
    immediateDelivery: deps.immediateDelivery,
  });
  const jobs = new JobsService({ store: deps.store, clock: deps.clock, metrics: deps.metrics, onJobDue: (runAt) => deps.onJobDue(runAt) });
  let firing: ScheduleFiring | null = null;
  const schedules = new SchedulesService({
    store: deps.store,
    clock: deps.clock,
    jobCreation,
    planOf: (team) => plans.planOf(team),
    onScheduleChanged: () => firing?.wake(),
  });
  firing = new ScheduleFiring({ store: deps.store, clock: deps.clock, schedules, onError: deps.onBackgroundError });
  return {
    manage,
    plans,
    signingSecrets,
    testDeliveries,
    schedules,
    scheduleFiring: firing,
    access: new AccessService({ store: deps.store, planOf: (team) => plans.planOf(team) }),
    users: new UserService({ store: deps.store, clock: deps.clock, throttle: new LoginThrottle(deps.clock) }),
    sessions: new SessionService({ store: deps.store, clock: deps.clock }),
    rateLimits: new RateLimitService({ limiter: deps.rateLimiter, metrics: deps.metrics }),
    jobCreation,
    jobs,
    bulk: new JobBulkActions({ store: deps.store, clock: deps.clock, metrics: deps.metrics, onJobDue: (runAt) => deps.onJobDue(runAt) }),
    reports: new AttemptReports({
      store: deps.store,
      clock: deps.clock,
      metrics: deps.metrics,
      tokens: deps.callbackTokens,
      onJobDue: (runAt) => deps.onJobDue(runAt),
    }),
    retention: new RetentionPruner({
      store: deps.store,
      clock: deps.clock,
      metrics: deps.metrics,
      defaultRetentionDays: deps.defaultRetentionDays,
      onError: deps.onBackgroundError,
    }),
    auth: new AuthService({
      store: deps.store,
      clock: deps.clock,
      planOf: (team) => plans.planOf(team),
      adminTokenHash: deps.adminTokenHash,
      onBackgroundError: deps.onBackgroundError,
    }),
  };
}
