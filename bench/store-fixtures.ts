/**
 * What the benchmarks that drive a store directly (bench/keys.ts, bench/pause-claims.ts) share: a
 * fresh database for one measurement, and a project to put jobs in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_DEFAULTS } from '../src/services/project-settings.js';
import type { Store } from '../src/store/store.js';
import { createSchema, postgresUrlFromEnv } from './pg-bench.js';

/**
 * Runs `fn` on the URL of a fresh database, removed afterwards: a schema of DATABASE_URL's
 * PostgreSQL when it is set, else a SQLite file in a temporary directory named after `name`.
 */
export async function withFreshDatabase<T>(name: string, fn: (url: string) => Promise<T>): Promise<T> {
  const postgres = postgresUrlFromEnv();
  if (postgres) {
    const schema = await createSchema(postgres);
    try {
      return await fn(schema.url);
    } finally {
      await schema.drop();
    }
  }
  const dir = mkdtempSync(join(tmpdir(), `punctual-${name}-`));
  try {
    return await fn(`sqlite:${join(dir, 'punctual.db')}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A team and its project `id` with the default settings, its webhook a closed port (nothing is delivered). */
export async function insertProject(store: Store, id: string, at: number) {
  await store.teamInsert({ id: `team_${id}`, name: 't', plan: 'unlimited', createdAt: at });
  const row = { id, teamId: `team_${id}`, name: id, webhookUrl: 'http://127.0.0.1:1/', ...PROJECT_DEFAULTS, createdAt: at };
  await store.projectInsert({ project: row, secret: { id: `whs_${id}`, projectId: id, ciphertext: 'x', createdAt: at, expiresAt: null } });
  return row;
}
