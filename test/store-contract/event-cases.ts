/** Contract cases of events (SPEC section 10): see store-contract.ts. */
import { describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/store.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import type { ContractContext } from './contract-context.js';

export function eventCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('events (SPEC section 10)', () => {
    const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
    const event = (project: ProjectRow, id: string, occurredAt = T0) => ({ id, projectId: project.id, type: 'job.failed' as const, occurredAt, data: '{"n":1}' });
    async function withEvents(): Promise<ProjectRow> {
      const project = await makeProject();
      return (await contract.store.projectUpdate({ projectId: project.id, patch: { eventsUrl: 'http://127.0.0.1:1/events' } }))!;
    }
    const claim = (now: number, workerId = 'wrk_e') => contract.store.eventClaimDue({ now, limit: 10, workerId, leaseExtraMs: 1_000 });

    it('records every event, NOT_SENT (never claimed) for a project without an eventsUrl, and lists them newest first by cursor', async () => {
      const quiet = await makeProject();
      expect(await contract.store.eventInsert(event(quiet, 'evt_q'))).toBe(true);
      expect(await contract.store.eventList({ projectId: quiet.id, beforeSeq: null, limit: 10 })).toMatchObject([{ id: 'evt_q', status: 'NOT_SENT', nextAttemptAt: null }]);
      expect(await claim(T0 + 1)).toEqual([]);
      const project = await withEvents();
      for (const id of ['evt_1', 'evt_2', 'evt_3']) expect(await contract.store.eventInsert(event(project, id))).toBe(true);
      const page = await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 2 });
      expect(page.map((e) => e.id)).toEqual(['evt_3', 'evt_2']);
      expect(page[0]).toMatchObject({ projectId: project.id, type: 'job.failed', occurredAt: T0, data: '{"n":1}', status: 'PENDING', attemptCount: 0, nextAttemptAt: T0 });
      expect((await contract.store.eventList({ projectId: project.id, beforeSeq: page[1]!.seq, limit: 2 })).map((e) => e.id)).toEqual(['evt_1']);
    });

    it('records job.failed with the attempt that failed the job, sent to its project\'s eventsUrl, NOT_SENT without one', async () => {
      const project = await withEvents();
      const quiet = await makeProject();
      await create(project, [job('job_ef', { maxRetries: 0 })]);
      await create(quiet, [job('job_qf', { maxRetries: 0, runAt: T0 + 1 })]);
      await contract.store.jobClaimDue({ now: T0 + 5, dueBy: T0 + 5, limit: 10, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      for (const jobId of ['job_ef', 'job_qf']) {
        await contract.store.attemptStart({ jobId, attemptId: `att_X${jobId}`, workerId: 'wrk_a', now: T0 + 5, leaseExpiresAt: T0 + 60_000 });
        await contract.store.attemptFinish({ jobId, attemptId: `att_X${jobId}`, workerId: 'wrk_a', now: T0 + 9, result: failure, next: { kind: 'fail' } });
      }
      const [recorded] = await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 });
      expect(recorded).toMatchObject({ id: 'evt_Xjob_ef', type: 'job.failed', occurredAt: T0 + 9, status: 'PENDING' });
      expect(JSON.parse(recorded!.data)).toEqual({ jobId: 'job_ef', attemptCount: 1, lastError: 'HTTP 500' });
      expect(await contract.store.eventList({ projectId: quiet.id, beforeSeq: null, limit: 10 })).toMatchObject([{ type: 'job.failed', status: 'NOT_SENT' }]);
    });

    it('claims due events once, lets a lapsed claim be taken over, and records delivered, retry and failed only under the claim', async () => {
      const project = await withEvents();
      await contract.store.eventInsert(event(project, 'evt_a', T0));
      await contract.store.eventInsert(event(project, 'evt_later', T0 + 45_000));
      const [claimed, ...rest] = await claim(T0 + 1);
      expect(rest).toEqual([]);
      expect(claimed).toMatchObject({ id: 'evt_a', leaseUntil: T0 + 1 + 1_000 + 30_000 });
      expect(await claim(T0 + 2, 'wrk_other')).toEqual([]);
      // Lapsed: another worker takes it, and the first one's outcome no longer counts.
      const [taken] = await claim(claimed!.leaseUntil, 'wrk_other');
      expect(taken!.id).toBe('evt_a');
      const retry = { kind: 'retry' as const, at: T0 + 50_000, error: 'HTTP 503' };
      expect(await contract.store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_e', leaseUntil: claimed!.leaseUntil, now: T0 + 40_000, outcome: retry })).toBe(false);
      expect(await contract.store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_other', leaseUntil: taken!.leaseUntil, now: T0 + 40_000, outcome: retry })).toBe(true);
      const list = async () => Object.fromEntries((await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => [e.id, e]));
      expect((await list()).evt_a).toMatchObject({ status: 'PENDING', attemptCount: 1, nextAttemptAt: T0 + 50_000, lastError: 'HTTP 503' });
      expect((await claim(T0 + 49_999)).map((e) => e.id)).toEqual(['evt_later']);
      const [again] = await claim(T0 + 50_000);
      expect(await contract.store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_e', leaseUntil: again!.leaseUntil, now: T0 + 50_001, outcome: { kind: 'failed', error: 'HTTP 500' } })).toBe(true);
      expect((await list()).evt_a).toMatchObject({ status: 'FAILED', attemptCount: 2, nextAttemptAt: null, lastError: 'HTTP 500', deliveredAt: null });
      await contract.store.eventInsert(event(project, 'evt_ok', T0 + 60_000));
      const [ok] = await claim(T0 + 60_000);
      expect(await contract.store.eventFinish({ eventId: 'evt_ok', workerId: 'wrk_e', leaseUntil: ok!.leaseUntil, now: T0 + 60_001, outcome: { kind: 'delivered' } })).toBe(true);
      expect((await list()).evt_ok).toMatchObject({ status: 'DELIVERED', attemptCount: 1, deliveredAt: T0 + 60_001, nextAttemptAt: null });
      expect(await contract.store.eventFinish({ eventId: 'evt_ok', workerId: 'wrk_e', leaseUntil: ok!.leaseUntil, now: T0 + 60_002, outcome: { kind: 'delivered' } })).toBe(false);
      // A sole instance starting takes over claims left by the process before it: due at once.
      await contract.store.eventInsert(event(project, 'evt_left', T0 + 70_000));
      expect((await claim(T0 + 70_000, 'wrk_gone')).map((e) => e.id)).toEqual(['evt_left']);
      // evt_later's claim (above) was never finished either.
      expect(await contract.store.eventReleaseClaims({ now: T0 + 70_001 })).toBe(2);
      expect((await claim(T0 + 70_001)).map((e) => e.id)).toEqual(['evt_later', 'evt_left']);
    });

    it('records webhook.failing at the 10th failure in a row, again only after an hour, and webhook.recovered at the first success', async () => {
      const project = await withEvents();
      const fail = (at: number, n = 1) => Array.from({ length: n }, (_, i) => ({ failed: true, error: `HTTP 50${i % 10}`, at: at + i, eventId: `evt_f${at + i}`, heldEventId: `evt_h${at + i}` }));
      const succeed = (at: number) => ({ failed: false, error: null, at, eventId: `evt_s${at}`, heldEventId: `evt_sh${at}` });
      const types = async () => (await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 100 })).map((e) => [e.type, JSON.parse(e.data)]).reverse();
      // A success breaks a run of 9: nothing.
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: [...fail(T0, 9), succeed(T0 + 100)] });
      expect(await contract.store.webhookHealthListFailing()).toEqual([]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 200, 9) });
      expect(await contract.store.webhookHealthListFailing()).toEqual([project.id]);
      expect(await types()).toEqual([]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300, 1) });
      expect(await types()).toEqual([['webhook.failing', { consecutiveFailures: 10, lastError: 'HTTP 500', since: new Date(T0 + 200).toISOString() }]]);
      // Still failing within the hour: no second event; at an hour, one more.
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 400, 50) });
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300 + 3_600_000 - 1, 1) });
      expect(await types()).toHaveLength(1);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300 + 3_600_000, 1) });
      expect((await types())[1]).toEqual(['webhook.failing', { consecutiveFailures: 62, lastError: 'HTTP 500', since: new Date(T0 + 200).toISOString() }]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: [succeed(T0 + 4_000_000), succeed(T0 + 4_000_001)] });
      expect((await types()).slice(2)).toEqual([['webhook.recovered', { failingSince: new Date(T0 + 200).toISOString(), heldFor: null }]]);
      expect(await contract.store.webhookHealthListFailing()).toEqual([]);
    });

    it("keeps a project's run of failures whether or not it has an eventsUrl, and reads it back", async () => {
      const quiet = await makeProject();
      const fail = (at: number, n: number) => Array.from({ length: n }, (_, i) => ({ failed: true, error: `HTTP 50${i % 3}`, at: at + i, eventId: `evt_g${at + i}`, heldEventId: `evt_gh${at + i}` }));
      expect(await contract.store.webhookHealthGet({ projectId: quiet.id })).toEqual({ run: null, hold: null });
      await contract.store.webhookHealthRecord({ projectId: quiet.id, outcomes: fail(T0, 12) });
      expect(await contract.store.webhookHealthGet({ projectId: quiet.id })).toEqual({ run: { consecutiveFailures: 12, failingSince: T0, failingEventAt: T0 + 9, lastError: 'HTTP 502' }, hold: null });
      expect((await contract.store.eventList({ projectId: quiet.id, beforeSeq: null, limit: 10 })).map((e) => [e.type, e.status])).toEqual([['webhook.failing', 'NOT_SENT']]);
      await contract.store.webhookHealthRecord({ projectId: quiet.id, outcomes: [{ failed: false, error: null, at: T0 + 20, eventId: 'evt_gok', heldEventId: 'evt_gokh' }] });
      expect(await contract.store.webhookHealthGet({ projectId: quiet.id })).toEqual({ run: null, hold: null });
    });

    it('sends only the subscribed types (eventTypes), and records job.completed, with its duration, only when subscribed', async () => {
      const project = await withEvents();
      const finish = async (jobId: string, next: 'complete' | 'fail', at: number) => {
        await contract.store.jobClaimDue({ now: at, dueBy: at, limit: 10, workerId: 'wrk_s', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        await contract.store.attemptStart({ jobId, attemptId: `att_S${jobId}`, workerId: 'wrk_s', now: at, leaseExpiresAt: at + 60_000 });
        const result = next === 'complete' ? { outcome: 'success' as const, statusCode: 200, durationMs: 42, error: null, responseBody: 'ok' } : failure;
        await contract.store.attemptFinish({ jobId, attemptId: `att_S${jobId}`, workerId: 'wrk_s', now: at + 1, result, next: { kind: next } });
      };
      const feed = async () => (await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 20 })).map((e) => [e.type, e.status]).reverse();
      // The default set: job.failed sent, job.completed not recorded at all.
      await create(project, [job('job_s1', { maxRetries: 0, runAt: T0 })]);
      await finish('job_s1', 'complete', T0);
      expect(await feed()).toEqual([]);
      await contract.store.projectUpdate({ projectId: project.id, patch: { eventTypes: ['job.completed', 'webhook.held'] } });
      await create(project, [job('job_s2', { maxRetries: 0, runAt: T0 + 10 }), job('job_s3', { maxRetries: 0, runAt: T0 + 10 })]);
      await finish('job_s2', 'complete', T0 + 10);
      await finish('job_s3', 'fail', T0 + 10);
      await contract.store.eventInsert({ id: 'evt_sk2', projectId: project.id, type: 'schedule.skipped', occurredAt: T0 + 20, data: '{}' });
      expect(await feed()).toEqual([
        ['job.completed', 'PENDING'],
        ['job.failed', 'NOT_SENT'],
        ['schedule.skipped', 'NOT_SENT'],
      ]);
      const [completed] = (await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 20 })).filter((e) => e.type === 'job.completed');
      expect(JSON.parse(completed!.data)).toEqual({ jobId: 'job_s2', attemptCount: 1, durationMs: 42 });
      expect((await claim(T0 + 100)).map((e) => e.type)).toEqual(['job.completed']);
    });

    it('records schedule.skipped with the advance of its schedule only', async () => {
      const project = await withEvents();
      const schedule = { id: 'sch_ev', projectId: project.id, name: null, cron: '* * * * *', timezone: 'UTC', payload: '{}', maxRetries: null, catchUp: 'latest' as const, overlap: 'skip' as const, paused: false, tags: null, concurrencyKey: null, nextRunAt: T0, lastRunAt: null, lastJobId: null, skippedCount: 0, createdAt: T0, updatedAt: T0 };
      await contract.store.scheduleInsert({ schedule, maxPerProject: 10 });
      const skipped = { id: 'evt_sk', projectId: project.id, type: 'schedule.skipped' as const, occurredAt: T0, data: JSON.stringify({ scheduleId: 'sch_ev', fireAt: new Date(T0).toISOString() }) };
      // A stale advance (the schedule moved on) records nothing.
      expect(await contract.store.scheduleAdvance({ scheduleId: 'sch_ev', expectedNextRunAt: T0 - 1, nextRunAt: T0 + 60_000, lastRun: null, skipped: 1, now: T0, events: [skipped] })).toBe(false);
      expect(await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).toEqual([]);
      expect(await contract.store.scheduleAdvance({ scheduleId: 'sch_ev', expectedNextRunAt: T0, nextRunAt: T0 + 60_000, lastRun: null, skipped: 1, now: T0, events: [skipped] })).toBe(true);
      expect((await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => [e.id, e.type])).toEqual([['evt_sk', 'schedule.skipped']]);
    });

    it('prunes events that occurred at or before the cut-off', async () => {
      const project = await withEvents();
      await contract.store.eventInsert(event(project, 'evt_old', T0));
      await contract.store.eventInsert(event(project, 'evt_new', T0 + 1));
      expect((await contract.store.pruneCount({ projects: [], idempotencyCreatedBy: 0, usageBeforeDay: '2000-01-01', eventsOccurredBy: T0 })).events).toBe(1);
      expect(await contract.store.eventPrune({ occurredBy: T0, limit: 10 })).toBe(1);
      expect((await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => e.id)).toEqual(['evt_new']);
    });
  });
}
