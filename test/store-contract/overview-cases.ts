/** Contract cases of the project overview: see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { AttemptNext, ProjectRow } from '../../src/store/store.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { ContractContext } from './contract-context.js';

export function overviewCases(contract: ContractContext): void {
  const { T0, DAY_MS, makeProject, job, create } = contract;
  describe('project overview', () => {
    const MIN = 60_000;
    const HOUR = 60 * MIN;
    // The clock of every overview below: 30 s into the minute 12:00 UTC.
    const NOW = T0 + 30_000;
    const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
    const http500 = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
    const timeout = { outcome: 'timeout' as const, statusCode: null, durationMs: 10_000, error: 'no answer within 10000 ms', responseBody: null };
    const refused = { outcome: 'network_error' as const, statusCode: null, durationMs: 1, error: 'connect ECONNREFUSED', responseBody: null };
    type Result = typeof success | typeof http500 | typeof timeout | typeof refused;

    /** Claims the one job due by `at` (no other job may be due then) and starts its attempt `attemptId` at `at`. */
    async function start(jobId: string, attemptId: string, at: number, dueBy = at) {
      const claimed = await contract.store.jobClaimDue({ now: at, dueBy, limit: 1, workerId: 'wrk_o', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      expect(claimed.map((j) => j.id)).toEqual([jobId]);
      expect(await contract.store.attemptStart({ jobId, attemptId, workerId: 'wrk_o', now: at, leaseExpiresAt: at + 60_000 })).not.toBeNull();
    }

    /** A new job due at `due`, its first attempt started at `startAt` and finished at `finishAt` with `result`; failed ones fail the job. */
    async function deliver(project: ProjectRow, jobId: string, o: { due: number; startAt?: number; finishAt: number; result: Result; attemptId?: string }) {
      await create(project, [job(jobId, { runAt: o.due, maxRetries: 0 })], { now: o.due });
      const attemptId = o.attemptId ?? `att_${jobId}`;
      await start(jobId, attemptId, o.startAt ?? o.finishAt);
      const next: AttemptNext = o.result.outcome === 'success' ? { kind: 'complete' } : { kind: 'fail' };
      expect(await contract.store.attemptFinish({ jobId, attemptId, workerId: 'wrk_o', now: o.finishAt, result: o.result, next })).toBe(true);
    }

    it('counts a new project as empty', async () => {
      const project = await makeProject();
      expect(await contract.store.projectOverview({ projectId: project.id, now: NOW })).toEqual({
        jobsByStatus: { QUEUED: 0, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 },
        deliveryMinutes: [],
        lateness: { firstAttempts: 0, p50Ms: null, p99Ms: null },
        recentFailures: [],
      });
    });

    it("counts a project's jobs by status now, up to the limit asked, and never another project's", async () => {
      const project = await makeProject();
      const other = await makeProject();
      await create(other, [job('job_c_other1', { runAt: T0 + 400 * DAY_MS }), job('job_c_other2', { runAt: T0 + 400 * DAY_MS })]);
      await create(project, [job('job_c_q1', { runAt: T0 + 400 * DAY_MS }), job('job_c_q2', { runAt: T0 + 400 * DAY_MS }), job('job_c_q3', { runAt: T0 + 400 * DAY_MS })]);
      await deliver(project, 'job_c_done', { due: T0 - 5_000, finishAt: T0 - 5_000, result: success });
      await deliver(project, 'job_c_failed', { due: T0 - 4_000, finishAt: T0 - 4_000, result: http500 });
      await create(project, [job('job_c_started', { runAt: T0 - 3_000 })]);
      await start('job_c_started', 'att_c_started', T0 - 3_000);
      await create(project, [job('job_c_dispatched', { runAt: T0 - 2_000 })]);
      expect((await contract.store.jobClaimDue({ now: T0 - 2_000, dueBy: T0 - 2_000, limit: 1, workerId: 'wrk_o', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) })).map((j) => j.id)).toEqual(['job_c_dispatched']);
      expect((await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_c_q3', now: T0 })).ok).toBe(true);
      const counts = { QUEUED: 2, DISPATCHED: 1, STARTED: 1, COMPLETED: 1, FAILED: 1, CANCELLED: 1 };
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW })).jobsByStatus).toEqual(counts);
      expect((await contract.store.projectOverview({ projectId: other.id, now: NOW })).jobsByStatus).toEqual({ QUEUED: 2, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
      // Counted up to the limit: past it, the limit + 1.
      await create(project, [job('job_c_q4', { runAt: T0 + 400 * DAY_MS }), job('job_c_q5', { runAt: T0 + 400 * DAY_MS })]);
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW, jobCountLimit: 2 })).jobsByStatus).toEqual({ ...counts, QUEUED: 3 });
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW, jobCountLimit: 4 })).jobsByStatus).toEqual({ ...counts, QUEUED: 4 });
    });

    it('counts attempts finished per minute over the 1,440 minutes ending with the current one, and failures among them, lease losses included', async () => {
      const project = await makeProject();
      const other = await makeProject();
      const first = NOW - (NOW % MIN) - 1_439 * MIN;
      // Before the window: 25 hours ago, and the last millisecond before its first minute.
      await deliver(project, 'job_m_old', { due: NOW - 25 * HOUR, finishAt: NOW - 25 * HOUR, result: success });
      await deliver(project, 'job_m_edge', { due: first - 1, finishAt: first - 1, result: http500 });
      await deliver(project, 'job_m_first', { due: first, finishAt: first, result: success });
      // 11:57: a lease lost (the rescue records it at 11:57:20, as lease_expired).
      await create(project, [job('job_m_lost', { runAt: T0 - 3 * MIN, maxRetries: 0 })], { now: T0 - 3 * MIN });
      await start('job_m_lost', 'att_m_lost', T0 - 3 * MIN);
      const rescueAt = T0 - 3 * MIN + 20_000;
      // Its lease ends at 11:58: taken over at once, as at a start after a crash.
      expect(await contract.store.jobRescueExpiredLeases({ now: rescueAt, expiredBefore: T0 - 2 * MIN + 1, limit: 10, retryAt: () => null })).toHaveLength(1);
      // 11:58: a success and a 500; another project's attempts that minute.
      await deliver(project, 'job_m_ok', { due: T0 - 2 * MIN + 10_000, finishAt: T0 - 2 * MIN + 10_000, result: success });
      await deliver(project, 'job_m_500', { due: T0 - 2 * MIN + 50_000, finishAt: T0 - 2 * MIN + 50_000, result: http500 });
      await deliver(other, 'job_m_theirs1', { due: T0 - 2 * MIN + 20_000, finishAt: T0 - 2 * MIN + 20_000, result: http500 });
      await deliver(other, 'job_m_theirs2', { due: T0 - 2 * MIN + 21_000, finishAt: T0 - 2 * MIN + 21_000, result: success });
      // 11:59: refused, then its retry succeeds in the same minute.
      await create(project, [job('job_m_retry', { runAt: T0 - MIN, maxRetries: 1 })], { now: T0 - MIN });
      await start('job_m_retry', 'att_m_retry1', T0 - MIN);
      await contract.store.attemptFinish({ jobId: 'job_m_retry', attemptId: 'att_m_retry1', workerId: 'wrk_o', now: T0 - MIN + 500, result: refused, next: { kind: 'retry', runAt: T0 - 30_000 } });
      await start('job_m_retry', 'att_m_retry2', T0 - 30_000);
      await contract.store.attemptFinish({ jobId: 'job_m_retry', attemptId: 'att_m_retry2', workerId: 'wrk_o', now: T0 - 29_000, result: success, next: { kind: 'complete' } });
      // 12:00, the current minute: a timeout 20 s in.
      await deliver(project, 'job_m_timeout', { due: T0 + 5_000, startAt: T0 + 10_000, finishAt: T0 + 20_000, result: timeout });
      // Started but not finished: not counted until it finishes.
      await create(project, [job('job_m_running', { runAt: T0 + 21_000 })], { now: T0 + 21_000 });
      await start('job_m_running', 'att_m_running', T0 + 21_000);

      const overview = await contract.store.projectOverview({ projectId: project.id, now: NOW });
      expect(overview.deliveryMinutes).toEqual([
        { minute: first, attempts: 1, failedAttempts: 0 },
        { minute: T0 - 3 * MIN, attempts: 1, failedAttempts: 1 },
        { minute: T0 - 2 * MIN, attempts: 2, failedAttempts: 1 },
        { minute: T0 - MIN, attempts: 2, failedAttempts: 1 },
        { minute: T0, attempts: 1, failedAttempts: 1 },
      ]);
      expect(overview.recentFailures).toEqual([
        { jobId: 'job_m_timeout', attemptId: 'att_job_m_timeout', attemptNumber: 1, finishedAt: T0 + 20_000, outcome: 'timeout', statusCode: null, error: 'no answer within 10000 ms' },
        { jobId: 'job_m_retry', attemptId: 'att_m_retry1', attemptNumber: 1, finishedAt: T0 - MIN + 500, outcome: 'network_error', statusCode: null, error: 'connect ECONNREFUSED' },
        { jobId: 'job_m_500', attemptId: 'att_job_m_500', attemptNumber: 1, finishedAt: T0 - 2 * MIN + 50_000, outcome: 'http_error', statusCode: 500, error: 'HTTP 500' },
        {
          jobId: 'job_m_lost',
          attemptId: 'att_m_lost',
          attemptNumber: 1,
          finishedAt: rescueAt,
          outcome: 'lease_expired',
          statusCode: null,
          error: 'lease expired: the worker stopped before the attempt finished',
        },
      ]);
      expect((await contract.store.projectOverview({ projectId: other.id, now: NOW })).deliveryMinutes).toEqual([{ minute: T0 - 2 * MIN, attempts: 2, failedAttempts: 1 }]);
      // A minute later the window has moved on by one: its first minute is out.
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW + MIN })).deliveryMinutes[0]).toEqual({ minute: T0 - 3 * MIN, attempts: 1, failedAttempts: 1 });
    });

    it('lists the latest failed attempts newest first, at most ten, the later attempt id first at the same instant', async () => {
      const project = await makeProject();
      const other = await makeProject();
      for (let i = 0; i < 11; i += 1) await deliver(project, `job_f${String(i).padStart(2, '0')}`, { due: T0 - 20 * MIN + i * MIN, finishAt: T0 - 20 * MIN + i * MIN, result: http500 });
      // Two at the same instant, the newest of all.
      await create(project, [job('job_f_tie1', { runAt: T0 }), job('job_f_tie2', { runAt: T0 + 1 })], { now: T0 });
      await start('job_f_tie1', 'att_f_tie1', T0);
      await start('job_f_tie2', 'att_f_tie2', T0 + 1);
      for (const id of ['tie2', 'tie1']) {
        await contract.store.attemptFinish({ jobId: `job_f_${id}`, attemptId: `att_f_${id}`, workerId: 'wrk_o', now: T0 + 5_000, result: refused, next: { kind: 'fail' } });
      }
      await deliver(other, 'job_f_theirs', { due: T0 + 6_000, finishAt: T0 + 6_000, result: http500 });
      const listed = (await contract.store.projectOverview({ projectId: project.id, now: NOW })).recentFailures.map((f) => f.attemptId);
      expect(listed).toEqual(['att_f_tie2', 'att_f_tie1', ...[10, 9, 8, 7, 6, 5, 4, 3].map((i) => `att_job_f${String(i).padStart(2, '0')}`)]);
    });

    it('answers the median and 99th percentile of first attempts\' lateness over the last 60 minutes, as the top of their 2^(1/4) bucket', async () => {
      const project = await makeProject();
      const other = await makeProject();
      // The window's 60 minutes start at 11:01: one started a millisecond before is out.
      await deliver(project, 'job_l_old', { due: T0 - 59 * MIN - 100_000, startAt: T0 - 59 * MIN - 1, finishAt: T0 - 59 * MIN - 1, result: success });
      // Inside: on time, 3 ms, 100 ms and 2 s late, and one started 2 ms early (claimed ahead).
      await deliver(project, 'job_l_0', { due: T0 - 59 * MIN, finishAt: T0 - 59 * MIN, result: success });
      await deliver(project, 'job_l_3', { due: T0 - 50 * MIN, startAt: T0 - 50 * MIN + 3, finishAt: T0 - 50 * MIN + 10, result: success });
      await deliver(project, 'job_l_2000', { due: T0 - 40 * MIN, startAt: T0 - 40 * MIN + 2_000, finishAt: T0 - 40 * MIN + 2_010, result: success });
      await create(project, [job('job_l_early', { runAt: T0 - 20 * MIN })], { now: T0 - 30 * MIN });
      await start('job_l_early', 'att_l_early', T0 - 20 * MIN - 2, T0 - 20 * MIN);
      // 100 ms late, then a retry started much later: only the first attempt counts.
      await create(project, [job('job_l_100', { runAt: T0 - 10 * MIN, maxRetries: 1 })], { now: T0 - 10 * MIN });
      await start('job_l_100', 'att_l_100a', T0 - 10 * MIN + 100);
      await contract.store.attemptFinish({ jobId: 'job_l_100', attemptId: 'att_l_100a', workerId: 'wrk_o', now: T0 - 10 * MIN + 200, result: http500, next: { kind: 'retry', runAt: T0 - 5 * MIN } });
      await start('job_l_100', 'att_l_100b', T0 + 20_000);
      // Another project's very late first attempt.
      await deliver(other, 'job_l_theirs', { due: T0 - HOUR, startAt: T0 + 1_000, finishAt: T0 + 1_001, result: success });

      // Sorted: early (bucket 0: 0 ms), 0, 3, 100 (bucket 91..107), 2000 (bucket 1723..2047).
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW })).lateness).toEqual({ firstAttempts: 5, p50Ms: 3, p99Ms: 2_047 });
      // 3,601,000 ms late: the bucket from 3,526,976 to 4,194,303.
      expect((await contract.store.projectOverview({ projectId: other.id, now: NOW })).lateness).toEqual({ firstAttempts: 1, p50Ms: 4_194_303, p99Ms: 4_194_303 });
      // 25 minutes on, the window starts at 11:26: the early one and the 100 ms one are left.
      expect((await contract.store.projectOverview({ projectId: project.id, now: NOW + 25 * MIN })).lateness).toEqual({ firstAttempts: 2, p50Ms: 0, p99Ms: 107 });
    });

    it("changes no figure when it folds past minutes' rows (PostgreSQL's shards), and finds nothing left to fold after", async () => {
      const project = await makeProject();
      for (let i = 0; i < 8; i += 1) {
        const at = T0 - 4 * MIN + i * 25_000;
        await deliver(project, `job_k${i}`, { due: at - i, startAt: at, finishAt: at + 5, result: i % 3 === 0 ? http500 : success });
      }
      const before = await contract.store.projectOverview({ projectId: project.id, now: NOW });
      expect(before.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0)).toBe(8);
      expect(await contract.store.overviewCompact({ before: T0, limit: 100 })).toBeGreaterThanOrEqual(0);
      expect(await contract.store.projectOverview({ projectId: project.id, now: NOW })).toEqual(before);
      expect(await contract.store.overviewCompact({ before: T0, limit: 100 })).toBe(0);
    });

    it('prunes its rows of minutes before the cut-off, every project\'s, up to the limit at a time', async () => {
      const project = await makeProject();
      const other = await makeProject();
      await deliver(project, 'job_p_old', { due: NOW - 2 * DAY_MS, finishAt: NOW - 2 * DAY_MS, result: http500 });
      await deliver(other, 'job_p_old2', { due: NOW - 2 * DAY_MS + 1, finishAt: NOW - 2 * DAY_MS + 1, result: success });
      await deliver(project, 'job_p_new', { due: T0, finishAt: T0, result: http500 });
      const before = NOW - DAY_MS;
      // Old: two minute rows, two lateness rows and one failure.
      const pruned: number[] = [];
      for (;;) {
        const n = await contract.store.overviewPrune({ before, limit: 2 });
        pruned.push(n);
        if (n < 2) break;
      }
      expect(pruned.every((n) => n <= 2)).toBe(true);
      expect(pruned.reduce((a, b) => a + b, 0)).toBe(5);
      const then = await contract.store.projectOverview({ projectId: project.id, now: NOW - 2 * DAY_MS + MIN });
      expect(then).toMatchObject({ deliveryMinutes: [], recentFailures: [], lateness: { firstAttempts: 0 } });
      const now = await contract.store.projectOverview({ projectId: project.id, now: NOW });
      expect(now.deliveryMinutes).toEqual([{ minute: T0, attempts: 1, failedAttempts: 1 }]);
      expect(now.recentFailures.map((f) => f.jobId)).toEqual(['job_p_new']);
      expect(now.lateness.firstAttempts).toBe(1);
    });
  });
}
