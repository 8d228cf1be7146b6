import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';

/** SPEC section 12 through the API, with an injected clock: a job goes exactly when its retention has passed. */
describe('retention', () => {
  let t: TestApp;
  let p: TestProject;
  const dispatch = async (project: TestProject) => {
    const res = await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: 1 }, scheduledFor: new Date(t.clock.now() + 300 * DAY).toISOString() } });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const cancel = async (project: TestProject, jobId: string) => {
    const res = await t.api(project.key, { method: 'DELETE', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(200);
  };
  const status = async (project: TestProject, jobId: string) => (await t.api(project.key, { method: 'GET', url: `/api/jobs/${jobId}` })).statusCode;
  const patchProject = (projectId: string, body: unknown) =>
    t.admin({ method: 'PATCH', url: `/manage/v1/projects/${projectId}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  beforeAll(async () => {
    t = await makeTestApp({ env: { PUNCTUAL_RETENTION_DAYS: '2' } });
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  it('deletes a final job PUNCTUAL_RETENTION_DAYS after it became final, not a millisecond before; then it answers 404', async () => {
    const cancelledJob = await dispatch(p);
    const waiting = await dispatch(p);
    await cancel(p, cancelledJob);
    const finalAt = t.clock.now();
    t.clock.set(finalAt + 2 * DAY - 1);
    expect(await t.services.retention.prune()).toMatchObject({ jobs: 0 });
    expect(await status(p, cancelledJob)).toBe(200);
    t.clock.set(finalAt + 2 * DAY);
    expect(await t.services.retention.prune()).toMatchObject({ jobs: 1, attempts: 0 });
    const gone = await t.api(p.key, { method: 'GET', url: `/api/jobs/${cancelledJob}` });
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toMatchObject({ error: 'NOT_FOUND' });
    // A QUEUED job is never deleted, however old.
    t.clock.advance(300 * DAY);
    await t.services.retention.prune();
    expect(await status(p, waiting)).toBe(200);
  });

  it("a project's retentionDays overrides the server's default; null goes back to it", async () => {
    const own = await t.makeProject();
    const res = await patchProject(own.projectId, { retentionDays: 5 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ retentionDays: 5 });
    const jobId = await dispatch(own);
    await cancel(own, jobId);
    const finalAt = t.clock.now();
    t.clock.set(finalAt + 3 * DAY);
    await t.services.retention.prune();
    expect(await status(own, jobId)).toBe(200);
    t.clock.set(finalAt + 5 * DAY);
    await t.services.retention.prune();
    expect(await status(own, jobId)).toBe(404);
    expect((await patchProject(own.projectId, { retentionDays: null })).json()).toMatchObject({ retentionDays: null });
    expect((await t.admin({ method: 'GET', url: `/manage/v1/projects/${own.projectId}` })).json()).toMatchObject({ retentionDays: null });
  });

  it('refuses a retentionDays out of 1..3650 or not an integer, and changes nothing', async () => {
    await patchProject(p.projectId, { retentionDays: 9 });
    for (const bad of [0, 3651, 1.5, '7', true]) {
      const res = await patchProject(p.projectId, { retentionDays: bad });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(res.json()).toMatchObject({ error: 'INVALID_REQUEST' });
    }
    expect((await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}` })).json()).toMatchObject({ retentionDays: 9 });
    await patchProject(p.projectId, { retentionDays: null });
  });

  it('forgets idempotency keys after 24 hours', async () => {
    const send = () =>
      t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', headers: { 'idempotency-key': 'retention-key' }, payload: { payload: { n: 2 } } });
    const first = await send();
    t.clock.advance(DAY);
    const pruned = await t.services.retention.prune();
    expect(pruned.idempotencyKeys).toBe(1);
    const second = await send();
    expect(second.statusCode).toBe(201);
    expect(second.json().jobId).not.toBe(first.json().jobId);
  });

  it('reports rows pruned and the store size on /metrics', async () => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^punctual_rows_pruned_total\{table="jobs"\} [1-9]/m);
    expect(text).toMatch(/^punctual_rows_pruned_total\{table="idempotency_keys"\} 1$/m);
    const database = /^punctual_store_size_bytes\{file="database"\} (\d+)$/m.exec(text);
    expect(Number(database?.[1])).toBeGreaterThan(0);
  });

  it("deletes the project overview's figures 25 hours after their minute", async () => {
    const project = await t.makeProject();
    const jobId = (await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: 3 } } })).json().jobId as string;
    const at = t.clock.now();
    // Another project's jobs are due too (the idempotency test's): stepped over.
    const claimed = await t.store.jobClaimDue({ now: at, dueBy: at, limit: 10, workerId: 'wrk_t', leaseExtraMs: 30_000, excludeProjectIds: [p.projectId], heldByProject: {}, claimRule: claimRule(256) });
    expect(claimed.map((job) => job.id)).toEqual([jobId]);
    await t.store.attemptStart({ jobId, attemptId: 'att_retention0000000', workerId: 'wrk_t', now: at, leaseExpiresAt: at + 60_000 });
    const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 3, error: 'HTTP 500', responseBody: null };
    await t.store.attemptFinish({ jobId, attemptId: 'att_retention0000000', workerId: 'wrk_t', now: at, result: failure, next: { kind: 'fail' } });
    const figures = () => t.store.projectOverview({ projectId: project.projectId, now: at });
    const kept = { deliveryMinutes: [{ attempts: 1, failedAttempts: 1 }], lateness: { firstAttempts: 1 }, recentFailures: [{ jobId }] };
    expect(await figures()).toMatchObject(kept);
    t.clock.set(at + 25 * 3_600_000 - 60_000);
    await t.services.retention.prune();
    expect(await figures()).toMatchObject(kept);
    t.clock.set(at + 25 * 3_600_000 + 1);
    await t.services.retention.prune();
    expect(await figures()).toMatchObject({ deliveryMinutes: [], lateness: { firstAttempts: 0 }, recentFailures: [] });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^punctual_rows_pruned_total\{table="overview"\} 3$/m);
    // The job itself is kept as its retention says.
    expect((await t.api(project.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json()).toMatchObject({ status: 'FAILED' });
  });
});
