/** Contract cases of creating, listing, cancelling, rescheduling and retrying jobs: see store-contract.ts. */
import { expect, it } from 'vitest';
import type { JobListParams } from '../../src/store/store.js';
import type { ContractContext } from './contract-context.js';

export function jobCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  it('creates jobs QUEUED and lists them newest first by cursor', async () => {
    const project = await makeProject();
    const result = await create(project, [job('job_c_a'), job('job_c_b', { scheduledFor: T0 + 5000, runAt: T0 + 5000 }), job('job_c_c')]);
    expect(result).toMatchObject({ kind: 'created', created: [true, true, true] });
    const b = await contract.store.jobGet({ projectId: project.id, jobId: 'job_c_b' });
    expect(b).toMatchObject({ status: 'QUEUED', payload: '{"a":1}', scheduledFor: T0 + 5000, runAt: T0 + 5000, queuedAt: T0, attemptCount: 0, createdAt: T0, updatedAt: T0, cancelledAt: null });
    const page1 = await contract.store.jobList({ projectId: project.id, status: null, beforeSeq: null, limit: 2 });
    expect(page1.map((j) => j.id)).toEqual(['job_c_c', 'job_c_b']);
    const page2 = await contract.store.jobList({ projectId: project.id, status: null, beforeSeq: page1[1]!.seq, limit: 2 });
    expect(page2.map((j) => j.id)).toEqual(['job_c_a']);
    expect(await contract.store.jobGet({ projectId: 'prj_other', jobId: 'job_c_a' })).toBeNull();
  });

  it('enforces the quota in request order and counts usage per day', async () => {
    const project = await makeProject();
    const quota = { limit: 2, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' };
    const first = await create(project, [job('job_q1')], { quota });
    expect(first).toMatchObject({ created: [true], usedBefore: 0 });
    const second = await create(project, [job('job_q2'), job('job_q3')], { quota });
    expect(second).toMatchObject({ created: [true, false], usedBefore: 1 });
    expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_q3' })).toBeNull();
    expect(await contract.store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([{ day: '2027-03-10', jobsCreated: 2 }]);
  });

  it("counts a day's jobs created by many separate writes as one figure, and the quota sees them all", async () => {
    const project = await makeProject();
    // Each awaited creation is a group of its own (on PostgreSQL, a statement adding to a shard
    // of the day's usage picked at random): the day still reads as one total.
    for (let i = 0; i < 24; i++) await create(project, [job(`job_u${i}`)]);
    expect(await contract.store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([{ day: '2027-03-10', jobsCreated: 24 }]);
    const quota = { limit: 25, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' };
    expect(await create(project, [job('job_u24'), job('job_u25')], { quota })).toMatchObject({ created: [true, false], usedBefore: 24 });
  });

  it('replays and conflicts on idempotency keys within the window only', async () => {
    const project = await makeProject();
    const idem = (hash: string, validAfter = T0 - 1000) => ({ endpoint: 'dispatch', key: 'k1', requestHash: hash, validAfter });
    const first = await create(project, [job('job_i1')], { idempotency: idem('h1'), answer: { kind: 'single', statusCode: 201, body: 'first' } });
    expect(first.kind).toBe('created');
    expect(await create(project, [job('job_i2')], { idempotency: idem('h1') })).toEqual({ kind: 'replayed', response: { statusCode: 201, body: 'first' } });
    expect(await create(project, [job('job_i3')], { idempotency: idem('h2') })).toEqual({ kind: 'idempotency_conflict' });
    expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_i2' })).toBeNull();
    const expired = await create(project, [job('job_i4')], { idempotency: idem('h2', T0 + 1), answer: { kind: 'single', statusCode: 201, body: 'fresh' } });
    expect(expired.kind).toBe('created');
    expect(await create(project, [job('job_i5')], { idempotency: idem('h2') })).toEqual({ kind: 'replayed', response: { statusCode: 201, body: 'fresh' } });
  });

  it('stores no idempotency key when the answer is an error', async () => {
    const project = await makeProject();
    const idem = { endpoint: 'dispatch', key: 'k2', requestHash: 'h', validAfter: 0 };
    await create(project, [job('job_e1')], { idempotency: idem, quota: { limit: 0, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' } });
    const retried = await create(project, [job('job_e2')], { idempotency: idem });
    expect(retried.kind).toBe('created');
  });

  it('creates one job for concurrent creations with one idempotency key', async () => {
    const project = await makeProject();
    const idem = { endpoint: 'dispatch', key: 'k3', requestHash: 'h', validAfter: 0 };
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create(project, [job(`job_cc${i}`)], { idempotency: idem })));
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'replayed')).toHaveLength(7);
  });

  it('cancels only QUEUED jobs, and says why not otherwise', async () => {
    const project = await makeProject();
    await create(project, [job('job_x1')]);
    const ok = await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_x1', now: T0 + 1 });
    expect(ok).toMatchObject({ ok: true, job: { status: 'CANCELLED', cancelledAt: T0 + 1, updatedAt: T0 + 1 } });
    expect(await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_x1', now: T0 + 2 })).toEqual({ ok: false, status: 'CANCELLED' });
    expect(await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_none', now: T0 })).toEqual({ ok: false, status: null });
    expect(await contract.store.jobCancelIfQueued({ projectId: 'prj_other', jobId: 'job_x1', now: T0 })).toEqual({ ok: false, status: null });
    expect(await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_x1', scheduledFor: null, now: T0 })).toEqual({ ok: false, status: 'CANCELLED' });
    expect(await contract.store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_x1', now: T0 })).toEqual({ ok: false, status: 'CANCELLED' });
  });

  it('reschedules to the later of the asked time and when the job entered QUEUED', async () => {
    const project = await makeProject();
    await create(project, [job('job_r1', { scheduledFor: T0 + 10_000, runAt: T0 + 10_000 })]);
    const later = await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: T0 + 20_000, now: T0 + 1 });
    expect(later).toMatchObject({ ok: true, job: { scheduledFor: T0 + 20_000, runAt: T0 + 20_000, updatedAt: T0 + 1 } });
    const past = await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: T0 - 99_000, now: T0 + 2 });
    expect(past).toMatchObject({ ok: true, job: { scheduledFor: T0 - 99_000, runAt: T0 } });
    const atOnce = await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: null, now: T0 + 3 });
    expect(atOnce).toMatchObject({ ok: true, job: { scheduledFor: null, runAt: T0 } });
  });

  it('lists no attempts for a new job and reports usage for a quiet team as empty', async () => {
    const project = await makeProject();
    await create(project, [job('job_at1')]);
    expect(await contract.store.attemptListByJob('job_at1')).toEqual([]);
    expect(await contract.store.usageDaily({ teamId: 'team_quiet', fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([]);
  });

  it('lists a project\'s jobs created within a time range, with or without a status', async () => {
    const project = await makeProject();
    await create(project, [job('job_r1')], { now: T0 });
    await create(project, [job('job_r2')], { now: T0 + 1_000 });
    await create(project, [job('job_r3')], { now: T0 + 2_000 });
    await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_r2', now: T0 + 3_000 });
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
    const base = { projectId: project.id, beforeSeq: null, limit: 10 };
    expect(ids(await contract.store.jobList({ ...base, status: null, createdFrom: T0 + 1_000, createdBefore: T0 + 2_000 }))).toEqual(['job_r2']);
    expect(ids(await contract.store.jobList({ ...base, status: null, createdFrom: T0 + 1_000 }))).toEqual(['job_r3', 'job_r2']);
    expect(ids(await contract.store.jobList({ ...base, status: null, createdBefore: T0 + 1_000 }))).toEqual(['job_r1']);
    expect(ids(await contract.store.jobList({ ...base, status: 'CANCELLED', createdFrom: T0 }))).toEqual(['job_r2']);
    expect(ids(await contract.store.jobList({ ...base, status: 'QUEUED', createdFrom: T0, limit: 1 }))).toEqual(['job_r3']);
  });

  // Read by (created_at, seq) so that a window is found from its end in an index whatever its age:
  // a job stamped by an instance whose clock is behind is listed at its creation time.
  it("lists a window or a schedule's jobs newest first by creation time, then insertion, and pages through them by cursor", async () => {
    const project = await makeProject();
    const ofSchedule = (id: string, fireAt: number) => job(id, { scheduledFor: fireAt, runAt: fireAt, schedule: { id: 'sch_order', fireAt } });
    await create(project, [ofSchedule('job_o1', T0 + 1)], { now: T0 + 2_000 });
    await create(project, [ofSchedule('job_o2', T0 + 2)], { now: T0 + 1_000 });
    await create(project, [ofSchedule('job_o3', T0 + 3), job('job_o4')], { now: T0 + 1_500 });
    await create(project, [ofSchedule('job_o5', T0 + 5), job('job_o6')], { now: T0 + 1_000 });
    await create(project, [job('job_o7')], { now: T0 + 3_000 });
    await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_o3', now: T0 + 4_000 });
    const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
    /** Every page of `filter`, two at a time, each from the cursor (seq and creation time) of the last job of the one before. */
    async function pages(filter: Partial<JobListParams>): Promise<string[][]> {
      const found: string[][] = [];
      let cursor: Pick<JobListParams, 'beforeSeq' | 'beforeCreatedAt'> = { beforeSeq: null, beforeCreatedAt: null };
      for (;;) {
        const page = await contract.store.jobList({ projectId: project.id, status: null, ...filter, ...cursor, limit: 2 });
        if (page.length > 0) found.push(ids(page));
        if (page.length < 2 || found.length > 5) return found;
        cursor = { beforeSeq: page[1]!.seq, beforeCreatedAt: page[1]!.createdAt };
      }
    }
    const window = { createdFrom: T0 + 1_000, createdBefore: T0 + 3_000 };
    expect(await pages(window)).toEqual([['job_o1', 'job_o4'], ['job_o3', 'job_o6'], ['job_o5', 'job_o2']]);
    expect(await pages({ ...window, status: 'QUEUED' })).toEqual([['job_o1', 'job_o4'], ['job_o6', 'job_o5'], ['job_o2']]);
    expect(await pages({ scheduleId: 'sch_order' })).toEqual([['job_o1', 'job_o3'], ['job_o5', 'job_o2']]);
    expect(await pages({ scheduleId: 'sch_order', status: 'QUEUED', createdBefore: T0 + 2_000 })).toEqual([['job_o5', 'job_o2']]);
    // A cursor later than the window's end reads from the window's end.
    expect(ids(await contract.store.jobList({ projectId: project.id, status: null, ...window, beforeSeq: 1e9, beforeCreatedAt: T0 + 9_000, limit: 1 }))).toEqual(['job_o1']);
  });
}
