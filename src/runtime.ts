import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.js';
import { ConfigError, type Config } from './config.js';
import { SecretBox } from './crypto/secret-box.js';
import { CallbackTokens } from './crypto/callback-tokens.js';
import { loadOrCreateSecretKey } from './crypto/secret-key-file.js';
import { DeliveryEngine } from './engine/delivery-engine.js';
import { ThreadedWebhookSender } from './delivery/threaded-webhook-sender.js';
import type { WebhookSender } from './delivery/webhook-client.js';
import { RedisRateLimiter } from './rate-limits/redis-rate-limiter.js';
import { MemoryRateLimiter, type RateLimiter } from './rate-limits/token-bucket.js';
import { Metrics } from './metrics.js';
import { effectiveMaxRetries } from './plans.js';
import { resolveAdminToken } from './services/bootstrap.js';
import type { ImmediateDelivery } from './services/immediate-delivery.js';
import { createServices, type Services } from './services/services.js';
import { openStore } from './store/open-store.js';
import type { ProjectRow, Store } from './store/store.js';
import { loadTracer } from './tracing/load-tracer.js';
import type { Tracer } from './tracing/tracer.js';
import { USER_AGENT, VERSION } from './version.js';

export interface Runtime {
  config: Config;
  clock: Clock;
  store: Store;
  services: Services;
  metrics: Metrics;
  webhookClient: WebhookSender;
  /** The token buckets of request rate limits and of projects' delivery rates. */
  rateLimiter: RateLimiter;
  /** Async completion's per-attempt tokens (SPEC section 11), keyed by PUNCTUAL_SECRET_KEY like the sealed secrets. */
  callbackTokens: CallbackTokens;
  /** Span export (OTEL_EXPORTER_OTLP_ENDPOINT); null when off, and then the SDK is never loaded. */
  tracer: Tracer | null;
  /** Set when this start generated the admin token (shown once). */
  generatedAdminToken: string | null;
  /** Where the job service reports due jobs; the delivery engine subscribes (the CLI has none). */
  setJobDueListener(listener: (runAt: number) => void): void;
  /** Where the services report a project's changed settings; the delivery engine subscribes. */
  setProjectChangeListener(listener: (project: ProjectRow) => void): void;
  /** The delivery engine that takes jobs due at once without a claim (the CLI has none). */
  setImmediateDelivery(delivery: ImmediateDelivery): void;
  close(): Promise<void>;
}

const SECRET_KEY_CHECK_SETTING = 'secret_key_check';
const SECRET_KEY_CHECK_TEXT = 'punctual secret key check';

/**
 * A value sealed with the key on first start and opened at every start: a PUNCTUAL_SECRET_KEY that
 * differs from the one the webhook secrets were sealed with stops the start, instead of every
 * delivery failing later.
 */
async function checkSecretKey(store: Store, secretKey: string): Promise<void> {
  const box = new SecretBox(secretKey);
  const sealed = await store.settingInsertIfAbsent(SECRET_KEY_CHECK_SETTING, box.seal(SECRET_KEY_CHECK_TEXT));
  let opened: string | null = null;
  try {
    opened = box.open(sealed);
  } catch {
    // a different key: authentication of the ciphertext fails
  }
  if (opened !== SECRET_KEY_CHECK_TEXT) {
    throw new ConfigError('PUNCTUAL_SECRET_KEY is not the key this database\'s webhook secrets were encrypted with (every instance needs the same key)');
  }
}

