/** Contract cases of retention (SPEC section 12): see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { AttemptNext, ProjectRow, Store } from '../../src/store/store.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { ContractContext } from './contract-context.js';

export function retentionCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('retention (SPEC section 12)', () => {
    const DAY = 86_400_000;
    const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
    const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };

    /** Takes a QUEUED job due by `at` through one attempt with this result and what follows it. */
    async function attempt(jobId: string, at: number, result: typeof success | typeof failure, next: AttemptNext) {
      const claimed = await contract.store.jobClaimDue({ now: at, dueBy: at, limit: 1, workerId: 'wrk_r', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      expect(claimed.map((j) => j.id)).toEqual([jobId]);
      const attemptId = `att_${jobId}_${at}`;
      expect(await contract.store.attemptStart({ jobId, attemptId, workerId: 'wrk_r', now: at, leaseExpiresAt: at + 60_000 })).not.toBeNull();
      expect(await contract.store.attemptFinish({ jobId, attemptId, workerId: 'wrk_r', now: at + 5, result, next })).toBe(true);
    }

    /** One job of each final status, final at T0 + 5, plus a job waiting and one waiting for its retry. */
    async function finalAndLiveJobs(project: ProjectRow) {
      // Due one after the other, so that each claim (earliest due first) takes the next one.
      await create(project, [
        job('job_done', { runAt: T0 - 3 }),
        job('job_failed', { runAt: T0 - 2, maxRetries: 0 }),
        job('job_retrying', { runAt: T0 - 1 }),
        job('job_cancelled', { runAt: T0 + DAY }),
      ]);
      await create(project, [job('job_waiting', { runAt: T0 + 400 * DAY })]);
      await attempt('job_done', T0, success, { kind: 'complete' });
      await attempt('job_failed', T0, failure, { kind: 'fail' });
      await attempt('job_retrying', T0, failure, { kind: 'retry', runAt: T0 + 500 * DAY });
      expect((await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_cancelled', now: T0 + 5 })).ok).toBe(true);
    }

    const exists = async (project: ProjectRow, jobId: string) => (await contract.store.jobGet({ projectId: project.id, jobId })) !== null;

    it('deletes final jobs with their attempts once they became final at or before the cut-off, never a job still to run', async () => {
      const project = await makeProject();
      await finalAndLiveJobs(project);
      const cutoffs = (finalBy: number) => ({ projects: [{ projectId: project.id, finalBy }], idempotencyCreatedBy: 0, usageBeforeDay: '2000-01-01', eventsOccurredBy: 0 });
      expect(await contract.store.pruneCount(cutoffs(T0 + 4))).toEqual({ jobs: 0, attempts: 0, idempotencyKeys: 0, usageRows: 0, events: 0 });
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 4, limit: 100 })).toEqual({ jobs: 0, attempts: 0 });
      expect(await contract.store.pruneCount(cutoffs(T0 + 5))).toEqual({ jobs: 3, attempts: 2, idempotencyKeys: 0, usageRows: 0, events: 0 });
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 5, limit: 100 })).toEqual({ jobs: 3, attempts: 2 });
      for (const gone of ['job_done', 'job_failed', 'job_cancelled']) expect(await exists(project, gone)).toBe(false);
      expect(await contract.store.attemptListByJob('job_done')).toEqual([]);
      expect(await contract.store.attemptListByJob('job_failed')).toEqual([]);
      // Still to run, whatever the cut-off: a job waiting, and one whose retry is due later.
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: Number.MAX_SAFE_INTEGER, limit: 100 })).toEqual({ jobs: 0, attempts: 0 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_waiting' })).toMatchObject({ status: 'QUEUED' });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_retrying' })).toMatchObject({ status: 'QUEUED', attemptCount: 1 });
      expect(await contract.store.attemptListByJob('job_retrying')).toHaveLength(1);
      expect(await contract.store.jobCountByStatus()).toMatchObject({ QUEUED: 2, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
    });

    it('deletes in batches of the limit, the longest final first, and only the project asked for', async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(project, [job('job_b1'), job('job_b2'), job('job_b3')]);
      await create(other, [job('job_other')]);
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b2', now: T0 + 1 });
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b3', now: T0 + 2 });
      await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b1', now: T0 + 3 });
      await contract.store.jobCancelIfQueued({ projectId: other.id, jobId: 'job_other', now: T0 });
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 10, limit: 2 })).toEqual({ jobs: 2, attempts: 0 });
      expect(await exists(project, 'job_b1')).toBe(true);
      expect(await exists(project, 'job_b2')).toBe(false);
      expect(await exists(project, 'job_b3')).toBe(false);
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 10, limit: 2 })).toEqual({ jobs: 1, attempts: 0 });
      expect(await exists(other, 'job_other')).toBe(true);
    });

    it('a failed job retried is no longer final, and is kept', async () => {
      const project = await makeProject();
      await create(project, [job('job_again', { maxRetries: 0 })]);
      await attempt('job_again', T0, failure, { kind: 'fail' });
      expect((await contract.store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_again', now: T0 + 10 })).ok).toBe(true);
      expect(await contract.store.jobPruneFinal({ projectId: project.id, finalBy: T0 + DAY, limit: 10 })).toEqual({ jobs: 0, attempts: 0 });
      expect(await contract.store.attemptListByJob('job_again')).toHaveLength(1);
    });

    it('two instances pruning the same project at once delete each job once', async () => {
      const project = await makeProject();
      const ids = Array.from({ length: 60 }, (_, i) => `job_many${i}`);
      await create(project, ids.map((id) => job(id)));
      for (const [i, id] of ids.entries()) await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: id, now: T0 + i });
      const second = contract.database.openStore();
      try {
        const drain = async (instance: Store) => {
          let deleted = 0;
          for (;;) {
            const { jobs } = await instance.jobPruneFinal({ projectId: project.id, finalBy: T0 + 100, limit: 7 });
            if (jobs === 0) return deleted;
            deleted += jobs;
          }
        };
        const [a, b] = await Promise.all([drain(contract.store), drain(second)]);
        expect(a + b).toBe(60);
      } finally {
        await second.close();
      }
      expect(await contract.store.jobCountByStatus()).toMatchObject({ CANCELLED: 0 });
    });

    it('deletes idempotency keys created at or before the cut-off, and usage days before the cut-off day', async () => {
      const project = await makeProject();
      const idem = { endpoint: 'dispatch', key: 'k-old', requestHash: 'h', validAfter: T0 - DAY };
      await create(project, [job('job_k1')], { idempotency: idem });
      await create(project, [job('job_k2')], { idempotency: { ...idem, key: 'k-new' }, now: T0 + 1 });
      const day = new Date(T0).toISOString().slice(0, 10);
      const nextDay = new Date(T0 + DAY).toISOString().slice(0, 10);
      // PostgreSQL spreads a day's usage over up to 16 rows (0003_shard_usage_daily.sql): rows, not days, are counted.
      const counted = await contract.store.pruneCount({ projects: [], idempotencyCreatedBy: T0, usageBeforeDay: nextDay, eventsOccurredBy: 0 });
      expect(counted.idempotencyKeys).toBe(1);
      expect(counted.usageRows).toBeGreaterThan(0);
      expect(await contract.store.idempotencyKeyPrune({ createdBy: T0 - 1, limit: 10 })).toBe(0);
      expect(await contract.store.idempotencyKeyPrune({ createdBy: T0, limit: 10 })).toBe(1);
      // The key that went answers as new; the one kept still replays.
      expect((await create(project, [job('job_k3')], { idempotency: { ...idem, validAfter: 0 } })).kind).toBe('created');
      expect((await create(project, [job('job_k4')], { idempotency: { ...idem, key: 'k-new', validAfter: 0 } })).kind).toBe('replayed');
      expect(await contract.store.usagePrune({ beforeDay: day, limit: 10 })).toBe(0);
      const usageRows = (await contract.store.pruneCount({ projects: [], idempotencyCreatedBy: 0, usageBeforeDay: nextDay, eventsOccurredBy: 0 })).usageRows;
      expect(await contract.store.usagePrune({ beforeDay: nextDay, limit: 100 })).toBe(usageRows);
      expect(await contract.store.usageDaily({ teamId: project.teamId, fromDay: '2027-01-01', toDay: '2028-01-01' })).toEqual([]);
    });

    it("keeps a project's own retention, lists every project's, and reports the store's size", async () => {
      const project = await makeProject();
      const other = await makeProject();
      expect(await contract.store.projectUpdate({ projectId: project.id, patch: { retentionDays: 7 } })).toMatchObject({ retentionDays: 7 });
      expect(await contract.store.projectGet(project.id)).toMatchObject({ retentionDays: 7 });
      const listed = await contract.store.projectListRetention();
      expect(listed).toContainEqual({ projectId: project.id, retentionDays: 7 });
      expect(listed).toContainEqual({ projectId: other.id, retentionDays: null });
      expect(await contract.store.projectUpdate({ projectId: project.id, patch: { retentionDays: null } })).toMatchObject({ retentionDays: null });
      const size = await contract.store.storeSize();
      expect(size.databaseBytes).toBeGreaterThan(0);
    });
  });
}
