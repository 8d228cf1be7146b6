import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

/**
 * A transaction that PostgreSQL picks as a deadlock's victim is rolled back whole, so the store
 * runs it once more instead of failing the request (it used to answer 500).
 */
describe.runIf(await postgresAvailable())('postgres: a transaction that loses a deadlock', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const project: ProjectRow = { id: 'prj_dl', teamId: 'team_dl', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let store: PostgresStore;
  let other: pg.Client;
  let applicationName: string;

  beforeEach(async () => {
    schema = await makeSchema();
    // Picks the store's sessions out of pg_stat_activity.
    applicationName = `deadlock_${schema.name}`;
    store = new PostgresStore({ url: `${PG_TEST_URL}${PG_TEST_URL.includes('?') ? '&' : '?'}application_name=${applicationName}`, schema: schema.name, poolSize: 2 });
    await store.migrate();
    await store.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await store.projectInsert({ project, secret: { id: 'whs_dl1', projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
    other = new pg.Client({ connectionString: PG_TEST_URL, options: `-c search_path=${schema.name}` });
    await other.connect();
  });
  afterEach(async () => {
    await other.end();
    await store.close();
    await schema.drop();
  });

  it('runs it once more, and the change is made', async () => {
    // The other session checks for deadlocks only after 10 s; the store's session after the
    // server's 1 s: the store's transaction is the one PostgreSQL rolls back.
    await other.query("SET deadlock_timeout = '10s'");
    await other.query('BEGIN');
    await other.query('UPDATE webhook_secrets SET expires_at = expires_at WHERE project_id = $1', [project.id]);

    // A rotation locks the project, then waits for the secret rows the other session holds...
    let rotated: string | undefined;
    const rotating = store
      .webhookSecretRotate({
        projectId: project.id,
        secret: { id: 'whs_dl2', projectId: project.id, ciphertext: 'sealed-2', createdAt: T0 + 1, expiresAt: null },
        overlapMs: 60_000,
        now: T0 + 1,
      })
      .then(
        () => (rotated = 'rotated'),
        (error: unknown) => (rotated = `failed: ${String(error)}`),
      );
    const deadline = Date.now() + 10_000;
    const waiting = async () =>
      (
        await other.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [
          applicationName,
        ])
      ).rows[0]!.n === 1;
    while (!(await waiting())) {
      if (Date.now() > deadline) throw new Error(`the rotation never waited for the lock (${rotated})`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // ...and the other session now waits for the projects table the rotation holds: a deadlock,
    // which the store's session finds first. Its transaction is rolled back, and PostgreSQL grants
    // this table lock as it releases the rotation's (a row lock would instead be raced for, and
    // the store's second try could win it and deadlock again).
    await other.query('LOCK TABLE projects IN EXCLUSIVE MODE');
    expect(rotated).toBeUndefined();
    // The store's second try waits for the other session, which now lets go.
    await other.query('ROLLBACK');
    await rotating;
    expect(rotated).toBe('rotated');
    const active = await store.webhookSecretListActive({ projectId: project.id, now: T0 + 2 });
    expect(active.map((secret) => secret.ciphertext).sort()).toEqual(['sealed-1', 'sealed-2']);
  });
});
