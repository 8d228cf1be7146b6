import { join } from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type App } from '../../src/api/build-app.js';
import { TestClock } from '../../src/clock.js';
import { DEFAULT_PLANS, type Plans } from '../../src/plans.js';
import { sha256 } from '../../src/services/auth-service.js';
import { createServices, type Services } from '../../src/services/services.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { makeTempDir } from './temp-dir.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface TestProject {
  teamId: string;
  projectId: string;
  key: string;
  webhookSecret: string;
}

export interface TestApp {
  app: App;
  store: SqliteStore;
  clock: TestClock;
  services: Services;
  dbPath: string;
  /** A team on `plan` with a project (webhook set) and a key. */
  makeProject(options?: { plan?: string; webhookUrl?: string | null }): Promise<TestProject>;
  /** app.inject with the given API key as bearer. */
  api(key: string, options: InjectOptions): Promise<LightMyRequestResponse>;
  admin(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The real app on a real SQLite file in a temp folder, with an injected clock. */
export async function makeTestApp(options: { plans?: Plans; allowPrivateWebhooks?: boolean; now?: number } = {}): Promise<TestApp> {
  const dir = makeTempDir();
  const dbPath = join(dir.path, 'punctual.db');
  const store = new SqliteStore({ path: dbPath });
  await store.migrate();
  const clock = new TestClock(options.now);
  const services = createServices({
    store,
    clock,
    plans: options.plans ?? DEFAULT_PLANS,
    secretKey: 'test-secret-key-0123456789abcdef0123456789',
    adminTokenHash: sha256(ADMIN_TOKEN),
    allowPrivateWebhooks: options.allowPrivateWebhooks ?? true,
    onBackgroundError: (error) => {
      throw error;
    },
  });
  const app = await buildApp({
    config: { production: false, logLevel: 'silent', publicUrl: 'http://localhost' },
    store,
    clock,
    services,
    logger: false,
  });
  await app.ready();
  return {
    app,
    store,
    clock,
    services,
    dbPath,
    async makeProject({ plan = 'unlimited', webhookUrl = 'http://127.0.0.1:9/hook' } = {}) {
      const team = await services.manage.createTeam({ name: 'team', plan });
      const project = await services.manage.createProject(team.teamId, { name: 'project', webhookUrl });
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
      await app.close();
      await store.close();
      dir.remove();
    },
  };
}

/** Minutes/days as milliseconds, for readable clock arithmetic. */
export const SECOND = 1000;
export const DAY = 86_400_000;
