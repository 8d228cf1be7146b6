import { join } from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/api/build-app.js';
import { loadConfig } from '../../src/config.js';
import type { DeliveryEngine } from '../../src/engine/delivery-engine.js';
import { createDeliveryEngine, openRuntime, type Runtime } from '../../src/runtime.js';
import { buildServer } from '../../src/server.js';
import { ADMIN_TOKEN, testDatabase } from '../support/make-app.js';
import type { OffsetClock } from '../support/offset-clock.js';
import { makeTempDir } from '../support/temp-dir.js';

/** The instance's delivery slots (PUNCTUAL_DELIVERY_CONCURRENCY). */
export const GLOBAL_SLOTS = 4;

interface Instance {
  runtime: Runtime;
  app: App;
  engine: DeliveryEngine;
}

/**
 * The real service (app, store, delivery engine) on a fresh database, for the model-based test:
 * it can be killed, as a crash would (no drain, no release, its store closed under whatever was
 * being written), and started again on the same database.
 */
export class ModelService {
  private instance: Instance | null = null;

  private constructor(
    private readonly clock: OffsetClock,
    private readonly databaseUrl: string,
    private readonly cleanup: () => Promise<void>,
  ) {}

  static async open(clock: OffsetClock): Promise<ModelService> {
    const dir = makeTempDir('punctual-model-');
    const database = await testDatabase(join(dir.path, 'punctual.db'));
    const service = new ModelService(clock, database.url, async () => {
      await database.drop();
      dir.remove();
    });
    await service.start();
    return service;
  }

  private async start(): Promise<void> {
    const config = loadConfig({
      DATABASE_URL: this.databaseUrl,
      PUNCTUAL_ADMIN_TOKEN: ADMIN_TOKEN,
      PUNCTUAL_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
      PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true',
      // Few slots, so that a project's share of them (half) is below what its concurrency asks.
      PUNCTUAL_DELIVERY_CONCURRENCY: String(GLOBAL_SLOTS),
      LOG_LEVEL: 'silent',
    });
    const runtime = await openRuntime(config, this.clock, { generateAdminToken: false, onBackgroundError: () => {} });
    const app = await buildServer({ config, store: runtime.store, clock: this.clock, services: runtime.services, metrics: runtime.metrics, tracer: null, logger: false });
    await app.ready();
    // Jitter fixed at its middle, so that the model knows each retry's wait.
    const engine = createDeliveryEngine(runtime, app.log, () => 0.5);
    await engine.start();
    runtime.services.scheduleFiring.start();
    this.instance = { runtime, app, engine };
  }

  private get live(): Instance {
    if (!this.instance) throw new Error('the service is not running');
    return this.instance;
  }

  get store() {
    return this.live.runtime.store;
  }

  api(key: string, options: InjectOptions): Promise<LightMyRequestResponse> {
    return this.live.app.inject({ ...options, headers: { authorization: `Bearer ${key}`, ...options.headers } });
  }

  admin(options: InjectOptions): Promise<LightMyRequestResponse> {
    return this.live.app.inject({ ...options, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...options.headers } });
  }

  /** Attempts this instance has started and not yet had answered. */
  get attemptsInFlight(): number {
    return this.live.engine.attemptsInFlight;
  }

  /**
   * A dispatch under way, as JobCreation.create holds one between its reservation and its commit:
   * all the project's room reserved to create its jobs started. The returned function gives the
   * room back unused, as a dispatch that created none started does; null if there was none to take.
   */
  async reserveAsDispatch(projectId: string): Promise<(() => void) | null> {
    const { runtime, engine } = this.live;
    const project = await runtime.store.projectGet(projectId);
    if (!project) throw new Error(`no project ${projectId}`);
    const immediate = engine.immediateDelivery();
    const reservation = immediate.reserve(project, GLOBAL_SLOTS, GLOBAL_SLOTS);
    return reservation && (() => immediate.submit(reservation, []));
  }

  /** Time moved forward: the loops look at once instead of when their real-time timers say. */
  wake(): void {
    this.live.runtime.services.scheduleFiring.wake();
    this.live.engine.notifyDue(this.clock.now());
    void this.live.engine.rescuer.tick().catch(() => {});
    // The probes now due, as the probe loop's next pass (it sleeps up to 5 s of real time) would send them.
    void this.live.engine.probes.probeDue().catch(() => {});
  }

  /**
   * A crash: the engine stops claiming and renewing at once, with nothing released; the store and
   * the webhook thread close under whatever was in flight. Requests already sent may still reach
   * the receiver; nothing new starts (every start is a store write, refused from then on).
   */
  async kill(): Promise<void> {
    const { runtime, app, engine } = this.live;
    this.instance = null;
    engine.halt();
    void runtime.services.scheduleFiring.stop();
    await runtime.close().catch(() => {});
    await app.close().catch(() => {});
  }

  async restart(): Promise<void> {
    await this.start();
  }

  async close(): Promise<void> {
    if (this.instance) {
      const { runtime, app, engine } = this.instance;
      this.instance = null;
      await runtime.services.scheduleFiring.stop();
      await engine.stop(1_000);
      await app.close();
      await runtime.close();
    }
    await this.cleanup();
  }
}
