import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { AttemptResult, ClaimedJob, ProjectRow } from '../../../src/store/store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';
import { claimRule } from '../../../src/delivery/capacity-rules.js';

/**
 * The overview's figures on PostgreSQL (0011_project_overview.sql): two instances finishing the
 * attempts of many projects side by side add to rows per project and minute spread over 16 shards,
 * each statement taking its rows in one order, so that none waits on another in a circle (a
 * deadlock, which the pool would retry, but at a second's cost). Folding the shards of past minutes
 * then leaves one row per minute, the sums unchanged.
 */
describe.runIf(await postgresAvailable())('postgres: the overview rows under concurrent finishes, and their folding', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const MIN = 60_000;
  const projects: ProjectRow[] = Array.from({ length: 20 }, (_, i) => ({
    id: `prj_s${String(i).padStart(2, '0')}`,
    teamId: `team_s${i}`,
    name: 'P',
    webhookUrl: 'http://127.0.0.1:1/a',
    ...PROJECT_DEFAULTS,
    createdAt: T0,
  }));
  const JOBS_PER_PROJECT = 12;
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let instances: PostgresStore[];
  let client: pg.Client;

  beforeAll(async () => {
    schema = await makeSchema();
    instances = [0, 1].map(() => new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 8 }));
    await instances[0]!.migrate();
    client = new pg.Client({ connectionString: PG_TEST_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    for (const [i, project] of projects.entries()) {
      await instances[0]!.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
      await instances[0]!.projectInsert({ project, secret: { id: `whs_s${i}`, projectId: project.id, ciphertext: 's', createdAt: T0, expiresAt: null } });
      const jobs = Array.from({ length: JOBS_PER_PROJECT }, (_, j) => ({ id: `job_s${i}_${j}`, payload: '{}', scheduledFor: null, runAt: T0 - j, maxRetries: 0 }));
      await instances[0]!.jobCreate({ projectId: project.id, teamId: project.teamId, now: T0 - MIN, jobs, quota: null, idempotency: null, answer: { kind: 'single', statusCode: 201, body: '{}' } });
    }
  });
  afterAll(async () => {
    await client?.end();
    for (const store of instances ?? []) await store.close();
    await schema?.drop();
  });

  const ok: AttemptResult = { outcome: 'success', statusCode: 200, durationMs: 1, error: null, responseBody: null };
  const failed: AttemptResult = { outcome: 'http_error', statusCode: 500, durationMs: 1, error: 'HTTP 500', responseBody: null };
  /** Every third job of a project fails. */
  const resultOf = (job: ClaimedJob) => (Number(job.id.split('_')[2]) % 3 === 0 ? failed : ok);

  it('counts every attempt of every project finished by two instances side by side, then folds each past minute into one row', async () => {
    // Each instance claims half the jobs (SKIP LOCKED keeps them apart), in an order that mixes projects.
    const [mine, theirs] = await Promise.all(
      instances.map((store, i) => store.jobClaimDue({ now: T0, dueBy: T0, limit: (projects.length * JOBS_PER_PROJECT) / 2, workerId: `wrk_${i}`, leaseExtraMs: 60_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) })),
    );
    expect(mine!.length + theirs!.length).toBe(projects.length * JOBS_PER_PROJECT);
    // Started and finished in small groups, each group a statement, the two instances side by side;
    // finished over three minutes, so that several minutes hold rows.
    const run = async (store: PostgresStore, jobs: ClaimedJob[], workerId: string) => {
      const pending: Promise<unknown>[] = [];
      for (const [k, job] of jobs.entries()) {
        const at = T0 + (k % 3) * MIN;
        pending.push(
          store.attemptStart({ jobId: job.id, attemptId: `att_${job.id}`, workerId, now: at, leaseExpiresAt: at + 60_000 }).then(() =>
            store.attemptFinish({ jobId: job.id, attemptId: `att_${job.id}`, workerId, now: at + 10, result: resultOf(job), next: resultOf(job) === ok ? { kind: 'complete' } : { kind: 'fail' } }),
          ),
        );
        if (k % 7 === 6) await new Promise((resolve) => setImmediate(resolve));
      }
      return Promise.all(pending);
    };
    await Promise.all([run(instances[0]!, mine!, 'wrk_0'), run(instances[1]!, theirs!, 'wrk_1')]);

    const figures = async () =>
      Promise.all(
        projects.map(async (project) => {
          const overview = await instances[1]!.projectOverview({ projectId: project.id, now: T0 + 3 * MIN });
          return {
            attempts: overview.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0),
            failed: overview.deliveryMinutes.reduce((sum, m) => sum + m.failedAttempts, 0),
            minutes: overview.deliveryMinutes,
            lateness: overview.lateness,
          };
        }),
      );
    const before = await figures();
    for (const f of before) expect(f).toMatchObject({ attempts: JOBS_PER_PROJECT, failed: JOBS_PER_PROJECT / 3, lateness: { firstAttempts: JOBS_PER_PROJECT } });
    const rows = async (table: string) => (await client.query<{ rows: number; keys: number }>(`SELECT count(*)::int AS rows, count(DISTINCT (project_id, minute))::int AS keys FROM ${table}`)).rows[0]!;
    const spread = await rows('delivery_minutes');
    // Many statements, 16 shards: some minute surely holds more than one row.
    expect(spread.rows).toBeGreaterThan(spread.keys);

    // Folding in batches of 7 until nothing is left, from both instances at once.
    const fold = async (store: PostgresStore) => {
      let total = 0;
      for (let n = -1; n !== 0; total += n) n = await store.overviewCompact({ before: T0 + 10 * MIN, limit: 7 });
      return total;
    };
    const [a, b] = await Promise.all(instances.map(fold));
    expect(a! + b!).toBeGreaterThan(0);
    const folded = await rows('delivery_minutes');
    expect(folded.rows).toBe(folded.keys);
    expect((await client.query('SELECT count(*)::int AS n FROM lateness_minutes WHERE shard > 0')).rows[0].n).toBe(0);
    expect(await figures()).toEqual(before);
  });
});
