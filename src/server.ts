import { buildApp, type App, type AppDeps } from './api/build-app.js';
import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { dashboardRoutes } from './dashboard/dashboard-plugin.js';
import { developmentConveniencesNotice } from './development-conveniences.js';
import { createDeliveryEngine, openRuntime } from './runtime.js';
import { bootstrapFirstStart, createFirstUser, firstStartMessage, firstUserMessage } from './services/bootstrap.js';
import type { Store } from './store/store.js';

/**
 * SIGTERM must end the process within 30 s: in-flight deliveries get PUNCTUAL_SHUTDOWN_DRAIN_MS
 * (20 s) to finish, the rest are aborted and released (3 s to record that), and past this the
 * process exits anyway (what is still leased is rescued by the next start or another instance).
 */
const EXIT_DEADLINE_MS = 28_000;

/** Instances agree on due times through the database: a drifting clock makes one early or late. */
const CLOCK_SKEW_WARN_MS = 1_000;

async function warnOnClockSkew(store: Store, clock: Clock, log: FastifyBaseLogger): Promise<void> {
  if (!store.databaseNow) return;
  const before = clock.now();
  const database = await store.databaseNow();
  const skew = database - (before + clock.now()) / 2;
  if (Math.abs(skew) > CLOCK_SKEW_WARN_MS) {
    log.warn({ skewMs: Math.round(skew) }, "this machine's clock differs from the database server's by more than a second: keep clocks in sync (NTP)");
  }
}

/** The HTTP app `serve` runs: the API (api/) and, on the same port, the dashboard (dashboard/). */
export async function buildServer(deps: AppDeps): Promise<App> {
  const app = await buildApp(deps);
  await app.register(dashboardRoutes, { services: deps.services, clock: deps.clock, publicUrl: deps.config.publicUrl });
  return app;
}

export async function serve(config: Config): Promise<void> {
  const clock = systemClock;
  let log: Pick<FastifyBaseLogger, 'error' | 'warn' | 'info'> = console as unknown as Pick<FastifyBaseLogger, 'error' | 'warn' | 'info'>;
  const runtime = await openRuntime(config, clock, {
    generateAdminToken: true,
    serve: true,
    onBackgroundError: (error) => log.error({ err: error }, 'background write failed'),
    onRateLimitWarning: (error) =>
      log.warn({ err: error }, 'Redis did not answer a rate-limit check: limiting per instance until it does'),
    onListenerState: (state, error) =>
      state === 'lost'
        ? log.warn({ err: error }, 'lost the PostgreSQL LISTEN connection: caches off and wake-ups from other instances paused until it is back')
        : log.info('PostgreSQL LISTEN connection up'),
  });
  const app = await buildServer({ config, store: runtime.store, clock, services: runtime.services, metrics: runtime.metrics, tracer: runtime.tracer });
  log = app.log;
  const engine = createDeliveryEngine(runtime, app.log);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: no new requests or claims; finishing deliveries in flight');
    const deadline = setTimeout(() => {
      app.log.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, EXIT_DEADLINE_MS);
    deadline.unref();
    try {
      app.startDraining();
      await runtime.services.retention.stop();
      await runtime.services.scheduleFiring.stop();
      const { drained, released } = await engine.stop(config.shutdownDrainMs);
      app.log.info({ drained, released }, 'delivery stopped');
      await app.close();
      // Closing the store also lets go of its serve lock (SQLite).
      await runtime.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  await warnOnClockSkew(runtime.store, clock, app.log);
  await app.listen({ host: config.host, port: config.port });
  const conveniences = developmentConveniencesNotice(config);
  if (conveniences) app.log[conveniences.level]({ ...conveniences.fields, host: config.host }, conveniences.message);
  await engine.start();
  runtime.services.retention.start();
  runtime.services.scheduleFiring.start();

  // Its URL is a loopback one by default, which only private webhooks may reach.
  const devReceiverUrl = config.devReceiver && config.allowPrivateWebhooks ? `${config.publicUrl}/dev/receiver` : null;
  const firstUser = { users: runtime.services.users, email: config.adminEmail };
  const first = await bootstrapFirstStart(runtime.store, runtime.services.manage, { now: clock.now(), devReceiverUrl, firstUser });
  if (first) {
    // Printed to stdout once, deliberately outside the logger: these values never go to logs.
    console.log(firstStartMessage(first, { publicUrl: config.publicUrl, adminToken: runtime.generatedAdminToken }));
  } else {
    if (runtime.generatedAdminToken) console.log(`Admin token (shown once, for the /manage/v1 API): ${runtime.generatedAdminToken}`);
    const upgraded = await createFirstUser(runtime.store, runtime.services.users, { email: config.adminEmail, teamIds: [] });
    if (upgraded) console.log(firstUserMessage(upgraded, config.publicUrl));
  }
}
