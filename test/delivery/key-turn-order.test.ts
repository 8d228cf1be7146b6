import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimLoop } from '../../src/claims/claim-loop.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, SECOND, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * SPEC sections 10 and 15 together: a keyed job's answer gives its key's next job its turn in the
 * store, where the jobs this worker holds do not see it. No other start of the project may take
 * the slots meanwhile and overtake it (docs/guarantees.md section 5): not a slot another answer
 * frees, not a job held here. Injected clock; a claim loop of the test's own, over the engine's
 * runner and the real store, whose claims it holds at a gate to widen the window to seconds.
 */
describe("a key's next job after its turn (the order rule)", () => {
  let t: TestApp;
  let receiver: TestReceiver;
  const answers = new Map<string, () => void>();
  /** Answers of these jobs wait until the test lets them go. */
  const heldJobs = new Set<string>();

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => {
      const jobId = request.json.jobId as string;
      if (!heldJobs.has(jobId)) return { status: 200 };
      return { status: 200, held: new Promise<void>((resolve) => answers.set(jobId, resolve)) };
    });
    t = await makeTestApp({ delivery: true });
  });
  afterAll(async () => {
    for (const release of answers.values()) release();
    await t.close();
    await receiver.close();
  });

  const statusOf = async (projectId: string, jobId: string) => (await t.store.jobGet({ projectId, jobId }))?.status;
  const completed = (projectId: string, jobId: string) =>
    eventually(() => statusOf(projectId, jobId), { what: `${jobId} COMPLETED`, until: (status) => status === 'COMPLETED', withinMs: 5_000, everyMs: 5 });
  const firstStart = async (jobId: string) => (await t.store.attemptListByJob(jobId)).map((attempt) => attempt.startedAt).sort((a, b) => a - b)[0];

  it("starts the key's next job before a later job held here, when another answer frees a slot before a claim has looked", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 2 } });
    const dispatch = async (body: Record<string, unknown>) => {
      const response = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, ...body } });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().jobId as string;
    };
    const engine = t.engine!;
    // The engine's loop stands aside for one whose claims wait at the gate while it is shut.
    await engine.claimLoop.stop();
    let gateShut = false;
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let claimsAtGate = 0;
    const gatedStore: Store = Object.create(t.store);
    Object.defineProperty(gatedStore, 'jobClaimDue', {
      value: async (params: Parameters<Store['jobClaimDue']>[0]) => {
        if (gateShut) {
          claimsAtGate += 1;
          await gate;
        }
        return t.store.jobClaimDue(params);
      },
    });
    const loop = new ClaimLoop({ store: gatedStore, clock: t.clock, runner: engine.runner, workerId: engine.workerId, log: t.app.log });
    loop.start();
    try {
      // The key's first job and a job without a key take the project's two slots, their answers held.
      const firstOfKey = await dispatch({ concurrencyKey: 'k' });
      const other = await dispatch({});
      heldJobs.add(firstOfKey).add(other);
      await loop.tick();
      await eventually(() => answers.size, { what: 'both first jobs at the receiver', until: (n) => n === 2, withinMs: 5_000, everyMs: 5 });
      // Behind them, due as early: the key's next job (waiting in the store for its key's turn),
      // then a job created after it, which the worker claims and holds for a free slot.
      const nextOfKey = await dispatch({ concurrencyKey: 'k' });
      const later = await dispatch({});
      await loop.tick();
      expect(await statusOf(p.projectId, nextOfKey)).toBe('QUEUED');
      expect(await statusOf(p.projectId, later)).toBe('DISPATCHED');

      // The key's first job is answered: the claim that would find its next job waits at the gate.
      gateShut = true;
      answers.get(firstOfKey)!();
      await completed(p.projectId, firstOfKey);
      await eventually(() => claimsAtGate, { what: 'a claim at the gate after the key’s turn', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
      // Meanwhile the other answer frees a slot: the held later job must not take it.
      answers.get(other)!();
      await completed(p.projectId, other);
      t.clock.advance(SECOND);
      gateShut = false;
      openGate();
      await completed(p.projectId, nextOfKey);
      await completed(p.projectId, later);
      const [nextStarted, laterStarted] = [await firstStart(nextOfKey), await firstStart(later)];
      expect(laterStarted).toBeGreaterThanOrEqual(nextStarted!);
    } finally {
      gateShut = false;
      openGate();
      await loop.stop();
    }
  });
});
