import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { JobCreateResult, NewJob, ProjectRow } from '../../../src/store/store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';

/**
 * Two instances each group the dispatches of one event-loop turn into one statement that also adds
 * to every team's row of the day's usage. Grouped in opposite team orders, they once locked those
 * rows in opposite orders and PostgreSQL aborted one as a deadlock (a 500 to every request of the
 * group). Found by `bench:plans` with two instances and three teams.
 */
describe.runIf(await postgresAvailable())('postgres: concurrent dispatches of several teams from several instances', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  // Many teams, so that statements running side by side overlap in the rows they lock.
  const teams = Array.from({ length: 30 }, (_, i) => `team_u${String(i).padStart(2, '0')}`);
  const projects: ProjectRow[] = teams.map((teamId, i) => ({
    id: `prj_u${i}`,
    teamId,
    name: 'P',
    webhookUrl: 'http://127.0.0.1:1/a',
    ...PROJECT_DEFAULTS,
    createdAt: T0,
  }));
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let instances: PostgresStore[];

  beforeAll(async () => {
    schema = await makeSchema();
    instances = [0, 1].map(() => new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 8 }));
    await instances[0]!.migrate();
    for (const [i, project] of projects.entries()) {
      await instances[0]!.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
      await instances[0]!.projectInsert({ project, secret: { id: `whs_u${i}`, projectId: project.id, ciphertext: 's', createdAt: T0, expiresAt: null } });
    }
  });
  afterAll(async () => {
    for (const store of instances) await store.close();
    await schema.drop();
  });

  let seq = 0;
  const job = (): NewJob => ({ id: `job_u${seq++}`, payload: '{}', scheduledFor: null, runAt: T0 + 3_600_000, maxRetries: 0 });
  // The quota test runs in the next month, whose usage the first test leaves untouched.
  const APRIL = Date.parse('2027-04-10T12:00:00.000Z');
  const create = (store: PostgresStore, project: ProjectRow, quota: number | null = null) =>
    store.jobCreate({
      projectId: project.id,
      teamId: project.teamId,
      now: quota === null ? T0 : APRIL,
      jobs: [job(), job()],
      quota: quota === null ? null : { limit: quota, monthStartDay: '2027-04-01', monthEndDay: '2027-05-01' },
      idempotency: null,
      answer: { kind: 'single', statusCode: 201, body: '{}' },
    });

  it('never deadlocks on the usage rows, and counts every job', async () => {
    const rounds = 60;
    const created: Promise<unknown>[] = [];
    for (let round = 0; round < rounds; round++) {
      // In each turn each instance groups two dispatches per team, in an order of its own (the
      // first instance in team order, the second in reverse), without waiting for the last turn's
      // groups: up to a pool's worth of groups run side by side, as under load.
      for (const [i, store] of instances.entries()) {
        const order = i === 0 ? projects : [...projects].reverse();
        for (const project of [...order, ...order]) created.push(create(store, project));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const outcomes = await Promise.allSettled(created);
    expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
    for (const teamId of teams) {
      const [usage] = await instances[0]!.usageDaily({ teamId, fromDay: '2027-03-01', toDay: '2027-04-01' });
      expect(usage).toEqual({ day: '2027-03-10', jobsCreated: rounds * 4 * 2 });
    }
  });

  it("holds each team's monthly quota exactly while both instances dispatch for it at once", async () => {
    const quota = 301; // 400 jobs sent per team; odd, so that one request of two jobs gets one
    const quotaProjects = projects.slice(0, 5);
    const answers: Promise<{ projectId: string; result: JobCreateResult }>[] = [];
    const dispatch = (store: PostgresStore, project: ProjectRow, limit: number | null) =>
      answers.push(create(store, project, limit).then((result) => ({ projectId: project.id, result })));
    for (let round = 0; round < 100; round++) {
      for (const [i, store] of instances.entries()) {
        // The teams' jobs and some of another team without a quota, in one group.
        const order = i === 0 ? quotaProjects : [...quotaProjects].reverse();
        for (const project of order) dispatch(store, project, quota);
        dispatch(store, projects[10]!, null);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const results = await Promise.all(answers);
    for (const project of quotaProjects) {
      const created = results
        .filter((r) => r.projectId === project.id)
        .flatMap(({ result }) => (result.kind === 'created' ? result.created : []))
        .filter(Boolean).length;
      expect(created).toBe(quota);
      const [usage] = await instances[0]!.usageDaily({ teamId: project.teamId, fromDay: '2027-04-01', toDay: '2027-05-01' });
      expect(usage).toEqual({ day: '2027-04-10', jobsCreated: quota });
    }
  });
});
