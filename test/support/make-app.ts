import { join } from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import type { App } from '../../src/api/build-app.js';
import { TestClock, type Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { DeliveryEngine } from '../../src/engine/delivery-engine.js';
import type { Plans } from '../../src/plans.js';
import { createDeliveryEngine, openRuntime, type Runtime } from '../../src/runtime.js';
import { buildServer } from '../../src/server.js';
import type { Services } from '../../src/services/services.js';
import type { Store } from '../../src/store/store.js';
import { makeSchema, PG_TEST_URL } from './postgres.js';
import { makeTempDir } from './temp-dir.js';

/** Which store the API and delivery suites run on: vitest's "postgres" project sets PUNCTUAL_TEST_STORE. */
export const TEST_STORE = process.env.PUNCTUAL_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';

/**
 * A fresh database for one app: a SQLite file, or a PostgreSQL schema chosen through the URL
 * (so a spawned `punctual serve` given the same DATABASE_URL uses it too).
 */
export async function testDatabase(sqlitePath: string): Promise<{ url: string; drop: () => Promise<void> }> {
  if (TEST_STORE === 'sqlite') return { url: `sqlite:${sqlitePath}`, drop: async () => {} };
  const schema = await makeSchema();
  const separator = PG_TEST_URL.includes('?') ? '&' : '?';
  return { url: `${PG_TEST_URL}${separator}options=${encodeURIComponent(`-c search_path=${schema.name}`)}`, drop: schema.drop };
}

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface TestProject {
  teamId: string;
  projectId: string;
  key: string;
  webhookSecret: string;
}

export interface TestApp<C extends Clock = TestClock> {
  app: App;
  runtime: Runtime;
  store: Store;
  clock: C;
  services: Services;
  dbPath: string;
  /** The DATABASE_URL this app runs on (sqlite: or postgres:). */
  databaseUrl: string;
  /** Present when made with { delivery: true }: started, and stopped by close(). */
  engine: DeliveryEngine | null;
  /** A team on `plan` with a project (webhook set) and a key. */
  makeProject(options?: { plan?: string; webhookUrl?: string | null; settings?: Record<string, unknown> }): Promise<TestProject>;
  /** app.inject with the given API key as bearer. */
  api(key: string, options: InjectOptions): Promise<LightMyRequestResponse>;
  admin(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  plans?: Plans;
  allowPrivateWebhooks?: boolean;
  /** A TestClock by default; pass the system clock for real-time delivery tests. */
  clock?: Clock;
  now?: number;
  delivery?: boolean;
  random?: () => number;
  env?: Record<string, string>;
  /** The folder that holds the SQLite file (a small tmpfs, say); a fresh temp folder by default. */
  sqliteDir?: string;
  /** Rewrites the database URL the app connects to (a proxy in between, say); setup still uses the real one. */
  rewriteDatabaseUrl?: (url: string) => string;
}

/** The real app, assembled as the server assembles it, on a real SQLite file in a temp folder. */
export async function makeTestApp(options?: TestAppOptions & { clock?: undefined }): Promise<TestApp>;
export async function makeTestApp(options: TestAppOptions & { clock: Clock }): Promise<TestApp<Clock>>;
export async function makeTestApp(options: TestAppOptions = {}): Promise<TestApp<Clock>> {
  const dir = options.sqliteDir ? { path: options.sqliteDir, remove: () => {} } : makeTempDir();
  const dbPath = join(dir.path, 'punctual.db');
  const database = await testDatabase(dbPath);
  const config = loadConfig({
    DATABASE_URL: options.rewriteDatabaseUrl ? options.rewriteDatabaseUrl(database.url) : database.url,
    PUNCTUAL_ADMIN_TOKEN: ADMIN_TOKEN,
    PUNCTUAL_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789',
    PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: String(options.allowPrivateWebhooks ?? true),
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  if (options.plans) config.plans = options.plans;
  const clock = options.clock ?? new TestClock(options.now);
  const runtime = await openRuntime(config, clock, {
    generateAdminToken: false,
    onBackgroundError: (error) => {
      throw error;
    },
  });
  const { store, services } = runtime;
  const app = await buildServer({ config, store, clock, services, metrics: runtime.metrics, tracer: runtime.tracer, logger: false });
  await app.ready();
  let engine: DeliveryEngine | null = null;
  if (options.delivery) {
    engine = createDeliveryEngine(runtime, app.log, options.random);
    await engine.start();
  }
  return {
    app,
    runtime,
    store,
    clock,
    services,
    dbPath,
    databaseUrl: database.url,
    engine,
    async makeProject({ plan = 'unlimited', webhookUrl = 'http://127.0.0.1:9/hook', settings } = {}) {
      const team = await services.manage.createTeam({ name: 'team', plan });
      const project = await services.manage.createProject(team.teamId, { name: 'project', webhookUrl });
      if (settings) await services.manage.updateProject(project.projectId, settings);
      const key = await services.manage.createKey(project.projectId, { name: 'key' });
      return { teamId: team.teamId, projectId: project.projectId, key: key.key, webhookSecret: project.webhookSecret };
    },
    api(key, injectOptions) {
      return app.inject({ ...injectOptions, headers: { authorization: `Bearer ${key}`, ...injectOptions.headers } });
    },
    admin(injectOptions) {
      return app.inject({ ...injectOptions, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...injectOptions.headers } });
    },
    async close() {
      if (engine) await engine.stop(5_000);
      await app.close();
      await runtime.close();
      await database.drop();
      dir.remove();
    },
  };
}

/** Minutes/days as milliseconds, for readable clock arithmetic. */
export const SECOND = 1000;
export const DAY = 86_400_000;
