import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { countStatements, makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';
import { eventually } from '../../support/eventually.js';

/**
 * Instances cache keys, projects and secrets while they listen; a change made through one reaches
 * the others' caches by NOTIFY. Polls to a deadline: the notification is asynchronous.
 */
describe.runIf(await postgresAvailable())('postgres store caches across instances', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const hash = Buffer.alloc(32, 7);
  const project: ProjectRow = { id: 'prj_cache', teamId: 'team_cache', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let a: PostgresStore;
  let b: PostgresStore;
  let aListening: Promise<void>;

  /** Resolves once `a`'s LISTEN connection is up (listenJobDue resolves after its first attempt). */
  const listening = async (store: PostgresStore) => {
    await store.listenJobDue(() => {});
    await aListening;
  };

  beforeEach(async () => {
    schema = await makeSchema();
    let connected: () => void;
    aListening = new Promise<void>((done) => (connected = done));
    a = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 2, onListenerState: (state) => state === 'connected' && connected() });
    b = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 2 });
    await a.migrate();
    await a.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await a.projectInsert({ project, secret: { id: 'whs_1', projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
    await a.apiKeyInsert({ id: 'key_cache', projectId: project.id, name: 'k', hash, prefix: 'pk_x', createdAt: T0, lastUsedAt: null, revokedAt: null });
  });
  afterEach(async () => {
    await a.close();
    await b.close();
    await schema.drop();
  });

  const seen = { what: 'the change seen by the other instance', withinMs: 5_000, everyMs: 5 };

  it('serves a listening instance from its cache, and drops it when another instance revokes, rotates or patches', async () => {
    await listening(a);
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBeNull();
    expect((await a.projectGetMany([project.id]))[0]!.webhookUrl).toBe('http://127.0.0.1:1/a');
    expect((await a.webhookSecretListActive({ projectId: project.id, now: T0 })).map((s) => s.ciphertext)).toEqual(['sealed-1']);
    // Cached: no statement reaches the database.
    expect(await countStatements(a, () => Promise.all([a.apiKeyFindByHash(hash), a.projectGet(project.id), a.webhookSecretListActive({ projectId: project.id, now: T0 })]))).toBe(0);

    await b.apiKeyRevoke({ keyId: 'key_cache', now: T0 + 1 });
    await eventually(async () => (await a.apiKeyFindByHash(hash))!.key.revokedAt === T0 + 1, seen);
    await b.projectUpdate({ projectId: project.id, patch: { webhookUrl: 'http://127.0.0.1:1/b' } });
    await eventually(async () => (await a.projectGet(project.id))!.webhookUrl === 'http://127.0.0.1:1/b', seen);
    await b.webhookSecretRotate({
      projectId: project.id,
      secret: { id: 'whs_2', projectId: project.id, ciphertext: 'sealed-2', createdAt: T0 + 2, expiresAt: null },
      overlapMs: 1000,
      now: T0 + 2,
    });
    await eventually(async () => (await a.webhookSecretListActive({ projectId: project.id, now: T0 + 3 })).length === 2, seen);
    await b.teamUpdate({ teamId: project.teamId, plan: 'free' });
    await eventually(async () => (await a.apiKeyFindByHash(hash))!.team.plan === 'free', seen);
  });

  it('caches nothing while it does not listen', async () => {
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBeNull();
    await b.apiKeyRevoke({ keyId: 'key_cache', now: T0 + 1 });
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBe(T0 + 1);
  });

  it('sees its own changes at once', async () => {
    await listening(a);
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBeNull();
    await a.apiKeyRevoke({ keyId: 'key_cache', now: T0 + 1 });
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBe(T0 + 1);
  });
});
