import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClaimLoop } from '../../src/claims/claim-loop.js';
import { AttemptRunner } from '../../src/delivery/attempt-runner.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, SECOND, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * SPEC sections 10 and 15 together: a keyed job's answer gives its key's next job its turn in the
 * store, where the jobs this worker holds do not see it. No other start of the project may overtake
 * it (docs/guarantees.md section 5): not in a slot another answer frees, not a job held here, not
 * a job a claim took while the answer's outcome was being recorded. Injected clock (it stands
 * still), the real store and receiver; the engine stands aside for a runner and a claim loop of the
 * test's own over the store behind gates that hold a claim or an outcome's write at the moment that
 * matters (every job is then created QUEUED, and claimed).
 */
describe("a key's next job after its turn (the order rule)", () => {
  let t: TestApp;
  let receiver: TestReceiver;
  /** Answers held until the test lets them go: of jobs dispatched with `{"hold": true}` as their payload. */
  const answers = new Map<string, () => void>();
  /** The jobs whose attempts the runner started (STARTED recorded apart from a claim or a dispatch), in order. */
  const startOrder: string[] = [];

  /** Claims wait while this is set, until it resolves. */
  let claimGate: Promise<void> | null = null;
  let claimsAtGate = 0;
  /** The outcome of this job waits until the promise resolves. */
  let finishGate: { jobId: string; open: Promise<void>; reached: boolean } | null = null;
  let runner: AttemptRunner;
  let loop: ClaimLoop;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => {
      if ((request.json.payload as { hold?: boolean }).hold !== true) return { status: 200 };
      return { status: 200, held: new Promise<void>((resolve) => answers.set(request.json.jobId as string, resolve)) };
    });
    t = await makeTestApp({ delivery: true });
    const engine = t.engine!;
    const options = engine['options'];
    await engine.stop(1_000);
    const store = t.store;
    const gated: Store = Object.create(store);
    Object.defineProperties(gated, {
      jobClaimDue: {
        value: async (params: Parameters<Store['jobClaimDue']>[0]) => {
          if (claimGate) {
            claimsAtGate += 1;
            await claimGate;
          }
          return store.jobClaimDue(params);
        },
      },
      attemptStart: {
        value: (params: Parameters<Store['attemptStart']>[0]) => {
          startOrder.push(params.jobId);
          return store.attemptStart(params);
        },
      },
      attemptFinish: {
        value: async (params: Parameters<Store['attemptFinish']>[0]) => {
          if (finishGate?.jobId === params.jobId) {
            finishGate.reached = true;
            await finishGate.open;
          }
          return store.attemptFinish(params);
        },
      },
    });
    runner = new AttemptRunner({
      store: gated,
      clock: t.clock,
      metrics: options.metrics,
      log: options.log,
      client: options.client,
      workerId: 'wrk_keyturnorder',
      globalConcurrency: options.globalConcurrency,
      signingSecrets: options.signingSecrets,
      callbackTokens: options.callbackTokens,
      onRequeued: (runAt) => loop.notifyDue(runAt),
    });
    loop = new ClaimLoop({ store: gated, clock: t.clock, runner, workerId: 'wrk_keyturnorder', log: options.log });
    options.client.prepare();
    runner.start();
    loop.start();
  });
  afterAll(async () => {
    for (const release of answers.values()) release();
    await loop?.stop();
    await runner?.drain(1_000);
    await t.close();
    await receiver.close();
  });

  const statusOf = async (projectId: string, jobId: string) => (await t.store.jobGet({ projectId, jobId }))?.status;
  const completed = (projectId: string, jobId: string) =>
    eventually(() => statusOf(projectId, jobId), { what: `${jobId} COMPLETED`, until: (status) => status === 'COMPLETED', withinMs: 5_000, everyMs: 5 });
  const dispatcher = (key: string) => async (body: { hold?: boolean; concurrencyKey?: string } = {}) => {
    const { hold, ...rest } = body;
    const response = await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: hold ? { hold } : {}, ...rest } });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().jobId as string;
  };

  /** Every job goes through a claim here: a dispatch wakes the engine's loop, which stands aside, so this loop is told. */
  const claimNow = () => loop.tick();

  it("starts the key's next job before a job created after it, when a claim took that one while the answer's outcome was being recorded", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    const dispatch = dispatcher(p.key);
    // The key's first job takes the project's only slot, its answer held.
    const firstOfKey = await dispatch({ concurrencyKey: 'k', hold: true });
    await claimNow();
    await eventually(() => answers.has(firstOfKey), { what: 'the first job at the receiver', withinMs: 5_000, everyMs: 5 });
    // Behind it, due as early: the key's next job (waiting for its key's turn in the store), then
    // two jobs created after it: one is claimed and held here (a worker holds up to twice a
    // project's slots), the other waits in the store.
    const nextOfKey = await dispatch({ concurrencyKey: 'k' });
    const later = [await dispatch(), await dispatch()];
    await claimNow();
    expect(await Promise.all([nextOfKey, ...later].map((jobId) => statusOf(p.projectId, jobId)))).toEqual(['QUEUED', 'DISPATCHED', 'QUEUED']);

    // The first job is answered, and its outcome's write waits at a gate while a claim runs: that
    // claim must leave the answered job's room for its key's next one.
    let openGate: () => void = () => {};
    finishGate = { jobId: firstOfKey, open: new Promise<void>((resolve) => (openGate = resolve)), reached: false };
    try {
      answers.get(firstOfKey)!();
      await eventually(() => finishGate!.reached, { what: "the first job's outcome at the gate", withinMs: 5_000, everyMs: 5 });
      await claimNow();
      openGate();
      for (const jobId of [firstOfKey, nextOfKey, ...later]) await completed(p.projectId, jobId);
    } finally {
      openGate();
      finishGate = null;
    }
    // One slot: they started one at a time, the key's next job first.
    expect(startOrder.filter((jobId) => [nextOfKey, ...later].includes(jobId))).toEqual([nextOfKey, ...later]);
  });

  it("starts the key's next job before a later job held here, when another answer frees a slot before a claim has looked", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 2 } });
    const dispatch = dispatcher(p.key);
    let openGate: () => void = () => {};
    try {
      // The key's first job and a job without a key take the project's two slots, their answers held.
      const firstOfKey = await dispatch({ concurrencyKey: 'k', hold: true });
      const other = await dispatch({ hold: true });
      await claimNow();
      await eventually(() => answers.has(firstOfKey) && answers.has(other), { what: 'both first jobs at the receiver', withinMs: 5_000, everyMs: 5 });
      // Behind them, due as early: the key's next job (waiting in the store for its key's turn),
      // then a job created after it, which the worker claims and holds for a free slot.
      const nextOfKey = await dispatch({ concurrencyKey: 'k' });
      const later = await dispatch();
      await claimNow();
      expect(await statusOf(p.projectId, nextOfKey)).toBe('QUEUED');
      expect(await statusOf(p.projectId, later)).toBe('DISPATCHED');

      // The key's first job is answered: the claim that would find its next job waits at the gate.
      claimGate = new Promise<void>((resolve) => (openGate = resolve));
      claimsAtGate = 0;
      answers.get(firstOfKey)!();
      await completed(p.projectId, firstOfKey);
      await eventually(() => claimsAtGate, { what: "a claim at the gate after the key's turn", until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
      // Meanwhile the other answer frees a slot: the held later job must not take it.
      answers.get(other)!();
      await completed(p.projectId, other);
      t.clock.advance(SECOND);
      claimGate = null;
      openGate();
      await completed(p.projectId, nextOfKey);
      await completed(p.projectId, later);
      // Both start once the claim is back (the clock stood still meanwhile: a start before it would
      // be a second earlier), the key's next job first.
      const startedAt = async (jobId: string) => (await t.store.attemptListByJob(jobId))[0]!.startedAt;
      expect([await startedAt(nextOfKey), await startedAt(later)]).toEqual([t.clock.now(), t.clock.now()]);
      expect(startOrder.filter((jobId) => jobId === nextOfKey || jobId === later)).toEqual([nextOfKey, later]);
    } finally {
      claimGate = null;
      openGate();
    }
  });
});
