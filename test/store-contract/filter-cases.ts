/** Contract cases of tags, the one filter and bulk actions (SPEC section 14): see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { JobBulkAction, JobBulkCursor, JobBulkFilter, JobListParams, NewJob, ProjectRow } from '../../src/store/store.js';
import type { ContractContext } from './contract-context.js';

export function filterCases(contract: ContractContext): void {
  const { T0, DAY_MS, makeProject, job, create } = contract;
  describe('tags, the one filter and bulk actions (SPEC section 14)', () => {
    const LATER = T0 + DAY_MS;
    const tagged = (id: string, tags: Record<string, string>, overrides: Partial<NewJob> = {}) =>
      job(id, { runAt: LATER, scheduledFor: LATER, tags: JSON.stringify(tags), ...overrides });
    const ids = (rows: { id: string }[]) => rows.map((row) => row.id);
    const list = (project: ProjectRow, filter: Partial<JobListParams>) =>
      contract.store.jobList({ projectId: project.id, status: null, beforeSeq: null, limit: 50, ...filter });
    const cancel: JobBulkAction = { kind: 'cancel' };
    const retry: JobBulkAction = { kind: 'retry' };
    const act = (project: ProjectRow, action: JobBulkAction, filter: Omit<JobBulkFilter, 'projectId'>, o: { limit?: number; after?: JobBulkCursor | null; now?: number } = {}) =>
      contract.store.jobBulkAct({ filter: { projectId: project.id, ...filter }, action, limit: o.limit ?? 100, now: o.now ?? T0 + 10, after: o.after ?? null });
    const count = (project: ProjectRow, action: JobBulkAction, filter: Omit<JobBulkFilter, 'projectId'>, after: JobBulkCursor | null = null) =>
      contract.store.jobBulkCount({ filter: { projectId: project.id, ...filter }, action, limit: 100, after });
    const statusOf = async (project: ProjectRow, jobId: string) => (await contract.store.jobGet({ projectId: project.id, jobId }))!.status;

    /** Claims every job due by `at` (only those to fail must be) and fails each, one millisecond apart in the order given. */
    async function failJobs(jobIds: string[], at: number): Promise<void> {
      await contract.store.jobClaimDue({ now: at, dueBy: at, limit: 100, workerId: 'wrk_f', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      for (const [i, jobId] of jobIds.entries()) {
        await contract.store.attemptStart({ jobId, attemptId: `att_f${jobId}_${at}`, workerId: 'wrk_f', now: at, leaseExpiresAt: at + 60_000 });
        const result = { outcome: 'http_error' as const, statusCode: 500, durationMs: 1, error: 'HTTP 500', responseBody: null };
        await contract.store.attemptFinish({ jobId, attemptId: `att_f${jobId}_${at}`, workerId: 'wrk_f', now: at + 1 + i, result, next: { kind: 'fail' } });
      }
    }

    it("stores a job's tags as given and returns them, with one lookup row a tag; a job without tags has none and writes none", async () => {
      const project = await makeProject();
      await create(project, [tagged('job_tg1', { order: '123', 'env.name': 'prod:eu' }), job('job_tg2')]);
      // A job due at once, created with its attempt started where the store does that (SQLite).
      const started = await create(project, [job('job_tg3', { tags: '{"order":"123"}' })], { startDueNow: { workerId: 'wrk_s', leaseExpiresAt: T0 + 60_000, limit: 1 } });
      expect(started.kind).toBe('created');
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_tg1' }))!.tags).toBe('{"order":"123","env.name":"prod:eu"}');
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_tg2' }))!.tags).toBeNull();
      expect(ids(await list(project, { tags: [['order', '123']] }))).toEqual(['job_tg3', 'job_tg1']);
      expect(ids(await list(project, { tags: [['env.name', 'prod:eu']] }))).toEqual(['job_tg1']);
      expect(await contract.database.countRows('job_tags')).toBe(3);
    });

    it('lists by tag newest first, a job matching only when it has every tag given (in any order), a page at a time by seq', async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(project, [tagged('job_l1', { order: '1', env: 'prod' }), tagged('job_l2', { order: '1', env: 'dev' }), tagged('job_l3', { order: '2', env: 'prod' })]);
      await create(other, [tagged('job_lx', { order: '1', env: 'prod' })]);
      expect(ids(await list(project, { tags: [['order', '1']] }))).toEqual(['job_l2', 'job_l1']);
      expect(ids(await list(project, { tags: [['order', '1'], ['env', 'prod']] }))).toEqual(['job_l1']);
      expect(ids(await list(project, { tags: [['env', 'prod'], ['order', '1']] }))).toEqual(['job_l1']);
      expect(ids(await list(project, { tags: [['env', 'prod']] }))).toEqual(['job_l3', 'job_l1']);
      expect(await list(project, { tags: [['order', '1'], ['env', 'staging']] })).toEqual([]);
      expect(await list(project, { tags: [['order', '1'], ['order', '2']] })).toEqual([]);
      // Values match exactly: no prefix, no case folding.
      expect(await list(project, { tags: [['order', '']] })).toEqual([]);
      expect(await list(project, { tags: [['ORDER', '1']] })).toEqual([]);
      const first = await list(project, { tags: [['order', '1']], limit: 1 });
      expect(ids(first)).toEqual(['job_l2']);
      expect(ids(await list(project, { tags: [['order', '1']], limit: 1, beforeSeq: first[0]!.seq }))).toEqual(['job_l1']);
      expect(ids(await list(other, { tags: [['order', '1']] }))).toEqual(['job_lx']);
    });

    it('combines a tag with status, schedule, creation and due windows; a due window matches only QUEUED jobs due in it', async () => {
      const project = await makeProject();
      const fire = (id: string, runAt: number) => tagged(id, { batch: 'x' }, { runAt, scheduledFor: runAt, schedule: { id: 'sch_f', fireAt: runAt } });
      await create(project, [tagged('job_c1', { batch: 'x' }, { runAt: T0 + 1_000 }), tagged('job_c2', { batch: 'x' }, { runAt: T0 + 5_000 })], { now: T0 });
      await create(project, [job('job_c3', { runAt: T0 + 5_000 }), fire('job_c4', T0 + 3_000)], { now: T0 + 100 });
      await create(project, [tagged('job_c5', { batch: 'x' }, { runAt: T0 + 1_000 })], { now: T0 + 200 });
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_c5', now: T0 + 300 });
      const batch: [string, string][] = [['batch', 'x']];
      expect(ids(await list(project, { tags: batch, status: 'QUEUED' }))).toEqual(['job_c4', 'job_c2', 'job_c1']);
      expect(ids(await list(project, { tags: batch, status: 'CANCELLED' }))).toEqual(['job_c5']);
      expect(ids(await list(project, { tags: batch, scheduleId: 'sch_f' }))).toEqual(['job_c4']);
      expect(ids(await list(project, { tags: batch, createdFrom: T0 + 100, createdBefore: T0 + 200 }))).toEqual(['job_c4']);
      expect(ids(await list(project, { tags: batch, dueFrom: T0 + 1_000, dueBefore: T0 + 5_000 }))).toEqual(['job_c4', 'job_c1']);
      expect(ids(await list(project, { tags: batch, dueBefore: T0 + 2_000 }))).toEqual(['job_c1']);
      // Without a tag: the project's QUEUED jobs due in the window, with the other filters too.
      expect(ids(await list(project, { dueFrom: T0 + 3_000 }))).toEqual(['job_c4', 'job_c3', 'job_c2']);
      expect(ids(await list(project, { dueFrom: T0 + 3_000, dueBefore: T0 + 5_000 }))).toEqual(['job_c4']);
      expect(ids(await list(project, { dueFrom: T0, scheduleId: 'sch_f' }))).toEqual(['job_c4']);
      expect(ids(await list(project, { dueFrom: T0, createdFrom: T0 + 100 }))).toEqual(['job_c4', 'job_c3']);
      expect(await list(project, { dueFrom: T0, status: 'CANCELLED' })).toEqual([]);
      const page = await list(project, { dueFrom: T0, limit: 2 });
      expect(ids(page)).toEqual(['job_c4', 'job_c3']);
      expect(ids(await list(project, { dueFrom: T0, limit: 2, beforeSeq: page[1]!.seq }))).toEqual(['job_c2', 'job_c1']);
    });

    it("lists, counts and cancels by concurrencyKey (SPEC section 15), alone or with a tag, status or creation window, and no other project's", async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(project, [
        job('job_k1', { runAt: LATER, scheduledFor: LATER, concurrencyKey: 'cust-1' }),
        tagged('job_k2', { order: '9' }, { concurrencyKey: 'cust-1' }),
        job('job_k3', { runAt: LATER, scheduledFor: LATER, concurrencyKey: 'cust-2' }),
        tagged('job_k4', { order: '9' }),
      ], { now: T0 });
      await create(project, [job('job_k5', { runAt: LATER, scheduledFor: LATER, concurrencyKey: 'cust-1' })], { now: T0 + 100 });
      await create(other, [job('job_kx', { runAt: LATER, scheduledFor: LATER, concurrencyKey: 'cust-1' })]);
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_k1', now: T0 + 200 });
      expect(ids(await list(project, { concurrencyKey: 'cust-1' }))).toEqual(['job_k5', 'job_k2', 'job_k1']);
      expect(ids(await list(project, { concurrencyKey: 'cust-1', status: 'QUEUED' }))).toEqual(['job_k5', 'job_k2']);
      expect(ids(await list(project, { concurrencyKey: 'cust-1', tags: [['order', '9']] }))).toEqual(['job_k2']);
      expect(ids(await list(project, { concurrencyKey: 'cust-1', createdFrom: T0 + 100 }))).toEqual(['job_k5']);
      expect(ids(await list(project, { concurrencyKey: 'cust-1', scheduleId: 'sch_none' }))).toEqual([]);
      expect(await list(project, { concurrencyKey: 'cust-' })).toEqual([]);
      const page = await list(project, { concurrencyKey: 'cust-1', limit: 1 });
      expect(ids(await list(project, { concurrencyKey: 'cust-1', limit: 2, beforeSeq: page[0]!.seq }))).toEqual(['job_k2', 'job_k1']);
      expect(await count(project, cancel, { concurrencyKey: 'cust-1' })).toBe(2);
      const chunk = await act(project, cancel, { concurrencyKey: 'cust-1' });
      expect(chunk.matched).toBe(2);
      expect(await statusOf(project, 'job_k5')).toBe('CANCELLED');
      expect(await statusOf(project, 'job_k3')).toBe('QUEUED');
      expect(await statusOf(project, 'job_k4')).toBe('QUEUED');
      expect(await statusOf(other, 'job_kx')).toBe('QUEUED');
    });

    it('cancels the QUEUED jobs of a filter oldest first, a chunk at a time from its cursor, and no job of another state or project', async () => {
      const project = await makeProject();
      const other = await makeProject();
      const order = { order: '7' };
      await create(project, [tagged('job_x0', order, { runAt: T0 })]);
      await failJobs(['job_x0'], T0);
      await create(project, [1, 2, 3, 4, 5].map((i) => tagged(`job_x${i}`, order)));
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_x3', now: T0 + 5 });
      await create(other, [tagged('job_xo', order)]);
      const filter = { tags: [['order', '7']] as [string, string][] };
      expect(await count(project, cancel, filter)).toBe(4);
      const first = await act(project, cancel, filter, { limit: 2 });
      expect(first).toMatchObject({ matched: 2, changed: 2, earliestRunAt: null });
      expect(await Promise.all(['job_x1', 'job_x2', 'job_x4'].map((id) => statusOf(project, id)))).toEqual(['CANCELLED', 'CANCELLED', 'QUEUED']);
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_x1' }))!).toMatchObject({ cancelledAt: T0 + 10, updatedAt: T0 + 10 });
      expect(await count(project, cancel, filter, first.next)).toBe(2);
      const second = await act(project, cancel, filter, { limit: 2, after: first.next });
      expect(second).toMatchObject({ matched: 2, changed: 2 });
      const third = await act(project, cancel, filter, { after: second.next });
      expect(third).toEqual({ matched: 0, changed: 0, next: null, earliestRunAt: null });
      expect(await count(project, cancel, filter)).toBe(0);
      expect(await statusOf(project, 'job_x0')).toBe('FAILED');
      expect(await statusOf(other, 'job_xo')).toBe('QUEUED');
    });

    it('reschedules the QUEUED jobs of a filter as a PATCH would, and does not match a job already due where it would put it', async () => {
      const project = await makeProject();
      await create(project, [tagged('job_r1', { wave: '1' }), tagged('job_r2', { wave: '1' }, { runAt: T0 + 50, scheduledFor: T0 + 50 })]);
      const filter = { tags: [['wave', '1']] as [string, string][] };
      const to = (scheduledFor: number | null): JobBulkAction => ({ kind: 'reschedule', scheduledFor });
      expect(await act(project, to(T0 + 5_000), filter)).toMatchObject({ matched: 2, changed: 2, earliestRunAt: T0 + 5_000 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_r1' })).toMatchObject({ status: 'QUEUED', scheduledFor: T0 + 5_000, runAt: T0 + 5_000, updatedAt: T0 + 10 });
      // Already there: not matched, so a second run moves on to the rest instead of taking the same jobs again.
      expect(await count(project, to(T0 + 5_000), filter)).toBe(0);
      expect(await act(project, to(T0 + 5_000), filter)).toMatchObject({ matched: 0, changed: 0 });
      // In the past, or null: due when it entered QUEUED (the later of the two, as a PATCH).
      expect(await act(project, to(T0 - 60_000), filter, { limit: 1 })).toMatchObject({ matched: 1, changed: 1, earliestRunAt: T0 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_r1' })).toMatchObject({ scheduledFor: T0 - 60_000, runAt: T0 });
      expect(await act(project, to(null), filter)).toMatchObject({ matched: 2, changed: 2, earliestRunAt: T0 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_r2' })).toMatchObject({ scheduledFor: null, runAt: T0 });
      expect(await count(project, to(null), filter)).toBe(0);
    });

    it('retries the FAILED jobs of a filter as the retry endpoint does; by a failure window, oldest failure first', async () => {
      const project = await makeProject();
      await create(project, [tagged('job_f1', { kind: 'x' }, { runAt: T0 }), tagged('job_f2', { kind: 'x' }, { runAt: T0 }), job('job_f3', { runAt: T0 })]);
      await failJobs(['job_f3', 'job_f1', 'job_f2'], T0);
      await create(project, [tagged('job_f4', { kind: 'x' })]);
      const byTag = { tags: [['kind', 'x']] as [string, string][] };
      expect(await count(project, retry, byTag)).toBe(2);
      expect(await count(project, cancel, byTag)).toBe(1);
      expect(await act(project, retry, byTag, { now: T0 + 1_000 })).toMatchObject({ matched: 2, changed: 2, earliestRunAt: T0 + 1_000 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({
        status: 'QUEUED', runAt: T0 + 1_000, queuedAt: T0 + 1_000, failedAt: null, attemptCount: 1, roundStartAttemptCount: 1,
      });
      // Bulk replay's window: failed in [T0 + 1, T0 + 3), oldest failure first (job_f3 failed first).
      await failJobs(['job_f1'], T0 + 1_000);
      const window = { failedFrom: T0 + 1, failedBefore: T0 + 1_002 };
      const first = await act(project, retry, window, { limit: 1, now: T0 + 2_000 });
      expect(first).toMatchObject({ matched: 1, changed: 1 });
      expect(await statusOf(project, 'job_f3')).toBe('QUEUED');
      expect(await act(project, retry, window, { after: first.next, now: T0 + 2_000 })).toMatchObject({ matched: 1, changed: 1 });
      expect(await statusOf(project, 'job_f1')).toBe('QUEUED');
    });

    it('reads a filter by creation window, by schedule or by status alone in its own order, a chunk at a time from its cursor, each job once', async () => {
      const project = await makeProject();
      const fire = (id: string, at: number) => job(id, { runAt: LATER + at, scheduledFor: LATER + at, schedule: { id: 'sch_o', fireAt: LATER + at } });
      // Created out of seq order (an instance with a clock behind): a window is read by creation time, then seq.
      await create(project, [fire('job_o1', 1), job('job_o2', { runAt: LATER })], { now: T0 + 2_000 });
      await create(project, [fire('job_o3', 2), job('job_o4', { runAt: LATER })], { now: T0 + 1_000 });
      await create(project, [fire('job_o5', 3)], { now: T0 + 3_000 });
      /** Every chunk of one job, each from the cursor of the one before: the seqs in the order read. */
      const walk = async (filter: Omit<JobBulkFilter, 'projectId'>, to: number) => {
        const seen: number[] = [];
        let after: JobBulkCursor | null = null;
        for (;;) {
          const chunk = await act(project, { kind: 'reschedule', scheduledFor: to }, filter, { limit: 1, after });
          if (chunk.matched === 0) return seen;
          seen.push(chunk.next!.seq);
          after = chunk.next;
        }
      };
      const seqOf = async (id: string) => (await contract.store.jobGet({ projectId: project.id, jobId: id }))!.seq;
      const seqs = async (...jobIds: string[]) => Promise.all(jobIds.map(seqOf));
      expect(await walk({ createdFrom: T0, createdBefore: T0 + 2_001 }, LATER + 9)).toEqual(await seqs('job_o3', 'job_o4', 'job_o1', 'job_o2'));
      expect(await walk({ scheduleId: 'sch_o' }, LATER + 8)).toEqual(await seqs('job_o3', 'job_o1', 'job_o5'));
      // By status alone (a due window), in seq order: o2 and o4 are due at LATER + 9, the others at LATER + 8.
      expect(await walk({ dueFrom: LATER + 9 }, LATER + 10)).toEqual(await seqs('job_o2', 'job_o4'));
      expect(await walk({ dueBefore: LATER + 9 }, LATER + 20)).toEqual(await seqs('job_o1', 'job_o3', 'job_o5'));
    });

    it("never reads, counts or changes another project's jobs, whichever filter", async () => {
      const project = await makeProject();
      const other = await makeProject();
      const theirs = (id: string) => tagged(id, { order: '9' }, { runAt: T0 + 5, scheduledFor: T0 + 5, schedule: { id: 'sch_theirs', fireAt: T0 + 5 } });
      await create(other, [theirs('job_t1')], { now: T0 + 1 });
      const filters: Omit<JobBulkFilter, 'projectId'>[] = [
        { tags: [['order', '9']] },
        { scheduleId: 'sch_theirs' },
        { createdFrom: T0, createdBefore: T0 + 10 },
        { dueFrom: T0, dueBefore: T0 + 10 },
        { failedFrom: 0, failedBefore: T0 + 10 },
      ];
      for (const filter of filters) {
        for (const action of [cancel, retry, { kind: 'reschedule' as const, scheduledFor: T0 + 7 }]) {
          expect(await count(project, action, filter), JSON.stringify(filter)).toBe(0);
          expect(await act(project, action, filter), JSON.stringify(filter)).toMatchObject({ matched: 0, changed: 0 });
        }
        expect(await list(project, filter as Partial<JobListParams>), JSON.stringify(filter)).toEqual([]);
      }
      expect(await contract.store.jobGet({ projectId: other.id, jobId: 'job_t1' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 5 });
    });

    it('deletes the tag lookup rows of a job retention deletes, and keeps those of the others', async () => {
      const project = await makeProject();
      await create(project, [tagged('job_p1', { a: '1', b: '2' }), tagged('job_p2', { a: '1' }), job('job_p3')]);
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_p1', now: T0 + 1 });
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_p3', now: T0 + 1 });
      expect(await contract.database.countRows('job_tags')).toBe(3);
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 1, limit: 10 })).toMatchObject({ jobs: 2 });
      expect(await contract.database.countRows('job_tags')).toBe(1);
      expect(ids(await list(project, { tags: [['a', '1']] }))).toEqual(['job_p2']);
    });
  });
}
