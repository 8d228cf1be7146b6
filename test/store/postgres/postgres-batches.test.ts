import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { makeSchema, PG_TEST_URL, postgresAvailable } from '../../support/postgres.js';
import { claimRule } from '../../../src/delivery/capacity-rules.js';

/**
 * Attempt starts and results of one event-loop turn share one statement. A row the database
 * refuses used to fail that statement for every attempt in it; now only its own caller fails.
 */
describe.runIf(await postgresAvailable())('postgres: one bad row in a batch of attempts', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const project: ProjectRow = { id: 'prj_b', teamId: 'team_b', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
  const WORKER = 'wrk_b';
  const ok = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
  let schema: Awaited<ReturnType<typeof makeSchema>>;
  let store: PostgresStore;

  beforeEach(async () => {
    schema = await makeSchema();
    store = new PostgresStore({ url: PG_TEST_URL, schema: schema.name, poolSize: 4 });
    await store.migrate();
    await store.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await store.projectInsert({ project, secret: { id: 'whs_b', projectId: project.id, ciphertext: 's', createdAt: T0, expiresAt: null } });
  });
  afterEach(async () => {
    await store.close();
    await schema.drop();
  });

  async function claimJobs(ids: string[]): Promise<void> {
    await store.jobCreate({
      projectId: project.id,
      teamId: project.teamId,
      now: T0,
      jobs: ids.map((id) => ({ id, payload: '{}', scheduledFor: null, runAt: T0, maxRetries: 3 })),
      quota: null,
      idempotency: null,
      answer: { kind: 'single', statusCode: 201, body: '{}' },
    });
    const claimed = await store.jobClaimDue({ now: T0, dueBy: T0, limit: ids.length, workerId: WORKER, leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    expect(claimed.map((job) => job.id).sort()).toEqual([...ids].sort());
  }

  const start = (jobId: string, attemptId: string) => store.attemptStart({ jobId, attemptId, workerId: WORKER, now: T0, leaseExpiresAt: T0 + 60_000 });

  it('starts the other attempts when one reuses an attempt id', async () => {
    await claimJobs(['job_s1', 'job_s2', 'job_s3']);
    expect(await start('job_s1', 'att_taken')).toEqual({ attemptNumber: 1 });
    // One turn: job_s2's attempt id is taken (a primary key violation), job_s3's is fine.
    const [bad, good] = await Promise.allSettled([start('job_s2', 'att_taken'), start('job_s3', 'att_s3')]);
    expect(bad.status).toBe('rejected');
    expect(String((bad as PromiseRejectedResult).reason)).toMatch(/duplicate key/);
    expect(good).toEqual({ status: 'fulfilled', value: { attemptNumber: 1 } });
    expect(await store.jobGet({ projectId: project.id, jobId: 'job_s3' })).toMatchObject({ status: 'STARTED', attemptCount: 1 });
    // The failed start changed nothing.
    expect(await store.jobGet({ projectId: project.id, jobId: 'job_s2' })).toMatchObject({ status: 'DISPATCHED', attemptCount: 0 });
  });

  it('records the other results when one has a value PostgreSQL refuses', async () => {
    await claimJobs(['job_f1', 'job_f2', 'job_f3']);
    await Promise.all(['job_f1', 'job_f2', 'job_f3'].map((jobId) => start(jobId, `att_${jobId}`)));
    const finish = (jobId: string, responseBody: string) =>
      store.attemptFinish({ jobId, attemptId: `att_${jobId}`, workerId: WORKER, now: T0 + 10, result: { ...ok, responseBody }, next: { kind: 'complete' } });
    // One turn: PostgreSQL's text cannot hold U+0000, so job_f2's result is refused.
    const results = await Promise.allSettled([finish('job_f1', 'ok'), finish('job_f2', 'nul \u0000 inside'), finish('job_f3', 'ok')]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(results[0]).toEqual({ status: 'fulfilled', value: true });
    expect(results[2]).toEqual({ status: 'fulfilled', value: true });
    for (const jobId of ['job_f1', 'job_f3']) {
      expect(await store.jobGet({ projectId: project.id, jobId })).toMatchObject({ status: 'COMPLETED' });
    }
    expect(await store.jobGet({ projectId: project.id, jobId: 'job_f2' })).toMatchObject({ status: 'STARTED' });
    expect((await store.attemptListByJob('job_f2'))[0]).toMatchObject({ outcome: null, finishedAt: null });
  });
});
