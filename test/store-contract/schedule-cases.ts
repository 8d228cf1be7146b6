/** Contract cases of schedules (SPEC section 9): see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { NewSchedule } from '../../src/store/schedule-store.js';
import type { ProjectRow } from '../../src/store/store.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { ContractContext } from './contract-context.js';

export function scheduleCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('schedules (SPEC section 9)', () => {
    const MINUTE = 60_000;
    const schedule = (project: ProjectRow, id: string, overrides: Partial<NewSchedule> = {}): NewSchedule => ({
      id,
      projectId: project.id,
      name: null,
      cron: '* * * * *',
      timezone: 'UTC',
      payload: '{"s":1}',
      maxRetries: null,
      catchUp: 'latest',
      overlap: 'allow',
      paused: false,
      tags: null,
      concurrencyKey: null,
      nextRunAt: T0 + MINUTE,
      lastRunAt: null,
      lastJobId: null,
      skippedCount: 0,
      createdAt: T0,
      updatedAt: T0,
      ...overrides,
    });
    const fire = (project: ProjectRow, jobId: string, scheduleId: string, fireAt: number) =>
      create(project, [job(jobId, { scheduledFor: fireAt, runAt: fireAt, schedule: { id: scheduleId, fireAt } })]);

    it('inserts up to the per-project limit, reads, lists newest first, and keeps projects apart', async () => {
      const project = await makeProject();
      const other = await makeProject();
      expect(await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_1', { name: 'first', maxRetries: 2 }), maxPerProject: 2 })).toBe(true);
      expect(await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_2'), maxPerProject: 2 })).toBe(true);
      expect(await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_3'), maxPerProject: 2 })).toBe(false);
      expect(await contract.store.scheduleInsert({ schedule: schedule(other, 'sch_4'), maxPerProject: 2 })).toBe(true);
      const first = await contract.store.scheduleGet({ projectId: project.id, scheduleId: 'sch_1' });
      expect(first).toMatchObject({ ...schedule(project, 'sch_1', { name: 'first', maxRetries: 2 }), seq: expect.any(Number) });
      expect(await contract.store.scheduleGet({ projectId: other.id, scheduleId: 'sch_1' })).toBeNull();
      const listed = await contract.store.scheduleList({ projectId: project.id, beforeSeq: null, limit: 10 });
      expect(listed.map((s) => s.id)).toEqual(['sch_2', 'sch_1']);
      expect((await contract.store.scheduleList({ projectId: project.id, beforeSeq: listed[0]!.seq, limit: 10 })).map((s) => s.id)).toEqual(['sch_1']);
    });

    it('updates settings and the next fire, only in its own project', async () => {
      const project = await makeProject();
      const other = await makeProject();
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_u'), maxPerProject: 10 });
      const settings = { name: 'n', cron: '0 * * * *', timezone: 'Europe/Paris', payload: '{"b":2}', maxRetries: 1, catchUp: 'all' as const, overlap: 'skip' as const, paused: true, tags: '{"team":"billing"}', concurrencyKey: 'customer-9' };
      expect(await contract.store.scheduleUpdate({ projectId: other.id, scheduleId: 'sch_u', settings, nextRunAt: T0 + 60 * MINUTE, now: T0 + 1 })).toBeNull();
      const updated = await contract.store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_u', settings, nextRunAt: T0 + 60 * MINUTE, now: T0 + 1 });
      expect(updated).toMatchObject({ ...settings, nextRunAt: T0 + 60 * MINUTE, updatedAt: T0 + 1, createdAt: T0 });
      expect(await contract.store.scheduleGet({ projectId: project.id, scheduleId: 'sch_u' })).toEqual(updated);
    });

    it('creates one job per schedule and fire instant, however often the fire is tried, counting it once', async () => {
      const project = await makeProject();
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_f'), maxPerProject: 10 });
      await fire(project, 'job_f1', 'sch_f', T0 + MINUTE);
      await fire(project, 'job_f2', 'sch_f', T0 + MINUTE);
      await fire(project, 'job_f3', 'sch_f', T0 + 2 * MINUTE);
      // A trigger (no fire instant) is one more job, whatever exists.
      await create(project, [job('job_t1', { schedule: { id: 'sch_f', fireAt: null } }), job('job_t2', { schedule: { id: 'sch_f', fireAt: null } })]);
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_f2' })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ scheduleId: 'sch_f', scheduledFor: T0 + MINUTE });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_t1' })).toMatchObject({ scheduleId: 'sch_f' });
      const usage = await contract.store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' });
      expect(usage).toEqual([{ day: '2027-03-10', jobsCreated: 4 }]);
    });

    it('claims due schedules once until the lease ends, and advances only from the fire it claimed', async () => {
      const project = await makeProject();
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_a', { nextRunAt: T0 + 2 * MINUTE }), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_b', { nextRunAt: T0 + MINUTE }), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_paused', { nextRunAt: T0, paused: true }), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_later', { nextRunAt: T0 + 10 * MINUTE }), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_never', { nextRunAt: null }), maxPerProject: 10 });
      const claim = (now: number) => contract.store.scheduleClaimDue({ now, dueBy: T0 + 2 * MINUTE, leaseUntil: now + 30_000, limit: 10 });
      expect((await claim(T0)).map((s) => [s.id, s.heldUntil])).toEqual([
        ['sch_b', null],
        ['sch_a', null],
      ]);
      expect(await claim(T0 + 1)).toEqual([]);
      // The lease ran out (its holder died): another instance claims it, told when that lease ended.
      expect((await claim(T0 + 30_000)).map((s) => [s.id, s.heldUntil])).toEqual([
        ['sch_b', T0 + 30_000],
        ['sch_a', T0 + 30_000],
      ]);
      const advance = { scheduleId: 'sch_b', nextRunAt: T0 + 2 * MINUTE, lastRun: { at: T0 + MINUTE, jobId: 'job_x' }, skipped: 0, now: T0 + 30_001 };
      expect(await contract.store.scheduleAdvance({ ...advance, expectedNextRunAt: T0 + MINUTE })).toBe(true);
      expect(await contract.store.scheduleAdvance({ ...advance, expectedNextRunAt: T0 + MINUTE })).toBe(false);
      expect(await contract.store.scheduleGet({ projectId: project.id, scheduleId: 'sch_b' })).toMatchObject({
        nextRunAt: T0 + 2 * MINUTE,
        lastRunAt: T0 + MINUTE,
        lastJobId: 'job_x',
      });
      // Advanced, it is free again and due at its next fire, held by no lease before this claim.
      expect((await claim(T0 + 30_002)).map((s) => [s.id, s.heldUntil])).toEqual([['sch_b', null]]);
      expect(await contract.store.scheduleAdvance({ scheduleId: 'sch_a', expectedNextRunAt: T0 + 2 * MINUTE, nextRunAt: T0 + 3 * MINUTE, lastRun: null, skipped: 2, now: T0 })).toBe(true);
      expect(await contract.store.scheduleGet({ projectId: project.id, scheduleId: 'sch_a' })).toMatchObject({ skippedCount: 2, lastRunAt: null, lastJobId: null });
    });

    it('pausing a schedule cancels its jobs for instants after the pause not yet started, creates none of them until resumed, and gives their instants up', async () => {
      const project = await makeProject();
      const P = T0 + 1_500;
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_p', { cron: '* * * * * *', nextRunAt: T0 + 3_000 }), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_other', { cron: '* * * * * *', nextRunAt: T0 + 7_000 }), maxPerProject: 10 });
      await fire(project, 'job_before', 'sch_p', T0 + 1_000);
      await fire(project, 'job_claimed', 'sch_p', T0 + 2_000);
      await fire(project, 'job_started', 'sch_p', T0 + 3_000);
      await fire(project, 'job_queued', 'sch_p', T0 + 6_000);
      await create(project, [job('job_trigger', { runAt: T0 + 6_000, schedule: { id: 'sch_p', fireAt: null } })]);
      await fire(project, 'job_other', 'sch_other', T0 + 6_000);
      // The firing loop holds sch_p; a worker has claimed the jobs due by 3 s and started the last ahead of its instant.
      expect((await contract.store.scheduleClaimDue({ now: T0, dueBy: T0 + 3_000, leaseUntil: T0 + 60_000, limit: 10 })).map((s) => s.id)).toEqual(['sch_p']);
      const claim = { limit: 10, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) };
      expect((await contract.store.jobClaimDue({ ...claim, now: T0, dueBy: T0 + 3_000 })).map((j) => j.id)).toEqual(['job_before', 'job_claimed', 'job_started']);
      const start = (jobId: string, now: number) => contract.store.attemptStart({ jobId, attemptId: `att_${jobId}`, workerId: 'wrk_a', now, leaseExpiresAt: now + 60_000 });
      expect(await start('job_started', T0 + 3_000)).toEqual({ attemptNumber: 1 });

      const settings = { name: null, cron: '* * * * * *', timezone: 'UTC', payload: '{"s":1}', maxRetries: null, catchUp: 'latest' as const, overlap: 'allow' as const, tags: null, concurrencyKey: null };
      const pause = (now: number, name: string | null = null) => contract.store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_p', settings: { ...settings, name, paused: true }, nextRunAt: T0 + 2_000, now });
      expect(await pause(P)).toMatchObject({ paused: true, nextRunAt: T0 + 2_000, updatedAt: P });
      const status = async (jobId: string) => (await contract.store.jobGet({ projectId: project.id, jobId }))?.status;
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_claimed' })).toMatchObject({ status: 'CANCELLED', cancelledAt: P, attemptCount: 0 });
      expect(await status('job_queued')).toBe('CANCELLED');
      // Before the pause, started, a trigger, another schedule's: left be.
      expect([await status('job_before'), await status('job_started'), await status('job_trigger'), await status('job_other')]).toEqual(['DISPATCHED', 'STARTED', 'QUEUED', 'QUEUED']);
      // The worker's claim was withdrawn: its start sends nothing. The job for an instant before the pause goes out.
      expect(await start('job_claimed', T0 + 2_000)).toBeNull();
      expect(await status('job_claimed')).toBe('CANCELLED');
      expect(await start('job_before', T0 + 1_000)).toEqual({ attemptNumber: 1 });
      // The job started ahead: its request leaves at 3 s.
      expect(await contract.store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: P, now: P })).toBe(T0 + 3_000);
      expect(await contract.store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: P, now: T0 + 3_000 })).toBeNull();
      expect(await contract.store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: T0 + 3_000, now: P })).toBeNull();

      // The fire under way when the pause came creates only its instants before the pause, and cannot move the schedule on.
      await fire(project, 'job_late_before', 'sch_p', T0 + 1_200);
      await fire(project, 'job_late_after', 'sch_p', T0 + 4_000);
      expect(await status('job_late_before')).toBe('QUEUED');
      expect(await status('job_late_after')).toBeUndefined();
      expect(await contract.store.scheduleAdvance({ scheduleId: 'sch_p', expectedNextRunAt: T0 + 2_000, nextRunAt: T0 + 5_000, lastRun: null, skipped: 0, now: P })).toBe(false);
      // Changed again while paused, it keeps the instant of its pause.
      await pause(T0 + 5_000, 'renamed');
      await fire(project, 'job_still_after', 'sch_p', T0 + 1_600);
      expect(await status('job_still_after')).toBeUndefined();
      // Nor is it claimed while paused.
      expect(await contract.store.scheduleClaimDue({ now: T0 + 8_000, dueBy: T0 + 10_000, leaseUntil: T0 + 70_000, limit: 10 })).toMatchObject([{ id: 'sch_other' }]);

      // Resumed: the instants its pause took back can have a job again; the claim the pause cut short is let go.
      const resumed = await contract.store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_p', settings: { ...settings, paused: false }, nextRunAt: T0 + 2_000, now: T0 + 8_000 });
      expect(resumed).toMatchObject({ paused: false, nextRunAt: T0 + 2_000 });
      await fire(project, 'job_again', 'sch_p', T0 + 2_000);
      await fire(project, 'job_after_resume', 'sch_p', T0 + 4_000);
      expect([await status('job_again'), await status('job_after_resume')]).toEqual(['QUEUED', 'QUEUED']);
      expect((await contract.store.scheduleClaimDue({ now: T0 + 8_000, dueBy: T0 + 10_000, leaseUntil: T0 + 70_000, limit: 10 })).map((s) => s.id)).toEqual(['sch_p']);
      expect(await contract.store.scheduleAdvance({ scheduleId: 'sch_p', expectedNextRunAt: T0 + 2_000, nextRunAt: T0 + 9_000, lastRun: null, skipped: 0, now: T0 + 8_000 })).toBe(true);
    });

    it('deletes a schedule and cancels its jobs still QUEUED, not those of other schedules', async () => {
      const project = await makeProject();
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_d'), maxPerProject: 10 });
      await contract.store.scheduleInsert({ schedule: schedule(project, 'sch_keep'), maxPerProject: 10 });
      await fire(project, 'job_d1', 'sch_d', T0 + MINUTE);
      await fire(project, 'job_k1', 'sch_keep', T0 + MINUTE);
      expect(await contract.store.scheduleDelete({ projectId: 'prj_other', scheduleId: 'sch_d', now: T0 + 1 })).toBeNull();
      expect(await contract.store.scheduleDelete({ projectId: project.id, scheduleId: 'sch_d', now: T0 + 1 })).toMatchObject({ id: 'sch_d' });
      expect(await contract.store.scheduleGet({ projectId: project.id, scheduleId: 'sch_d' })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_d1' })).toMatchObject({ status: 'CANCELLED', cancelledAt: T0 + 1 });
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_k1' })).toMatchObject({ status: 'QUEUED' });
    });
  });
}
