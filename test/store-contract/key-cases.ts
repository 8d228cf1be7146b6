/** Contract cases of concurrency keys (SPEC section 15): see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { ClaimedJob } from '../../src/store/store.js';
import type { ContractContext } from './contract-context.js';

export function keyCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('concurrency keys', () => {
    const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
    const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
    const claim = (now: number, limit = 100, workerId = 'wrk_k') =>
      contract.store.jobClaimDue({ now, dueBy: now, limit, workerId, leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    const ids = (jobs: ClaimedJob[]) => jobs.map((j) => j.id).sort();
    /** Starts a claimed job's attempt and finishes it with `next`. */
    async function run(id: string, now: number, next: { kind: 'complete' } | { kind: 'retry'; runAt: number } | { kind: 'fail' }, workerId = 'wrk_k') {
      const attemptId = `att_${id}_${now}`;
      expect(await contract.store.attemptStart({ jobId: id, attemptId, workerId, now, leaseExpiresAt: now + 60_000 })).not.toBeNull();
      expect(await contract.store.attemptFinish({ jobId: id, attemptId, workerId, now: now + 1, result: next.kind === 'complete' ? success : failure, next })).toBe(true);
    }

    it('keyConcurrency 1: a key runs one job at a time, in due order; a job waiting for a retry holds its key; other keys and jobs without a key are never held', async () => {
      const project = await makeProject();
      await create(project, [
        job('job_a2', { runAt: T0 + 2, concurrencyKey: 'a' }),
        job('job_a1', { runAt: T0 + 1, concurrencyKey: 'a' }),
        job('job_a3', { runAt: T0 + 3, concurrencyKey: 'a' }),
        job('job_b1', { runAt: T0 + 1, concurrencyKey: 'b' }),
        job('job_free', { runAt: T0 + 1 }),
      ]);
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_a1' }))!.concurrencyKey).toBe('a');
      expect((await contract.store.jobGet({ projectId: project.id, jobId: 'job_free' }))!.concurrencyKey).toBeNull();
      expect(ids(await claim(T0 + 10))).toEqual(['job_a1', 'job_b1', 'job_free']);
      // a1 fails and waits for its retry: a2, due long before, waits behind it.
      await run('job_a1', T0 + 11, { kind: 'retry', runAt: T0 + 1_000 });
      expect(await claim(T0 + 20)).toEqual([]);
      expect(ids(await claim(T0 + 1_000))).toEqual(['job_a1']);
      await run('job_a1', T0 + 1_001, { kind: 'fail' });
      // A FAILED job is final: the key's next job goes.
      expect(ids(await claim(T0 + 1_010))).toEqual(['job_a2']);
      expect(await claim(T0 + 1_011)).toEqual([]);
      await run('job_a2', T0 + 1_012, { kind: 'complete' });
      expect(ids(await claim(T0 + 1_020))).toEqual(['job_a3']);
    });

    it("a claim and a new job of the key at the same moment never give the key two turns", async () => {
      // The new job's turn is reckoned (its key's room, then its key's order) while the claim of
      // the key's first job commits: both readings must see the claim, or neither.
      const project = await makeProject();
      const doubled: string[] = [];
      for (let i = 0; i < 60; i++) {
        const key = `race${i}`;
        await create(project, [job(`job_r${i}a`, { runAt: T0 + i, concurrencyKey: key })]);
        const [first] = await Promise.all([claim(T0 + 1_000), create(project, [job(`job_r${i}b`, { runAt: T0 + i, concurrencyKey: key })])]);
        const second = await claim(T0 + 1_000);
        const claimedOfKey = [...first, ...second].filter((j) => j.concurrencyKey === key).map((j) => j.id);
        if (claimedOfKey.length > 1) doubled.push(claimedOfKey.join('+'));
        for (const j of [...first, ...second]) await run(j.id, T0 + 1_001, { kind: 'complete' });
        const rest = await claim(T0 + 1_002);
        for (const j of rest) await run(j.id, T0 + 1_003, { kind: 'complete' });
      }
      expect(doubled).toEqual([]);
    });

    it('a job created after another of its key but due before it takes its turn first, in one batch or two', async () => {
      const project = await makeProject();
      await create(project, [job('job_k2late', { runAt: T0 + 30, concurrencyKey: 'k2' }), job('job_k1', { runAt: T0 + 96, concurrencyKey: 'k1' }), job('job_k2now', { runAt: T0, concurrencyKey: 'k2' })]);
      await create(project, [job('job_k3late', { runAt: T0 + 30, concurrencyKey: 'k3' })]);
      await create(project, [job('job_k3now', { runAt: T0, concurrencyKey: 'k3' })]);
      expect(ids(await claim(T0 + 1))).toEqual(['job_k2now', 'job_k3now']);
      expect(ids(await claim(T0 + 200))).toEqual(['job_k1']);
    });

    it("keyConcurrency 3: up to three of a key's jobs at once, the next as one ends", async () => {
      const project = await makeProject();
      await contract.store.projectUpdate({ projectId: project.id, patch: { keyConcurrency: 3 } });
      await create(project, Array.from({ length: 6 }, (_, i) => job(`job_k${i}`, { runAt: T0 + i, concurrencyKey: 'k' })));
      expect(ids(await claim(T0 + 10))).toEqual(['job_k0', 'job_k1', 'job_k2']);
      await run('job_k1', T0 + 11, { kind: 'complete' });
      expect(ids(await claim(T0 + 20))).toEqual(['job_k3']);
      expect(await claim(T0 + 21)).toEqual([]);
    });

    it("a key's backlog holds up no other key: the claim never reads its waiting jobs", async () => {
      const project = await makeProject();
      await create(project, Array.from({ length: 300 }, (_, i) => job(`job_big${i}`, { runAt: T0, concurrencyKey: 'big' })));
      await create(project, Array.from({ length: 5 }, (_, i) => job(`job_small${i}`, { runAt: T0 + 5, concurrencyKey: `small${i}` })));
      // A claim of 6 reads only the jobs in their key's turn: big's first and each small key's.
      const claimed = await claim(T0 + 10, 6);
      expect(ids(claimed)).toEqual(['job_big0', ...Array.from({ length: 5 }, (_, i) => `job_small${i}`)]);
    });

    it("cancelling or rescheduling a key's first job lets the next go; a retried FAILED job goes to the end of its key", async () => {
      const project = await makeProject();
      await create(project, [1, 2, 3, 4].map((i) => job(`job_q${i}`, { runAt: T0 + i, concurrencyKey: 'q' })));
      expect((await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_q1', now: T0 + 5 })).ok).toBe(true);
      // q2 moved to later than q3: q3 is first now.
      expect((await contract.store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_q2', scheduledFor: T0 + 50, now: T0 + 5 })).ok).toBe(true);
      expect(ids(await claim(T0 + 10))).toEqual(['job_q3']);
      await run('job_q3', T0 + 11, { kind: 'fail' });
      // A bulk cancel of the key's next (q4) lets q2 go at its time.
      const bulk = await contract.store.jobBulkAct({ filter: { projectId: project.id, createdFrom: null }, action: { kind: 'cancel' }, limit: 1, now: T0 + 12, after: null });
      expect(bulk.changed).toBe(1);
      const after = await contract.store.jobGet({ projectId: project.id, jobId: 'job_q2' });
      const q4 = await contract.store.jobGet({ projectId: project.id, jobId: 'job_q4' });
      expect([after!.status, q4!.status].sort()).toEqual(['CANCELLED', 'QUEUED']);
      const next = after!.status === 'QUEUED' ? 'job_q2' : 'job_q4';
      expect(ids(await claim(T0 + 60))).toEqual([next]);
      // q3, FAILED and retried, is due at once but queues behind the key's job running now.
      expect((await contract.store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_q3', now: T0 + 61 })).ok).toBe(true);
      expect(await claim(T0 + 62)).toEqual([]);
      await run(next, T0 + 63, { kind: 'complete' });
      expect(ids(await claim(T0 + 70))).toEqual(['job_q3']);
    });

    it('a key is its project\'s: the same key in another project is another key', async () => {
      const one = await makeProject();
      const other = await makeProject();
      await create(one, [job('job_one1', { concurrencyKey: 'shared' }), job('job_one2', { runAt: T0 + 1, concurrencyKey: 'shared' })]);
      await create(other, [job('job_other1', { concurrencyKey: 'shared' }), job('job_other2', { runAt: T0 + 1, concurrencyKey: 'shared' })]);
      expect(ids(await claim(T0 + 10))).toEqual(['job_one1', 'job_other1']);
      await run('job_other1', T0 + 11, { kind: 'complete' });
      expect(ids(await claim(T0 + 20))).toEqual(['job_other2']);
    });

    it("raising keyConcurrency lets more of each key's waiting jobs go at once; lowering it holds those not started", async () => {
      const project = await makeProject();
      await create(project, Array.from({ length: 4 }, (_, i) => job(`job_r${i}`, { runAt: T0 + 100 + i, concurrencyKey: 'r' })));
      await contract.store.projectUpdate({ projectId: project.id, patch: { keyConcurrency: 2 } });
      await contract.store.projectUpdate({ projectId: project.id, patch: { keyConcurrency: 3 } });
      await contract.store.projectUpdate({ projectId: project.id, patch: { keyConcurrency: 2 } });
      expect(ids(await claim(T0 + 200))).toEqual(['job_r0', 'job_r1']);
    });

    it('a claim given back (released) keeps its place: the key runs it next', async () => {
      const project = await makeProject();
      await create(project, [job('job_g1', { concurrencyKey: 'g' }), job('job_g2', { runAt: T0 + 1, concurrencyKey: 'g' })]);
      expect(ids(await claim(T0 + 10, 100, 'wrk_gone'))).toEqual(['job_g1']);
      await contract.store.jobReleaseDispatched({ workerId: 'wrk_gone', now: T0 + 11 });
      expect(ids(await claim(T0 + 20))).toEqual(['job_g1']);
    });

    it("lists a project's busiest keys: waiting (QUEUED) and running (claimed or started) jobs per key, most waiting first, up to a limit", async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(project, [
        job('job_h1', { runAt: T0 + 1, concurrencyKey: 'busy' }),
        job('job_h2', { runAt: T0 + 2, concurrencyKey: 'busy' }),
        job('job_h3', { runAt: T0 + 3, concurrencyKey: 'busy' }),
        job('job_q1', { runAt: T0 + 1, concurrencyKey: 'quiet' }),
        job('job_d1', { runAt: T0 + 1, concurrencyKey: 'done' }),
        job('job_n1', { runAt: T0 + 1 }),
      ]);
      await create(other, [job('job_o1', { runAt: T0 + 1, concurrencyKey: 'busy' }), job('job_o2', { runAt: T0 + 1, concurrencyKey: 'theirs' })]);
      expect(ids(await claim(T0 + 1))).toEqual(['job_d1', 'job_h1', 'job_n1', 'job_o1', 'job_o2', 'job_q1']);
      await run('job_d1', T0 + 2, { kind: 'complete' });
      await run('job_q1', T0 + 2, { kind: 'complete' });
      await create(project, [job('job_q2', { runAt: T0 + 50, concurrencyKey: 'quiet' })]);
      expect(await contract.store.jobBusiestKeys({ projectId: project.id, limit: 10 })).toEqual([
        { key: 'busy', waiting: 2, running: 1 },
        { key: 'quiet', waiting: 1, running: 0 },
      ]);
      expect(await contract.store.jobBusiestKeys({ projectId: project.id, limit: 1 })).toEqual([{ key: 'busy', waiting: 2, running: 1 }]);
      expect(await contract.store.jobBusiestKeys({ projectId: other.id, limit: 10 })).toEqual([
        { key: 'busy', waiting: 0, running: 1 },
        { key: 'theirs', waiting: 0, running: 1 },
      ]);
    });
  });
}
