/** Contract cases of receiver health (SPEC section 13): the hold, its probes and its end. See store-contract.ts. */
import { describe, expect, it } from 'vitest';
import { claimRule } from '../../src/delivery/capacity-rules.js';
import { FAILING_AFTER, PROBE_FIRST_MS, PROBE_MAX_MS, type HealthOutcome } from '../../src/store/event-store.js';
import type { ProjectRow } from '../../src/store/store.js';
import type { ContractContext } from './contract-context.js';

export function healthCases(contract: ContractContext): void {
  const { T0, makeProject, job, create } = contract;
  describe('receiver health (SPEC section 13)', () => {
    const claim = (now: number, limit = 100) =>
      contract.store.jobClaimDue({ now, dueBy: now, limit, workerId: 'wrk_h', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    let n = 0;
    const fail = (at: number, count: number): HealthOutcome[] =>
      Array.from({ length: count }, (_, i) => ({ failed: true, error: 'HTTP 503', at: at + i, eventId: `evt_hf${(n += 1)}`, heldEventId: `evt_hh${n}` }));
    const succeed = (at: number): HealthOutcome => ({ failed: false, error: null, at, eventId: `evt_hs${(n += 1)}`, heldEventId: `evt_hsh${n}` });
    async function holding(extra: Partial<ProjectRow> = {}): Promise<ProjectRow> {
      const project = await makeProject();
      return (await contract.store.projectUpdate({ projectId: project.id, patch: { holdOnFailure: true, eventsUrl: 'http://127.0.0.1:1/events', ...extra } }))!;
    }
    const types = async (project: ProjectRow) =>
      (await contract.store.eventList({ projectId: project.id, beforeSeq: null, limit: 100 })).map((e) => [e.type, JSON.parse(e.data) as unknown]).reverse();
    /** Holds every QUEUED job of the project out of the claims' index, as the engine does once it holds it. */
    async function holdJobs(project: ProjectRow): Promise<void> {
      for (let afterSeq: number | null = 0; afterSeq !== null; ) afterSeq = (await contract.store.jobHoldBatch({ projectId: project.id, afterSeq, limit: 100 })).nextAfterSeq;
    }
    async function release(project: ProjectRow): Promise<number> {
      let total = 0;
      for (;;) {
        const released = await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 100 });
        total += released;
        if (released === 0) return total;
      }
    }

    it('holds a project with holdOnFailure at the 10th failure in a row (webhook.held), with its first probe 30 s on; one without is only failing', async () => {
      const held = await holding();
      const plain = await makeProject();
      expect(await contract.store.webhookHealthRecord({ projectId: held.id, outcomes: fail(T0, FAILING_AFTER - 1) })).toEqual({ held: false });
      expect((await contract.store.webhookHealthGet({ projectId: held.id })).hold).toBeNull();
      expect(await contract.store.webhookHealthRecord({ projectId: held.id, outcomes: fail(T0 + 100, 3) })).toEqual({ held: true });
      const at = T0 + 100;
      expect(await contract.store.webhookHealthGet({ projectId: held.id })).toEqual({
        run: { consecutiveFailures: FAILING_AFTER, failingSince: T0, failingEventAt: at, lastError: 'HTTP 503' },
        hold: { heldSince: at, nextProbeAt: at + PROBE_FIRST_MS, probeIntervalMs: PROBE_FIRST_MS },
      });
      const since = new Date(T0).toISOString();
      expect(await types(held)).toEqual([
        ['webhook.failing', { consecutiveFailures: FAILING_AFTER, lastError: 'HTTP 503', since }],
        ['webhook.held', { consecutiveFailures: FAILING_AFTER, lastError: 'HTTP 503', since }],
      ]);
      // Outcomes of attempts that were in flight change nothing while held (the two after the 10th above neither).
      expect(await contract.store.webhookHealthRecord({ projectId: held.id, outcomes: [...fail(T0 + 200, 5), succeed(T0 + 300)] })).toEqual({ held: false });
      expect((await contract.store.webhookHealthGet({ projectId: held.id })).run?.consecutiveFailures).toBe(FAILING_AFTER);
      expect((await contract.store.webhookHealthGet({ projectId: held.id })).hold?.heldSince).toBe(at);
      expect(await contract.store.webhookHealthRecord({ projectId: plain.id, outcomes: fail(T0, 30) })).toEqual({ held: false });
      expect((await contract.store.webhookHealthGet({ projectId: plain.id })).hold).toBeNull();
    });

    it("steps over a held project's due jobs, spends no attempt, keeps them cancellable, and creates new ones held", async () => {
      const project = await holding();
      const other = await makeProject();
      await create(project, [job('job_hold1', { runAt: T0 + 1 }), job('job_hold2', { runAt: T0 + 2 })]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0, FAILING_AFTER) });
      await holdJobs(project);
      await create(other, [job('job_free', { runAt: T0 + 3 })]);
      await create(project, [job('job_hold3', { runAt: T0 + 4 })]);
      expect((await claim(T0 + 10)).map((j) => j.id)).toEqual(['job_free']);
      expect(await contract.store.jobNextDueAt({ after: 0 })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_hold1' })).toMatchObject({ status: 'QUEUED', attemptCount: 0, runAt: T0 + 1 });
      expect(await contract.store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_hold2', now: T0 + 11 })).toMatchObject({ ok: true, job: { status: 'CANCELLED' } });
      // The hold ends: released earliest due first, and claimed.
      expect(await contract.store.webhookHoldEnd({ projectId: project.id, now: T0 + 50_000, eventId: 'evt_rec' })).toEqual({ heldSince: T0 + FAILING_AFTER - 1 });
      expect(await release(project)).toBe(2);
      expect((await claim(T0 + 50_000)).map((j) => j.id)).toEqual(['job_hold1', 'job_hold3']);
    });

    it('a job claimed before the hold is not started but QUEUED again as it was, its attempt unspent', async () => {
      const project = await holding();
      await create(project, [job('job_pre', { runAt: T0 })]);
      expect((await claim(T0 + 1)).map((j) => j.id)).toEqual(['job_pre']);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 2, FAILING_AFTER) });
      expect(await contract.store.attemptStart({ jobId: 'job_pre', attemptId: 'att_pre', workerId: 'wrk_h', now: T0 + 20, leaseExpiresAt: T0 + 60_000 })).toBeNull();
      expect(await contract.store.jobGet({ projectId: project.id, jobId: 'job_pre' })).toMatchObject({ status: 'QUEUED', attemptCount: 0, runAt: T0 });
      expect(await claim(T0 + 30)).toEqual([]);
    });

    it('claims each probe once, at 30 s, then doubling to 10 min, across instances; a paused project is not probed', async () => {
      const project = await holding();
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0, FAILING_AFTER) });
      const heldAt = T0 + FAILING_AFTER - 1;
      const other = contract.database.openStore();
      await other.migrate();
      try {
        const probes: number[] = [];
        let at = heldAt;
        for (let i = 0; i < 8; i += 1) {
          const next = (await contract.store.webhookProbeNextAt())!;
          expect(await contract.store.webhookProbeClaimDue({ now: next - 1 })).toEqual([]);
          // Two instances claim at once: one gets it.
          const claimed = await Promise.all([contract.store.webhookProbeClaimDue({ now: next }), other.webhookProbeClaimDue({ now: next })]);
          expect(claimed.flat()).toEqual([project.id]);
          probes.push((next - at) / 1000);
          at = next;
        }
        expect(probes).toEqual([30, 60, 120, 240, 480, 600, 600, 600]);
        expect(PROBE_MAX_MS).toBe(600_000);
        // Paused: not probed, and not listed as due; resumed, its probe is due as scheduled.
        const due = (await contract.store.webhookProbeNextAt())!;
        await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
        expect(await contract.store.webhookProbeNextAt()).toBeNull();
        expect(await contract.store.webhookProbeClaimDue({ now: due + 1_000_000 })).toEqual([]);
        await contract.store.projectUpdate({ projectId: project.id, patch: { paused: false } });
        expect(await contract.store.webhookProbeNextAt()).toBe(due);
      } finally {
        await other.close();
      }
    });

    it('ends a hold once: webhook.recovered with heldFor, the run reset; a failing project that was never held recovers with heldFor null', async () => {
      const project = await holding();
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0, FAILING_AFTER) });
      const heldAt = T0 + FAILING_AFTER - 1;
      expect(await contract.store.webhookHoldEnd({ projectId: project.id, now: heldAt + 90_000, eventId: 'evt_rec1' })).toEqual({ heldSince: heldAt });
      expect(await contract.store.webhookHoldEnd({ projectId: project.id, now: heldAt + 90_001, eventId: 'evt_rec2' })).toBeNull();
      expect(await contract.store.webhookHealthGet({ projectId: project.id })).toEqual({ run: null, hold: null });
      expect(await contract.store.webhookProbeNextAt()).toBeNull();
      expect((await types(project)).at(-1)).toEqual(['webhook.recovered', { failingSince: new Date(T0).toISOString(), heldFor: 90_000 }]);
      // Held again by the next run of failures.
      expect(await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 100_000, FAILING_AFTER) })).toEqual({ held: true });
    });

    it('pause and hold are independent: either one keeps the jobs waiting, and ending one leaves the other', async () => {
      const project = await holding();
      await create(project, [job('job_ph', { runAt: T0 })]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0, FAILING_AFTER) });
      await holdJobs(project);
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
      // Resumed while held: still held, nothing released.
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: false } });
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(0);
      expect(await contract.store.projectListWithHeldJobs()).toEqual([]);
      expect((await contract.store.webhookHealthGet({ projectId: project.id })).hold).not.toBeNull();
      // Paused again, then the hold ends: still paused, nothing released.
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: true } });
      await contract.store.webhookHoldEnd({ projectId: project.id, now: T0 + 60_000, eventId: 'evt_rph' });
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(0);
      expect(await claim(T0 + 60_000)).toEqual([]);
      await contract.store.projectUpdate({ projectId: project.id, patch: { paused: false } });
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(1);
      expect((await claim(T0 + 60_001)).map((j) => j.id)).toEqual(['job_ph']);
    });

    it('turning holdOnFailure off ends a hold; its jobs can then be released', async () => {
      const project = await holding();
      await create(project, [job('job_off', { runAt: T0 })]);
      await contract.store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0, FAILING_AFTER) });
      await holdJobs(project);
      await contract.store.projectUpdate({ projectId: project.id, patch: { holdOnFailure: false } });
      expect((await contract.store.webhookHealthGet({ projectId: project.id })).hold).toBeNull();
      expect(await contract.store.projectListWithHeldJobs()).toEqual([project.id]);
      expect(await contract.store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(1);
      expect((await claim(T0 + 1)).map((j) => j.id)).toEqual(['job_off']);
    });

    it('stores holdOnFailure, eventTypes and retryPolicy.stopOn and reads them back', async () => {
      const project = await makeProject();
      expect(project).toMatchObject({ holdOnFailure: false, eventTypes: null, retryStopOn: [] });
      const updated = await contract.store.projectUpdate({ projectId: project.id, patch: { holdOnFailure: true, eventTypes: ['job.completed', 'webhook.held'], retryStopOn: [410, 422] } });
      expect(updated).toMatchObject({ holdOnFailure: true, eventTypes: ['job.completed', 'webhook.held'], retryStopOn: [410, 422] });
      const reopened = contract.database.openStore();
      try {
        expect(await reopened.projectGet(project.id)).toMatchObject({ holdOnFailure: true, eventTypes: ['job.completed', 'webhook.held'], retryStopOn: [410, 422] });
      } finally {
        await reopened.close();
      }
    });
  });
}
