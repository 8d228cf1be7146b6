/** Contract cases of claims, leases and attempts: see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { ClaimedJob } from '../../src/store/store.js';
import { claimLimit, claimRule, leaseMs } from '../../src/delivery/capacity-rules.js';
import type { ContractContext } from './contract-context.js';

export function deliveryCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('delivery', () => {
    const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
    const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
    const claim = (now: number, limit = 10, workerId = 'wrk_a', dueBy = now, excludeProjectIds: string[] = []) =>
      contract.store.jobClaimDue({ now, dueBy, limit, workerId, leaseExtraMs: 30_000, excludeProjectIds, heldByProject: {}, claimRule: claimRule(256) });

    it("claims no more of a project's jobs than its room: its claim limit less what the worker holds", async () => {
      const narrow = await makeProject();
      // Claimed up to twice its concurrency: 2.
      await contract.store.projectUpdate({ projectId: narrow.id, patch: { deliveryConcurrency: 1 } });
      const rated = await makeProject();
      // 25 a second: a tenth of a second's worth, rounded up, is 3, below twice its concurrency of 100.
      await contract.store.projectUpdate({ projectId: rated.id, patch: { deliveryRatePerSecond: 25 } });
      const wide = await makeProject();
      await create(narrow, [1, 2, 3, 4, 5].map((i) => job(`job_n${i}`, { runAt: T0 + i })));
      await create(rated, [1, 2, 3, 4, 5].map((i) => job(`job_r${i}`, { runAt: T0 + i })));
      await create(wide, [6, 7].map((i) => job(`job_w${i}`, { runAt: T0 + i })));
      const ids = (claimed: ClaimedJob[]) => claimed.map((j) => j.id);
      const first = await contract.store.jobClaimDue({ now: T0 + 10, dueBy: T0 + 10, limit: 100, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: { [narrow.id]: 1 }, claimRule: claimRule(256) });
      // Earliest due first within each project; the rest stay QUEUED.
      expect(ids(first).sort()).toEqual(['job_n1', 'job_r1', 'job_r2', 'job_r3', 'job_w6', 'job_w7']);
      const second = await contract.store.jobClaimDue({
        now: T0 + 10,
        dueBy: T0 + 10,
        limit: 100,
        workerId: 'wrk_a',
        leaseExtraMs: 30_000,
        excludeProjectIds: [],
        heldByProject: { [narrow.id]: 1, [rated.id]: 1 },
        claimRule: claimRule(256),
      });
      expect(ids(second).sort()).toEqual(['job_n2', 'job_r4', 'job_r5']);
      expect((await contract.store.jobGet({ projectId: narrow.id, jobId: 'job_n3' }))?.status).toBe('QUEUED');
    });

    it("claims of each project exactly the capacity model's claimLimit, less what the worker holds (one rule, in TypeScript and in SQL)", async () => {
      // A small instance (20 slots, a share of 10) so that every branch of the rule is taken.
      const globalSlots = 20;
      const settings = [
        { deliveryConcurrency: 1, deliveryRatePerSecond: null },
        { deliveryConcurrency: 3, deliveryRatePerSecond: null },
        { deliveryConcurrency: 100, deliveryRatePerSecond: null },
        { deliveryConcurrency: 50, deliveryRatePerSecond: 0.5 },
        { deliveryConcurrency: 50, deliveryRatePerSecond: 25 },
        { deliveryConcurrency: 2, deliveryRatePerSecond: 35 },
      ];
      const projects = [];
      for (const [i, patch] of settings.entries()) {
        const project = await makeProject();
        await contract.store.projectUpdate({ projectId: project.id, patch });
        await create(project, Array.from({ length: 15 }, (_, n) => job(`job_cap${i}_${n}`, { runAt: T0 + n })));
        projects.push({ project: { ...project, ...patch }, held: i % 2 });
      }
      const heldByProject = Object.fromEntries(projects.filter((p) => p.held > 0).map((p) => [p.project.id, p.held]));
      const claimed = await contract.store.jobClaimDue({ now: T0 + 20, dueBy: T0 + 20, limit: 1_000, workerId: 'wrk_cap', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject, claimRule: claimRule(globalSlots) });
      const counts = projects.map(({ project }) => claimed.filter((j) => j.projectId === project.id).length);
      expect(counts).toEqual(projects.map(({ project, held }) => claimLimit(project, globalSlots) - held));
      expect(counts).toEqual([2, 5, 10, 0, 3, 3]);
      // The lease is leaseMs of the project (its timeout plus the margin), from the claim's now.
      for (const j of claimed) expect(j.leaseExpiresAt).toBe(T0 + 20 + leaseMs({ deliveryTimeoutMs: 30_000 }));
    });

    it('claims the first startable due jobs of each project with their attempt STARTED, the rest DISPATCHED', async () => {
      const a = await makeProject();
      const b = await makeProject();
      const c = await makeProject();
      await create(a, [1, 2, 3].map((i) => job(`job_sa${i}`, { runAt: T0 + i })));
      await create(b, [job('job_sb1', { runAt: T0 + 1 }), job('job_sb2', { runAt: T0 + 25 })]);
      await create(c, [job('job_sc1', { runAt: T0 + 1 })]);
      const claimed = await contract.store.jobClaimDue({
        now: T0 + 10,
        dueBy: T0 + 35,
        limit: 100,
        workerId: 'wrk_s',
        leaseExtraMs: 30_000,
        excludeProjectIds: [],
        heldByProject: {},
        claimRule: claimRule(256),
        // Two of a, one of b (its second is not due yet: claimed ahead, DISPATCHED), none of c.
        startable: { byProject: { [a.id]: 2, [b.id]: 5 }, attemptPrefix: 'att_claimX' },
      });
      const started = claimed.filter((j) => j.started).map((j) => j.id);
      // A store may ignore startable; one that honours it starts exactly these.
      expect([[], ['job_sa1', 'job_sa2', 'job_sb1']]).toContainEqual(started.sort());
      expect(claimed.map((j) => j.id).sort()).toEqual(['job_sa1', 'job_sa2', 'job_sa3', 'job_sb1', 'job_sb2', 'job_sc1']);
      for (const j of claimed.filter((x) => x.started)) {
        expect(j).toMatchObject({ status: 'STARTED', attemptCount: 1, started: { attemptNumber: 1, startedAt: T0 + 10 } });
        expect(j.started!.attemptId).toBe(`att_claimX${j.seq}`);
        expect(await contract.store.attemptListByJob(j.id)).toEqual([expect.objectContaining({ id: j.started!.attemptId, attemptNumber: 1, startedAt: T0 + 10 })]);
        expect(await contract.store.attemptFinish({ jobId: j.id, attemptId: j.started!.attemptId, workerId: 'wrk_s', now: T0 + 20, result: success, next: { kind: 'complete' } })).toBe(true);
      }
      for (const j of claimed.filter((x) => !x.started)) expect((await contract.store.jobGet({ projectId: j.projectId, jobId: j.id }))?.status).toBe('DISPATCHED');
    });

    it("starts no more at a claim than the project's concurrency in the store allows, less what the worker holds, whatever the worker reserved", async () => {
      // The worker reserved from settings it loaded before the concurrency was lowered (to 1 here,
      // on this or another instance): the store's row decides.
      const lowered = await makeProject();
      await contract.store.projectUpdate({ projectId: lowered.id, patch: { deliveryConcurrency: 1 } });
      const held = await makeProject();
      await contract.store.projectUpdate({ projectId: held.id, patch: { deliveryConcurrency: 3 } });
      await create(lowered, [1, 2, 3].map((i) => job(`job_low${i}`, { runAt: T0 + i })));
      await create(held, [1, 2, 3].map((i) => job(`job_held${i}`, { runAt: T0 + i })));
      const claimed = await contract.store.jobClaimDue({
        now: T0 + 10,
        dueBy: T0 + 10,
        limit: 100,
        workerId: 'wrk_low',
        leaseExtraMs: 30_000,
        excludeProjectIds: [],
        // Two of `held` run here already: one slot of its three is left.
        heldByProject: { [held.id]: 2 },
        claimRule: claimRule(256),
        startable: { byProject: { [lowered.id]: 3, [held.id]: 3 }, attemptPrefix: 'att_low' },
      });
      const started = claimed.filter((j) => j.started).map((j) => j.id).sort();
      expect([[], ['job_held1', 'job_low1']]).toContainEqual(started);
    });

    it('claims due jobs earliest first, up to the limit, and never future ones', async () => {
      const project = await makeProject();
      await create(project, [
        job('job_d3', { runAt: T0 + 3 }),
        job('job_d1', { runAt: T0 + 1 }),
        job('job_future', { runAt: T0 + 86_400_000 * 30 }),
        job('job_d2', { runAt: T0 + 2 }),
      ]);
      expect(await contract.store.jobNextDueAt({ after: 0 })).toBe(T0 + 1);
      expect(await contract.store.jobNextDueAt({ after: T0 + 1 })).toBe(T0 + 2);
      const first = await claim(T0 + 10, 2);
      expect(first.map((j) => j.id)).toEqual(['job_d1', 'job_d2']);
      expect(first[0]).toMatchObject({ status: 'DISPATCHED', leaseExpiresAt: T0 + 10 + 30_000 + 30_000, updatedAt: T0 + 10 });
      expect((await claim(T0 + 10)).map((j) => j.id)).toEqual(['job_d3']);
      expect(await claim(T0 + 10)).toEqual([]);
      expect(await contract.store.jobNextDueAt({ after: 0 })).toBe(T0 + 86_400_000 * 30);
      expect(await contract.store.jobNextDueAt({ after: T0 + 86_400_000 * 30 })).toBeNull();
      // Every status is counted, those no job is in as 0.
      expect(await contract.store.jobCountByStatus()).toEqual({ QUEUED: 1, DISPATCHED: 3, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
    });

    it('skips the projects it is told to', async () => {
      const busy = await makeProject();
      const idle = await makeProject();
      await create(busy, [job('job_busy', { runAt: T0 })]);
      await create(idle, [job('job_idle', { runAt: T0 + 1 })]);
      expect((await claim(T0 + 5, 10, 'wrk_a', T0 + 5, [busy.id])).map((j) => j.id)).toEqual(['job_idle']);
      expect((await claim(T0 + 5)).map((j) => j.id)).toEqual(['job_busy']);
    });

    it('steps over a paused project\'s due jobs, and claims them earliest first once it resumes', async () => {
      const paused = await makeProject();
      const running = await makeProject();
      await create(paused, [job('job_p2', { runAt: T0 + 2 }), job('job_p1', { runAt: T0 + 1 })]);
      await create(running, [job('job_r', { runAt: T0 + 3 })]);
      expect(await contract.store.projectUpdate({ projectId: paused.id, patch: { paused: true } })).toMatchObject({ paused: true });
      expect((await claim(T0 + 5)).map((j) => j.id)).toEqual(['job_r']);
      expect(await claim(T0 + 5)).toEqual([]);
      expect(await contract.store.jobGet({ projectId: paused.id, jobId: 'job_p1' })).toMatchObject({ status: 'QUEUED' });
      await contract.store.projectUpdate({ projectId: paused.id, patch: { paused: false } });
      expect((await claim(T0 + 6)).map((j) => j.id)).toEqual(['job_p1', 'job_p2']);
    });

    it("holds a paused project's jobs in batches and releases them earliest due first; jobs queued while paused are held at once", async () => {
      const project = await makeProject();
      await create(project, Array.from({ length: 25 }, (_, i) => job(`job_h${String(i).padStart(2, '0')}`, { runAt: T0 + 100 - i })));
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
      const cursors: (number | null)[] = [];
      for (let afterSeq: number | null = 0; afterSeq !== null; ) {
        afterSeq = (await contract.store.jobHoldBatch({ projectId: project.id, afterSeq, limit: 10 })).nextAfterSeq;
        cursors.push(afterSeq);
      }
      expect(cursors).toHaveLength(3);
      // Created while paused (and retried, requeued…): held from the start.
      await create(project, [job('job_new', { runAt: T0 })]);
      expect(await contract.store.jobNextDueAt({ after: 0 })).toBeNull();
      // Resumed (the flag alone): still held until released, and listed as such.
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: false } });
      expect(await contract.store.projectListWithHeldJobs()).toEqual([project.id]);
      expect(await claim(T0 + 200)).toEqual([]);
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 5 })).toBe(5);
      // Earliest due first: job_new (T0), then job_h24 (T0 + 76) …
      expect((await claim(T0 + 200, 100)).map((j) => j.id)).toEqual(['job_new', 'job_h24', 'job_h23', 'job_h22', 'job_h21']);
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 100 })).toBe(21);
      expect(await contract.store.projectListWithHeldJobs()).toEqual([]);
      expect(await claim(T0 + 200, 100)).toHaveLength(21);
      // Paused again, a release changes nothing.
      await create(project, [job('job_late', { runAt: T0 })]);
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
      await contract.store.jobHoldBatch({ projectId: project.id, afterSeq: 0, limit: 10 });
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(0);
    });

    it('a job claimed before its project was paused is not started but QUEUED again as it was; a started one is answered as before', async () => {
      const project = await makeProject();
      await create(project, [job('job_held', { runAt: T0 + 1 }), job('job_sent', { runAt: T0 })]);
      await claim(T0 + 5);
      expect(await contract.store.attemptStart({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 5, leaseExpiresAt: T0 + 1000 })).toEqual({
        attemptNumber: 1,
      });
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
      expect(await contract.store.attemptStart({ jobId: 'job_held', attemptId: 'att_held', workerId: 'wrk_a', now: T0 + 6, leaseExpiresAt: T0 + 1000 })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_held' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1, attemptCount: 0 });
      expect(await contract.store.attemptListByJob('job_held')).toEqual([]);
      // The attempt that had started (its request may be out) keeps its answer and its lease.
      expect(await contract.store.attemptStart({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 6, leaseExpiresAt: T0 + 1000 })).toEqual({
        attemptNumber: 1,
      });
      expect(await contract.store.attemptFinish({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 7, result: success, next: { kind: 'complete' } })).toBe(true);
      expect(await contract.store.jobListDispatchedTo({ workerId: 'wrk_a' })).toEqual([]);
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: false } });
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(1);
      expect((await claim(T0 + 8)).map((j) => j.id)).toEqual(['job_held']);
    });

    it("steps over a backed-off project's jobs until its Retry-After ends, and gives back one claimed before it", async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(project, [job('job_b1', { runAt: T0 }), job('job_b2', { runAt: T0 + 1 })]);
      await create(other, [job('job_o', { runAt: T0 + 2 })]);
      expect((await claim(T0 + 5, 1)).map((j) => j.id)).toEqual(['job_b1']);
      await contract.store.projectBackoff({ projectId: project.id, until: T0 + 2_000, now: T0 + 5 });
      // A shorter hold recorded later does not shorten it.
      await contract.store.projectBackoff({ projectId: project.id, until: T0 + 1_000, now: T0 + 6 });
      expect((await claim(T0 + 10)).map((j) => j.id)).toEqual(['job_o']);
      expect(await contract.store.attemptStart({ jobId: 'job_b1', attemptId: 'att_b1', workerId: 'wrk_a', now: T0 + 10, leaseExpiresAt: T0 + 60_000 })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_b1' })).toMatchObject({ status: 'QUEUED', runAt: T0, attemptCount: 0 });
      expect(await claim(T0 + 1_999)).toEqual([]);
      expect((await claim(T0 + 2_000)).map((j) => j.id)).toEqual(['job_b1', 'job_b2']);
    });

    it('lists the jobs claimed by a worker and not yet started', async () => {
      const project = await makeProject();
      await create(project, [job('job_mine1'), job('job_mine2'), job('job_theirs')]);
      await claim(T0, 2, 'wrk_me');
      await claim(T0, 1, 'wrk_them');
      await contract.store.attemptStart({ jobId: 'job_mine2', attemptId: 'att_mine2', workerId: 'wrk_me', now: T0, leaseExpiresAt: T0 + 1000 });
      const mine = await contract.store.jobListDispatchedTo({ workerId: 'wrk_me' });
      expect(mine.map((j) => [j.id, j.status])).toEqual([['job_mine1', 'DISPATCHED']]);
      expect(mine[0]!.leaseExpiresAt).toBe(T0 + 30_000 + 30_000);
    });

    it('a start asked again for the same attempt answers that attempt and counts it once; another attempt id is refused', async () => {
      const project = await makeProject();
      await create(project, [job('job_again')]);
      await claim(T0);
      const start = (attemptId: string) => contract.store.attemptStart({ jobId: 'job_again', attemptId, workerId: 'wrk_a', now: T0 + 1, leaseExpiresAt: T0 + 1000 });
      expect(await start('att_again1')).toEqual({ attemptNumber: 1 });
      expect(await start('att_again1')).toEqual({ attemptNumber: 1 });
      expect(await start('att_other')).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_again' })).toMatchObject({ status: 'STARTED', attemptCount: 1 });
      expect((await contract.store.attemptListByJob('job_again')).map((a) => a.id)).toEqual(['att_again1']);
    });

    it('a released attempt queues the job at once without spending its retry budget', async () => {
      const project = await makeProject();
      await create(project, [job('job_rel', { maxRetries: 0 })]);
      await claim(T0);
      await contract.store.attemptStart({ jobId: 'job_rel', attemptId: 'att_rel1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
      const aborted = { outcome: 'network_error' as const, statusCode: null, durationMs: 9, error: 'aborted', responseBody: null };
      expect(await contract.store.attemptFinish({ jobId: 'job_rel', attemptId: 'att_rel1', workerId: 'wrk_a', now: T0 + 9, result: aborted, next: { kind: 'release' } })).toBe(true);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_rel' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 9, attemptCount: 1 });
      await claim(T0 + 9);
      expect(await contract.store.attemptStart({ jobId: 'job_rel', attemptId: 'att_rel2', workerId: 'wrk_a', now: T0 + 9, leaseExpiresAt: T0 + 1000 })).toEqual({ attemptNumber: 1 });
    });

    it('claims ahead up to dueBy, leasing from now', async () => {
      const project = await makeProject();
      await create(project, [job('job_a1', { runAt: T0 + 20 }), job('job_a2', { runAt: T0 + 30 })]);
      const claimed = await claim(T0, 10, 'wrk_a', T0 + 25);
      expect(claimed.map((j) => [j.id, j.runAt, j.leaseExpiresAt])).toEqual([['job_a1', T0 + 20, T0 + 60_000]]);
    });

    it('a claimed job can no longer be cancelled or rescheduled; a cancelled one is never claimed', async () => {
      const project = await makeProject();
      await create(project, [job('job_k1'), job('job_k2')]);
      expect((await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_k2', now: T0 })).ok).toBe(true);
      expect((await claim(T0)).map((j) => j.id)).toEqual(['job_k1']);
      expect(await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_k1', now: T0 })).toEqual({ ok: false, status: 'DISPATCHED' });
      expect(await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_k1', scheduledFor: null, now: T0 })).toEqual({ ok: false, status: 'DISPATCHED' });
    });

    it('starts and completes an attempt for the lease holder only', async () => {
      const project = await makeProject();
      await create(project, [job('job_s1')]);
      await claim(T0);
      expect(await contract.store.attemptStart({ jobId: 'job_s1', attemptId: 'att_x', workerId: 'wrk_b', now: T0, leaseExpiresAt: T0 + 1000 })).toBeNull();
      expect(await contract.store.attemptStart({ jobId: 'job_s1', attemptId: 'att_1', workerId: 'wrk_a', now: T0 + 1, leaseExpiresAt: T0 + 1000 })).toEqual({ attemptNumber: 1 });
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_s1' }))!).toMatchObject({ status: 'STARTED', attemptCount: 1 });
      expect(await contract.store.attemptListByJob('job_s1')).toEqual([
        { id: 'att_1', jobId: 'job_s1', attemptNumber: 1, startedAt: T0 + 1, finishedAt: null, outcome: null, statusCode: null, durationMs: null, error: null, responseBody: null, acceptedAt: null, reportedAt: null, reportBy: null },
      ]);
      const wrong = await contract.store.attemptFinish({ jobId: 'job_s1', attemptId: 'att_other', workerId: 'wrk_a', now: T0 + 2, result: success, next: { kind: 'complete' } });
      expect(wrong).toBe(false);
      const ok = await contract.store.attemptFinish({ jobId: 'job_s1', attemptId: 'att_1', workerId: 'wrk_a', now: T0 + 3, result: success, next: { kind: 'complete' } });
      expect(ok).toBe(true);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_s1' })).toMatchObject({ status: 'COMPLETED', completedAt: T0 + 3, lastError: null });
      expect((await contract.store.attemptListByJob('job_s1'))[0]).toMatchObject({ finishedAt: T0 + 3, outcome: 'success', statusCode: 200, durationMs: 5, responseBody: 'ok' });
    });

    it('a failed attempt requeues with its runAt, or fails the job', async () => {
      const project = await makeProject();
      await create(project, [job('job_f1', { maxRetries: 1 })]);
      await claim(T0);
      await contract.store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
      await contract.store.attemptFinish({ jobId: 'job_f1', attemptId: 'att_f1', workerId: 'wrk_a', now: T0 + 5, result: failure, next: { kind: 'retry', runAt: T0 + 500 } });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 500, queuedAt: T0 + 5, lastError: 'HTTP 500' });
      expect(await claim(T0 + 499)).toEqual([]);
      await claim(T0 + 500);
      expect(await contract.store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f2', workerId: 'wrk_a', now: T0 + 500, leaseExpiresAt: T0 + 2000 })).toEqual({ attemptNumber: 2 });
      // An outcome without a message is its own lastError.
      const timeout = { outcome: 'timeout' as const, statusCode: null, durationMs: 10, error: null, responseBody: null };
      await contract.store.attemptFinish({ jobId: 'job_f1', attemptId: 'att_f2', workerId: 'wrk_a', now: T0 + 510, result: timeout, next: { kind: 'fail' } });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ status: 'FAILED', failedAt: T0 + 510, attemptCount: 2, lastError: 'timeout' });
      const retried = await contract.store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_f1', now: T0 + 600 });
      expect(retried).toMatchObject({ ok: true, job: { status: 'QUEUED', runAt: T0 + 600, failedAt: null } });
      await claim(T0 + 600);
      expect(await contract.store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f3', workerId: 'wrk_a', now: T0 + 600, leaseExpiresAt: T0 + 2000 })).toEqual({ attemptNumber: 1 });
    });

    it("keeps a job's trace context through claims and a retry; a job without one reads null", async () => {
      const project = await makeProject();
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const tracestate = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
      await create(project, [job('job_t1', { traceparent, tracestate, maxRetries: 0 }), job('job_t2', { traceparent, tracestate: null }), job('job_t0')]);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_t1' })).toMatchObject({ traceparent, tracestate });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_t0' })).toMatchObject({ traceparent: null, tracestate: null });
      const claimed = await claim(T0);
      expect(claimed.map((j) => [j.id, j.traceparent, j.tracestate])).toEqual([
        ['job_t1', traceparent, tracestate],
        ['job_t2', traceparent, null],
        ['job_t0', null, null],
      ]);
      await contract.store.attemptStart({ jobId: 'job_t1', attemptId: 'att_t1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
      await contract.store.attemptFinish({ jobId: 'job_t1', attemptId: 'att_t1', workerId: 'wrk_a', now: T0 + 5, result: failure, next: { kind: 'fail' } });
      expect(await contract.store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_t1', now: T0 + 10 })).toMatchObject({ ok: true, job: { traceparent, tracestate } });
      expect((await claim(T0 + 10)).map((j) => [j.id, j.traceparent, j.tracestate])).toEqual([['job_t1', traceparent, tracestate]]);
      // Created started (a store that starts jobs due at once for the dispatching worker), it carries its context too.
      const immediate = await create(project, [job('job_t3', { traceparent, tracestate })], {
        startDueNow: { workerId: 'wrk_b', leaseExpiresAt: T0 + 60_000, limit: 1 },
      });
      if (immediate.kind === 'created' && immediate.started.length === 0) await claim(T0, 10, 'wrk_b');
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_t3' })).toMatchObject({ traceparent, tracestate });
    });

    it('creates jobs due at once with their first attempt STARTED for the worker, up to the limit, and none for a paused or held-back project', async () => {
      const start = { workerId: 'wrk_s', leaseExpiresAt: T0 + 60_000, limit: 2 };
      const project = await makeProject();
      const result = await create(project, [job('job_s1'), job('job_s2'), job('job_s3'), job('job_s4', { runAt: T0 + 5_000 })], { startDueNow: start });
      if (result.kind !== 'created') throw new Error('not created');
      // A store may ignore startDueNow; one that honours it starts the first due jobs, up to the limit.
      const started = result.started.map((s) => s.jobId);
      expect([[], ['job_s1', 'job_s2']]).toContainEqual(started);
      for (const s of result.started) {
        expect(await contract.store.jobGet({ projectId: project.id, jobId: s.jobId })).toMatchObject({ status: 'STARTED', attemptCount: 1, runAt: T0, createdAt: T0 });
        expect(await contract.store.attemptListByJob(s.jobId)).toEqual([expect.objectContaining({ id: s.attemptId, attemptNumber: 1, startedAt: T0, finishedAt: null })]);
        // Leased to the worker: its outcome is recorded as any started attempt's.
        expect(await contract.store.attemptFinish({ jobId: s.jobId, attemptId: s.attemptId, workerId: 'wrk_s', now: T0 + 5, result: success, next: { kind: 'complete' } })).toBe(true);
      }
      for (const jobId of ['job_s3', 'job_s4']) expect((await contract.store.jobGet({ projectId: project.id, jobId }))?.status).toBe('QUEUED');
      // Paused, or held back by a receiver's Retry-After: created QUEUED, none started.
      const paused = await makeProject();
      await contract.store.projectUpdate({ projectId: paused.id, patch: { paused: true } });
      const backedOff = await makeProject();
      await contract.store.projectBackoff({ projectId: backedOff.id, until: T0 + 1_000, now: T0 });
      for (const [p, id] of [[paused, 'job_sp'], [backedOff, 'job_sb']] as const) {
        const held = await create(p, [job(id)], { startDueNow: start });
        expect(held.kind === 'created' && held.started).toEqual([]);
        expect((await contract.store.jobGet({ projectId: p.id, jobId: id }))?.status).toBe('QUEUED');
      }
    });

    it('starts jobs at creation in due order, none after the first that never is (a keyed job), and claims ties in the order created (SPEC section 10)', async () => {
      const start = { workerId: 'wrk_s', leaseExpiresAt: T0 + 60_000, limit: 3 };
      const project = await makeProject();
      await contract.store.projectUpdate({ projectId: project.id, patch: { keyConcurrency: 5 } });
      // Due order: job_o0 (a second ago), job_o1, job_ok (keyed), job_o2, job_o3 (each due now, created in that order).
      const jobs = [job('job_o1'), job('job_o0', { runAt: T0 - 1_000 }), job('job_ok', { concurrencyKey: 'k1' }), job('job_o2'), job('job_o3')];
      const result = await create(project, jobs, { startDueNow: start });
      if (result.kind !== 'created') throw new Error('not created');
      // A store may ignore startDueNow; one that honours it starts those ahead of the keyed job in due order.
      expect([[], ['job_o1', 'job_o0']]).toContainEqual(result.started.map((s) => s.jobId));
      // Claimed one at a time, jobs due at one instant go in the order they were created, keyed or not.
      const other = await makeProject();
      await contract.store.projectUpdate({ projectId: other.id, patch: { keyConcurrency: 5 } });
      await create(other, [job('job_t1', { concurrencyKey: 'k2' }), job('job_t2', { concurrencyKey: 'k1' }), job('job_t3'), job('job_t4', { concurrencyKey: 'k2' }), job('job_t5')]);
      const order: string[] = [];
      for (let i = 0; i < 5; i++) order.push(...(await claim(T0, 1, 'wrk_a', T0, [project.id])).map((j) => j.id));
      expect(order).toEqual(['job_t1', 'job_t2', 'job_t3', 'job_t4', 'job_t5']);
    });

    it('rescues expired leases: DISPATCHED back to QUEUED without an attempt, STARTED as lease_expired', async () => {
      const project = await makeProject();
      await create(project, [job('job_l1'), job('job_l2', { maxRetries: 1 }), job('job_l3', { maxRetries: 0 })]);
      await claim(T0); // leases end at T0 + 60 000
      await contract.store.attemptStart({ jobId: 'job_l2', attemptId: 'att_l2', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
      await contract.store.attemptStart({ jobId: 'job_l3', attemptId: 'att_l3', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
      expect(await contract.store.jobRescueExpiredLeases({ now: T0 + 59_999, expiredBefore: T0 + 59_999, limit: 10, retryAt: () => 0 })).toEqual([]);
      const seen: string[] = [];
      const rescued = await contract.store.jobRescueExpiredLeases({
        now: T0 + 60_001,
        expiredBefore: T0 + 60_001,
        limit: 10,
        retryAt: (lease, p) => {
          seen.push(`${lease.job.id}:${lease.attemptNumber}:${p.retryInitialDelayMs}`);
          return lease.attemptNumber! <= lease.job.maxRetries ? T0 + 90_000 : null;
        },
      });
      expect(rescued.map((r) => [r.job.id, r.attemptNumber]).sort()).toEqual([['job_l1', null], ['job_l2', 1], ['job_l3', 1]]);
      expect(seen.sort()).toEqual(['job_l2:1:30000', 'job_l3:1:30000']);
      // Never started: due when it was (a claim given back is not a new due time, SPEC section 2).
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_l1' })).toMatchObject({ status: 'QUEUED', runAt: T0, queuedAt: T0, attemptCount: 0 });
      const lost = 'lease expired: the worker stopped before the attempt finished';
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_l2' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 90_000, attemptCount: 1, lastError: lost });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_l3' })).toMatchObject({ status: 'FAILED', failedAt: T0 + 60_001, lastError: lost });
      // Timed from the attempt's start to the rescue.
      expect((await contract.store.attemptListByJob('job_l2'))[0]).toMatchObject({ outcome: 'lease_expired', finishedAt: T0 + 60_001, durationMs: 60_001, statusCode: null, error: lost });
      // The worker that lost its lease answers late: nothing changes.
      const late = await contract.store.attemptFinish({ jobId: 'job_l2', attemptId: 'att_l2', workerId: 'wrk_a', now: T0 + 60_002, result: success, next: { kind: 'complete' } });
      expect(late).toBe(false);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_l2' })).toMatchObject({ status: 'QUEUED' });
      expect((await contract.store.attemptListByJob('job_l2'))[0]).toMatchObject({ outcome: 'lease_expired' });
    });

    describe('async completion (SPEC section 11)', () => {
      const accepted = { statusCode: 202, responseBody: 'accepted' };
      /** A job STARTED by wrk_a at T0 and accepted with 202 at T0 + 10, its report due by T0 + 1 000 010. */
      async function acceptedJob(id: string, maxRetries = 1) {
        const project = await makeProject();
        await create(project, [job(id, { maxRetries })]);
        await claim(T0);
        await contract.store.attemptStart({ jobId: id, attemptId: `att_${id}`, workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
        const ok = await contract.store.attemptAccept({ jobId: id, attemptId: `att_${id}`, workerId: 'wrk_a', now: T0 + 10, deadline: T0 + 1_000_010, ...accepted });
        return { project, ok, attemptId: `att_${id}` };
      }
      const rescue = (now: number, expiredBefore = now) => contract.store.jobRescueExpiredLeases({ now, expiredBefore, limit: 10, retryAt: () => now + 5 });

      it('an accept is the lease holder\'s only; it leaves the job STARTED and the attempt pending, its deadline in the lease', async () => {
        const { project, ok, attemptId } = await acceptedJob('job_a1');
        expect(ok).toBe(true);
        expect(await contract.store.attemptAccept({ jobId: 'job_a1', attemptId, workerId: 'wrk_a', now: T0 + 11, deadline: T0 + 5, ...accepted })).toBe(false);
        expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_a1' })).toMatchObject({ status: 'STARTED', attemptCount: 1, updatedAt: T0 });
        expect(await contract.store.attemptListByJob('job_a1')).toEqual([
          expect.objectContaining({ id: attemptId, outcome: null, finishedAt: null, statusCode: 202, responseBody: 'accepted', acceptedAt: T0 + 10, reportedAt: null, reportBy: T0 + 1_000_010 }),
        ]);
        expect(await contract.store.attemptGetWithJob({ jobId: 'job_a1', attemptId })).toMatchObject({ job: { id: 'job_a1', status: 'STARTED' }, project: { id: project.id }, attempt: { id: attemptId, reportBy: T0 + 1_000_010 } });
        expect(await contract.store.attemptGetWithJob({ jobId: 'job_other', attemptId })).toBeNull();
        // The worker no longer holds it: its renewals and its finish change nothing.
        await contract.store.jobLeaseRenew({ workerId: 'wrk_a', leases: [{ jobId: 'job_a1', leaseExpiresAt: T0 + 100 }] });
        expect(await contract.store.attemptFinish({ jobId: 'job_a1', attemptId, workerId: 'wrk_a', now: T0 + 20, result: success, next: { kind: 'complete' } })).toBe(false);
        expect((await contract.store.attemptListByJob('job_a1'))[0]).toMatchObject({ reportBy: T0 + 1_000_010, outcome: null });
      });

      it('a report ends the pending attempt once, keeping its 202; "running" moves the deadline; nothing applies past the deadline', async () => {
        const { project, attemptId } = await acceptedJob('job_a2');
        const running = await contract.store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 500, report: { kind: 'running', deadline: T0 + 2_000_000 } });
        expect(running).toBe(true);
        expect((await contract.store.attemptListByJob('job_a2'))[0]).toMatchObject({ reportBy: T0 + 2_000_000, reportedAt: T0 + 500, outcome: null });
        const done = { outcome: 'success' as const, statusCode: null, durationMs: 1_000, error: null, responseBody: null };
        expect(await contract.store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_000, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(true);
        expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_a2' })).toMatchObject({ status: 'COMPLETED', completedAt: T0 + 1_000 });
        expect((await contract.store.attemptListByJob('job_a2'))[0]).toMatchObject({ outcome: 'success', statusCode: 202, responseBody: 'accepted', reportedAt: T0 + 1_000, finishedAt: T0 + 1_000, reportBy: null });
        // Once ended, no report applies.
        expect(await contract.store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_001, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(false);
        expect(await contract.store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_001, report: { kind: 'running', deadline: T0 + 9_000_000 } })).toBe(false);

        const late = await acceptedJob('job_a3');
        expect(await contract.store.attemptReport({ jobId: 'job_a3', attemptId: late.attemptId, now: T0 + 1_000_010, report: { kind: 'running', deadline: T0 + 3_000_000 } })).toBe(false);
        expect(await contract.store.attemptReport({ jobId: 'job_a3', attemptId: late.attemptId, now: T0 + 1_000_010, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(false);
        expect(await contract.store.jobGet({ projectId: late.project.id, jobId: 'job_a3' })).toMatchObject({ status: 'STARTED' });
      });

      it('a failure report retries or fails the job as a failed attempt does', async () => {
        const { project, attemptId } = await acceptedJob('job_a4', 1);
        const failed = { outcome: 'http_error' as const, statusCode: null, durationMs: 50, error: 'out of disk', responseBody: null };
        expect(await contract.store.attemptReport({ jobId: 'job_a4', attemptId, now: T0 + 50, report: { kind: 'finish', result: failed, next: { kind: 'retry', runAt: T0 + 1_050 } } })).toBe(true);
        expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_a4' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1_050, lastError: 'out of disk' });
        expect((await contract.store.attemptListByJob('job_a4'))[0]).toMatchObject({ outcome: 'http_error', statusCode: 202, error: 'out of disk', reportedAt: T0 + 50 });
        expect((await claim(T0 + 1_050)).map((j) => j.id)).toEqual(['job_a4']);
      });

      it('the lease rescue ends an unreported attempt as timeout at its deadline, never earlier, even when taking over every lease at start', async () => {
        const { project, attemptId } = await acceptedJob('job_a5', 1);
        // A start's take-over of every lease (expiredBefore far ahead) leaves a deadline still ahead alone.
        expect(await rescue(T0 + 20, Number.MAX_SAFE_INTEGER)).toEqual([]);
        expect(await rescue(T0 + 1_000_010)).toEqual([]);
        const rescued = await rescue(T0 + 1_000_011);
        expect(rescued).toEqual([expect.objectContaining({ attemptNumber: 1, awaitedReport: true })]);
        expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_a5' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1_000_016 });
        expect((await contract.store.attemptListByJob('job_a5'))[0]).toMatchObject({
          outcome: 'timeout',
          statusCode: 202,
          responseBody: 'accepted',
          reportedAt: null,
          finishedAt: T0 + 1_000_011,
          error: expect.stringContaining('no report within asyncCompletionTimeoutMs'),
        });
        expect(await contract.store.attemptReport({ jobId: 'job_a5', attemptId, now: T0 + 1_000_012, report: { kind: 'running', deadline: T0 + 9_000_000 } })).toBe(false);
      });
    });

    it('renews leases for the holder, and releases DISPATCHED jobs on shutdown', async () => {
      const project = await makeProject();
      await create(project, [job('job_n1'), job('job_n2')]);
      await claim(T0);
      await contract.store.attemptStart({ jobId: 'job_n2', attemptId: 'att_n2', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
      await contract.store.jobLeaseRenew({ workerId: 'wrk_a', leases: [{ jobId: 'job_n1', leaseExpiresAt: T0 + 500_000 }, { jobId: 'job_n2', leaseExpiresAt: T0 + 500_000 }] });
      await contract.store.jobLeaseRenew({ workerId: 'wrk_b', leases: [{ jobId: 'job_n1', leaseExpiresAt: T0 + 1 }] });
      expect(await contract.store.jobRescueExpiredLeases({ now: T0 + 400_000, expiredBefore: T0 + 400_000, limit: 10, retryAt: () => null })).toEqual([]);
      expect(await contract.store.jobReleaseDispatched({ workerId: 'wrk_a', now: T0 + 7 })).toBe(1);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_n1' })).toMatchObject({ status: 'QUEUED', runAt: T0, queuedAt: T0 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_n2' })).toMatchObject({ status: 'STARTED' });
    });
  });
}