/** Opens the store (migrated) and builds the service layer from configuration: shared by `serve`, the CLI and tests. */
export async function openRuntime(
  config: Config,
  clock: Clock,
  options: {
    generateAdminToken: boolean;
    /** `punctual serve`: the store takes whatever lock keeps a second server off its database. */
    serve?: boolean;
    onBackgroundError: (error: unknown) => void;
    /** Redis did not answer a rate-limit check (at most one call every 10 s). */
    onRateLimitWarning?: (error: unknown) => void;
    /** PostgreSQL: the LISTEN connection (wake-ups, cache invalidation) was lost or is back. */
    onListenerState?: (state: 'connected' | 'lost', error?: unknown) => void;
  },
): Promise<Runtime> {
  const store = await openStore(config.database, { serve: options.serve, onListenerState: options.onListenerState });
  try {
    const secretKey = config.secretKey ?? (store.secretKeyFile ? loadOrCreateSecretKey(store.secretKeyFile) : null);
    if (!secretKey) throw new Error('PUNCTUAL_SECRET_KEY is required');
    await checkSecretKey(store, secretKey);
    const admin = await resolveAdminToken(store, config.adminToken, options.generateAdminToken);
    const metrics = new Metrics(store);
    const webhookClient = new ThreadedWebhookSender({ allowPrivate: config.allowPrivateWebhooks, userAgent: USER_AGENT });
    const rateLimiter: RateLimiter = config.redisUrl
      ? new RedisRateLimiter(config.redisUrl, {
          onError: (error, warn) => {
            metrics.rateLimitStoreErrors.inc();
            if (warn) options.onRateLimitWarning?.(error);
          },
          onRoundTrip: () => metrics.rateLimitStoreCalls.inc(),
        })
      : new MemoryRateLimiter();
    if (rateLimiter instanceof RedisRateLimiter && !(await rateLimiter.ready())) {
      options.onRateLimitWarning?.(new Error(`Redis at REDIS_URL did not answer at start; limiting per instance until it does`));
    }
    const callbackTokens = new CallbackTokens(secretKey);
    const tracer = await loadTracer({ enabled: config.otlpTracing, protocol: config.otlpProtocol, serviceVersion: VERSION });
    let jobDue: (runAt: number) => void = () => {};
    let projectChanged: (project: ProjectRow) => void = () => {};
    let immediate: ImmediateDelivery | null = null;
    const services = createServices({
      store,
      clock,
      metrics,
      webhookClient,
      rateLimiter,
      callbackTokens,
      tracer,
      onJobDue: (runAt) => jobDue(runAt),
      onProjectChanged: (project) => projectChanged(project),
      immediateDelivery: () => immediate,
      plans: config.plans,
      secretKey,
      adminTokenHash: admin.hash,
      allowPrivateWebhooks: config.allowPrivateWebhooks,
      onBackgroundError: options.onBackgroundError,
      defaultRetentionDays: config.retentionDays,
    });
    return {
      config,
      clock,
      store,
      services,
      metrics,
      webhookClient,
      rateLimiter,
      callbackTokens,
      tracer,
      generatedAdminToken: admin.generated,
      setJobDueListener: (listener) => {
        jobDue = listener;
      },
      setProjectChangeListener: (listener) => {
        projectChanged = listener;
      },
      setImmediateDelivery: (delivery) => {
        immediate = delivery;
      },
      async close() {
        // By now the server stopped taking requests and the engine drained: every span has ended,
        // and this exports what the batch still holds.
        await tracer?.shutdown();
        await rateLimiter.close();
        await webhookClient.close();
        await store.close();
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** The delivery engine of a runtime, subscribed to its due jobs. Started by the caller. */
export function createDeliveryEngine(runtime: Runtime, log: FastifyBaseLogger, random?: () => number): DeliveryEngine {
  const engine = new DeliveryEngine({
    store: runtime.store,
    clock: runtime.clock,
    metrics: runtime.metrics,
    log,
    client: runtime.webhookClient,
    signingSecrets: (projectId) => runtime.services.signingSecrets.forProject(projectId),
    maxRetriesFor: async (project) => {
      const team = await runtime.store.teamGet(project.teamId);
      return team ? effectiveMaxRetries(null, project.retryMaxRetries, runtime.services.plans.planOf(team)) : 0;
    },
    globalConcurrency: runtime.config.deliveryConcurrency,
    rateLimiter: runtime.rateLimiter,
    callbackTokens: runtime.callbackTokens,
    tracer: runtime.tracer,
    takeOverLeasesAtStart: runtime.store.soleInstance,
    ...(random && { random }),
  });
  runtime.setJobDueListener((runAt) => engine.notifyDue(runAt));
  runtime.setProjectChangeListener((project) => engine.projectChanged(project));
  runtime.setImmediateDelivery(engine.immediateDelivery());
  return engine;
}
