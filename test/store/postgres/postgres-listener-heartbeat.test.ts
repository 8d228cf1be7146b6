import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { CuttableProxy } from '../../support/cuttable-proxy.js';
import { countStatements, makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';
import { eventually } from '../../support/eventually.js';

/**
 * An instance caches keys, projects and secrets only while its LISTEN connection hears every
 * change. When that connection's network path goes silent (no reset, no error), notifications
 * stop without a word; the heartbeat must find that out, turn the cache off and keep it off
 * until LISTEN works again, or a key revoked through another instance keeps working here.
 */
describe.runIf(await postgresAvailable())('postgres: a LISTEN connection that goes silent', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const HEARTBEAT_INTERVAL_MS = 250;
  const HEARTBEAT_TIMEOUT_MS = 1_000;
  const hash = Buffer.alloc(32, 9);
  const project: ProjectRow = { id: 'prj_hb', teamId: 'team_hb', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let proxy: CuttableProxy;
  /** The instance under test: every connection goes through the proxy. */
  let a: PostgresStore;
  /** Another instance, connected directly: it makes the changes `a` must not miss. */
  let b: PostgresStore;
  let listenerStates: ('connected' | 'lost')[];

  beforeEach(async () => {
    schema = await makeSchema();
    const target = new URL(PG_TEST_URL);
    proxy = await new CuttableProxy({ host: target.hostname, port: Number(target.port || 5432) }).start();
    listenerStates = [];
    a = new PostgresStore({
      url: PG_TEST_URL.replace(`${target.hostname}:${target.port || 5432}`, `127.0.0.1:${proxy.port}`),
      schema: schema.name,
      poolSize: 2,
      connectTimeoutMs: 1_000,
      listenHeartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
      listenHeartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS,
      onListenerState: (state) => listenerStates.push(state),
    });
    b = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 2 });
    await b.migrate();
    await b.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await b.projectInsert({ project, secret: { id: 'whs_hb', projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
    await b.apiKeyInsert({ id: 'key_hb', projectId: project.id, name: 'k', hash, prefix: 'pk_hb', createdAt: T0, lastUsedAt: null, revokedAt: null });
  });
  afterEach(async () => {
    proxy.restore();
    await a.close();
    await b.close();
    await proxy.close();
    await schema.drop();
  });

  it('turns the cache off within the heartbeat interval plus its timeout, and on again only once LISTEN is back', async () => {
    await a.listenJobDue(() => {});
    await eventually(() => listenerStates.at(-1) === 'connected', { what: 'LISTEN' });
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBeNull();
    expect(await countStatements(a, () => a.apiKeyFindByHash(hash))).toBe(0);

    // Only the LISTEN connection goes silent (its startup packet names it); the pool's
    // connections keep working, so what `a` reads shows whether its cache is on.
    proxy.silence((hello) => hello.includes('punctual-listen'));
    await b.apiKeyRevoke({ keyId: 'key_hb', now: T0 + 1 });
    // Nothing else can tell `a`: no socket closed and no error came. The margin is for a busy machine.
    await eventually(() => listenerStates.at(-1) === 'lost', { what: 'the silence noticed', withinMs: HEARTBEAT_INTERVAL_MS + HEARTBEAT_TIMEOUT_MS + 2_000 });
    expect((await a.apiKeyFindByHash(hash))!.key.revokedAt).toBe(T0 + 1);

    // New LISTEN connections go silent too, so LISTEN cannot come back: nothing is cached meanwhile.
    expect(await countStatements(a, () => a.apiKeyFindByHash(hash))).toBe(1);
    await b.projectUpdate({ projectId: project.id, patch: { webhookUrl: 'http://127.0.0.1:1/b' } });
    expect((await a.projectGet(project.id))!.webhookUrl).toBe('http://127.0.0.1:1/b');
    expect(listenerStates.filter((state) => state === 'connected')).toHaveLength(1);

    proxy.restore();
    await eventually(() => listenerStates.at(-1) === 'connected', { what: 'LISTEN again' });
    await a.apiKeyFindByHash(hash);
    expect(await countStatements(a, () => a.apiKeyFindByHash(hash))).toBe(0);
    // And changes reach the cache again by notification.
    await b.teamUpdate({ teamId: project.teamId, plan: 'free' });
    await eventually(async () => (await a.apiKeyFindByHash(hash))!.team.plan === 'free', { what: 'the plan change', withinMs: 5_000 });
  });
});
