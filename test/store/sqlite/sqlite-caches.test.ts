import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * The embedded store caches principals, projects and active secrets. A server and the CLI are two
 * connections to one file: what the CLI commits must be seen by the server from its next turn.
 */
describe('sqlite store caches across connections', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  let dir: ReturnType<typeof makeTempDir>;
  let server: SqliteStore;
  let cli: SqliteStore;
  const project: ProjectRow = { id: 'prj_cache', teamId: 'team_cache', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };

  beforeEach(async () => {
    dir = makeTempDir();
    server = new SqliteStore({ path: join(dir.path, 'cache.db') });
    await server.migrate();
    cli = new SqliteStore({ path: join(dir.path, 'cache.db') });
    await server.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await server.projectInsert({ project, secret: { id: 'whs_1', projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
  });
  afterEach(async () => {
    await cli.close();
    await server.close();
    dir.remove();
  });

  it('sees a project changed by another connection', async () => {
    expect((await server.projectGetMany([project.id]))[0]!.webhookUrl).toBe('http://127.0.0.1:1/a');
    await cli.projectUpdate({ projectId: project.id, patch: { webhookUrl: 'http://127.0.0.1:1/b' } });
    await nextTurn();
    expect((await server.projectGetMany([project.id]))[0]!.webhookUrl).toBe('http://127.0.0.1:1/b');
    expect((await server.projectGet(project.id))!.webhookUrl).toBe('http://127.0.0.1:1/b');
  });

  it('signs with a secret rotated by another connection', async () => {
    expect((await server.webhookSecretListActive({ projectId: project.id, now: T0 })).map((s) => s.ciphertext)).toEqual(['sealed-1']);
    await cli.webhookSecretRotate({
      projectId: project.id,
      secret: { id: 'whs_2', projectId: project.id, ciphertext: 'sealed-2', createdAt: T0 + 1, expiresAt: null },
      overlapMs: 1000,
      now: T0 + 1,
    });
    await nextTurn();
    expect((await server.webhookSecretListActive({ projectId: project.id, now: T0 + 2 })).map((s) => s.ciphertext)).toEqual(['sealed-2', 'sealed-1']);
    // The cache is read again when the older secret expires.
    expect((await server.webhookSecretListActive({ projectId: project.id, now: T0 + 1001 })).map((s) => s.ciphertext)).toEqual(['sealed-2']);
  });

  it('sees its own writes at once, in the same turn', async () => {
    expect((await server.projectGet(project.id))!.deliveryTimeoutMs).toBe(PROJECT_DEFAULTS.deliveryTimeoutMs);
    await server.projectUpdate({ projectId: project.id, patch: { deliveryTimeoutMs: 5_000 } });
    expect((await server.projectGetMany([project.id]))[0]!.deliveryTimeoutMs).toBe(5_000);
  });
});
