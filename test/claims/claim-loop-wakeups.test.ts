import { describe, expect, it } from 'vitest';
import { ClaimLoop, CLAIM_LOOKAHEAD_MS, MAX_SLEEP_MS } from '../../src/claims/claim-loop.js';
import type { Store } from '../../src/store/store.js';
import { useDeliveringApp } from '../support/delivering-app.js';
import { SECOND } from '../support/make-app.js';
import { eventually } from '../support/eventually.js';
import { newJobId } from '../../src/crypto/random-ids.js';

/**
 * When the scheduler wakes (injected clock): for the next due job, sooner when a job is dispatched
 * or rescheduled earlier, and never for a time already past while the only due jobs belong to a
 * project whose delivery slots are all taken (that would spin on empty claims).
 */
describe('scheduler wake-ups (injected clock)', () => {
  const app = useDeliveringApp();

  const dispatch = async (key: string, scheduledFor?: number) => {
    const body = { payload: {}, ...(scheduledFor !== undefined && { scheduledFor: new Date(scheduledFor).toISOString() }) };
    const response = await app.t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(response.statusCode).toBe(201);
    return response.json().jobId as string;
  };
  const settle = () => app.t.engine!.claimLoop.tick();
  const allCompleted = async (projectId: string, jobIds: string[]) => {
    for (const jobId of jobIds) {
      await eventually(async () => (await app.t.store.jobGet({ projectId, jobId }))?.status, {
        what: `${jobId} delivered after the slot freed`,
        until: (status) => status === 'COMPLETED',
        withinMs: 5_000,
        everyMs: 5,
      });
    }
  };

  /**
   * The loop's next wake-up once any pass under way has ended (a pass reads as infinite; on
   * PostgreSQL a notification of the loop's own dispatches may start one at any moment). The
   * injected clock stands still, so the wake-up it settles on is the one it chose.
   */
  const wakesAtSettlesOn = (expected: number) =>
    eventually(() => app.t.engine!.claimLoop.wakesAt, { what: 'the loop asleep until its next wake-up', until: (at) => at !== Infinity, withinMs: 5_000, everyMs: 5 }).then((at) =>
      expect(at).toBe(expected),
    );

  it('sleeps until the earliest job, and wakes sooner for an earlier dispatch or reschedule', async () => {
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url });
    const now = app.t.clock.now();
    await dispatch(p.key, now + 600 * SECOND);
    await settle();
    await wakesAtSettlesOn(now + 600 * SECOND);

    const soon = await dispatch(p.key, now + 200);
    await wakesAtSettlesOn(now + 200);

    const patched = await app.t.api(p.key, { method: 'PATCH', url: `/api/jobs/${soon}`, payload: { scheduledFor: new Date(now + 5 * SECOND).toISOString() } });
    expect(patched.statusCode).toBe(200);
    const later = await dispatch(p.key, now + 3_600 * SECOND);
    const earlier = await app.t.api(p.key, { method: 'PATCH', url: `/api/jobs/${later}`, payload: { scheduledFor: new Date(now + 100).toISOString() } });
    expect(earlier.statusCode).toBe(200);
    await wakesAtSettlesOn(now + 100);
  });

  it('does not wake for due jobs of a saturated project, and claims them when a slot frees', async () => {
    app.holdAnswers();
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url, settings: { deliveryConcurrency: 1 } });
    // The first job takes the project's only slot (its request is held) and the second waits
    // claimed behind it (a worker holds up to twice a project's slots); the others, dispatched
    // once it has, wait due in the store.
    const jobs = [await dispatch(p.key), await dispatch(p.key)];
    await settle();
    await eventually(() => app.receiver.forJob(jobs[0]!).length, { what: 'the first job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    jobs.push(await dispatch(p.key), await dispatch(p.key));
    await settle();
    const now = app.t.clock.now();
    const wakesAt = app.t.engine!.claimLoop.wakesAt;
    // Not a time already past (that would claim again at once, find nothing, and repeat):
    // the safety-net sleep, or a job beyond the claim's horizon.
    expect(wakesAt).toBeGreaterThan(now + CLAIM_LOOKAHEAD_MS);
    expect(wakesAt).toBeLessThanOrEqual(now + MAX_SLEEP_MS + CLAIM_LOOKAHEAD_MS);
    for (const jobId of jobs.slice(2)) expect((await app.t.store.jobGet({ projectId: p.projectId, jobId }))?.status).toBe('QUEUED');

    app.releaseAnswers();
    await allCompleted(p.projectId, jobs);
  });

  it("wakes when a project's keyConcurrency rises: a key's job held behind its running one goes at once", async () => {
    app.holdAnswers();
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url });
    const dispatchKeyed = async () => {
      const response = await app.t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, concurrencyKey: 'k1' } });
      expect(response.statusCode).toBe(201);
      return response.json().jobId as string;
    };
    const [first, second] = [await dispatchKeyed(), await dispatchKeyed()];
    await settle();
    await eventually(() => app.receiver.forJob(first).length, { what: 'the first job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    await settle();
    expect((await app.t.store.jobGet({ projectId: p.projectId, jobId: second }))?.status).toBe('QUEUED');

    // No tick from here on: the update itself must wake the loop (the injected clock stands still,
    // so a loop left asleep until its safety wake-up would never send it).
    const update = await app.t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { keyConcurrency: 2 } });
    expect(update.statusCode, update.body).toBe(200);
    await eventually(() => app.receiver.forJob(second).length, { what: 'the second job of the key at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    app.releaseAnswers();
    await allCompleted(p.projectId, [first, second]);
  });

  it('holds jobs it claimed before a deliveryConcurrency was lowered to the lowered one', async () => {
    app.holdAnswers();
    const p = await app.t.makeProject({ webhookUrl: `${app.receiver.url}/lowered`, settings: { deliveryConcurrency: 2 } });
    // Two take the project's two slots (their requests are held), two wait claimed behind them.
    const jobs = [await dispatch(p.key), await dispatch(p.key), await dispatch(p.key), await dispatch(p.key)];
    await settle();
    await eventually(() => jobs.filter((jobId) => app.receiver.forJob(jobId).length > 0).length, { what: 'two jobs at the receiver', until: (n) => n === 2, withinMs: 5_000, everyMs: 5 });
    await settle();
    const waiting = jobs.filter((jobId) => app.receiver.forJob(jobId).length === 0);
    for (const jobId of waiting) expect((await app.t.store.jobGet({ projectId: p.projectId, jobId }))?.status).toBe('DISPATCHED');

    const update = await app.t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { deliveryConcurrency: 1 } });
    expect(update.statusCode, update.body).toBe(200);
    // The two answers go out; the requests that follow are held again. Both slots free, but of the
    // two jobs waiting here only one may start: the worker starts what a freed slot allows at once.
    app.releaseAnswers();
    app.holdAnswers();
    await eventually(() => waiting.filter((jobId) => app.receiver.forJob(jobId).length > 0).length, { what: 'a waiting job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    await eventually(async () => (await Promise.all(jobs.slice(0, 2).map(async (jobId) => (await app.t.store.jobGet({ projectId: p.projectId, jobId }))?.status))).join(), {
      what: 'the first two answered',
      until: (statuses) => statuses === 'COMPLETED,COMPLETED',
      withinMs: 5_000,
      everyMs: 5,
    });
    expect(app.t.engine!.runner.capacity.runningOf(p.projectId)).toBe(1);
    expect(waiting.filter((jobId) => app.receiver.forJob(jobId).length > 0)).toHaveLength(1);
    app.releaseAnswers();
    await allCompleted(p.projectId, jobs);
  });

  it('holds no more of a project\'s jobs than twice its slots when its dispatches arrive together', async () => {
    app.releaseAnswers();
    app.holdAnswers();
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url, settings: { deliveryConcurrency: 1 } });
    // Created at once, each may be claimed by its own dispatch (the embedded store) or by the
    // scheduler: either way one takes the only slot, one waits claimed to follow it at once, and
    // the rest wait QUEUED, cancellable.
    const jobs = await Promise.all(Array.from({ length: 8 }, () => dispatch(p.key)));
    await settle();
    await eventually(() => jobs.filter((jobId) => app.receiver.forJob(jobId).length > 0).length, { what: 'one job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    await settle();
    const statuses = await Promise.all(jobs.map(async (jobId) => (await app.t.store.jobGet({ projectId: p.projectId, jobId }))?.status));
    expect(statuses.filter((status) => status !== 'QUEUED').sort()).toEqual(['DISPATCHED', 'STARTED']);

    app.releaseAnswers();
    await allCompleted(p.projectId, jobs);
  });

  it("delivers a project's jobs due at once in the order they were created: none overtakes one waiting for a slot", async () => {
    app.releaseAnswers();
    app.receiver.answer({ status: 200, delayMs: 10 });
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url, settings: { deliveryConcurrency: 1 } });
    // Sixteen clients, each dispatching one job after another, while each delivery is under way.
    const created: { jobId: string; sentAt: number; answeredAt: number }[] = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 5; i++) {
          const sentAt = performance.now();
          const jobId = await dispatch(p.key);
          created.push({ jobId, sentAt, answeredAt: performance.now() });
        }
      }),
    );
    await allCompleted(p.projectId, created.map((job) => job.jobId));
    const arrival = new Map(app.receiver.requests.map((r, i) => [r.json.jobId as string, i]));
    // A job created (answered 201) before another was even asked for arrives first.
    const overtaken = created.flatMap((earlier) =>
      created
        .filter((later) => earlier.answeredAt < later.sentAt && arrival.get(later.jobId)! < arrival.get(earlier.jobId)!)
        .map((later) => `${later.jobId} before ${earlier.jobId}`),
    );
    expect(overtaken).toEqual([]);
  });

  it('starts a claimed job that waited for room reserved at a dispatch, once the dispatch gives that room back', async () => {
    app.releaseAnswers();
    app.receiver.answer({ status: 200 });
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url, settings: { deliveryConcurrency: 1 } });
    const project = (await app.t.store.projectGet(p.projectId))!;
    const immediate = app.t.engine!.immediateDelivery();
    // A dispatch has reserved the project's only slot to create its job started (JobCreation.create);
    // meanwhile a job of it is claimed DISPATCHED and waits here for that room.
    const reservation = immediate.reserve(project, 1, 1)!;
    expect(reservation.limit).toBe(1);
    const jobId = await dispatch(p.key);
    await settle();
    expect((await app.t.store.jobGet({ projectId: p.projectId, jobId }))?.status).toBe('DISPATCHED');
    expect(app.receiver.forJob(jobId)).toHaveLength(0);
    // The dispatch created none started (its insert failed, or the project had due jobs waiting):
    // the room comes back, and the waiting job must go, with no other wake-up to come.
    immediate.submit(reservation, []);
    await eventually(() => app.receiver.forJob(jobId).length, { what: 'the waiting job at the receiver', until: (n) => n > 0, withinMs: 5_000, everyMs: 5 });
    await allCompleted(p.projectId, [jobId]);
  });

  it('claims a job due now whose wake-up came while a pass was ending, after its last look, not at the next safety-net wake-up', async () => {
    app.releaseAnswers();
    app.receiver.answer({ status: 200 });
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url });
    const { store, clock } = app.t;
    const engine = app.t.engine!;
    // A job due now is written while a pass ends (as a write of the CLI or another instance would
    // be), and its wake-up reaches the loop in the microtasks between the pass's last look for one
    // and the end of its promise: the gap a wake-up was once forgotten in, until MAX_SLEEP_MS later.
    // A loop of its own over the engine's runner, on the real store, whose next-due read this pass
    // times: the engine's loop stands aside, and the new loop takes the runner's hooks (so this is
    // the file's last test).
    await engine.claimLoop.stop();
    const jobId = newJobId(clock.now());
    let armed = true;
    const timedStore: Store = Object.create(store);
    let loop: ClaimLoop | null = null;
    Object.defineProperty(timedStore, 'jobNextDueAt', {
      value: (params: { after: number }) => {
        if (!armed) return store.jobNextDueAt(params);
        armed = false;
        const answered = (async () => {
          const job = { id: jobId, payload: '{}', scheduledFor: null, runAt: clock.now(), maxRetries: 0 };
          await store.jobCreate({ projectId: p.projectId, teamId: p.teamId, now: clock.now(), jobs: [job], quota: null, idempotency: null, answer: { kind: 'single', statusCode: 201, body: '{}' } });
          // Nothing due later: the loop's only timer is then its safety net, MAX_SLEEP_MS away (jobs
          // of earlier tests wait ahead of the standing clock, and would wake it sooner).
          return null;
        })();
        // Runs after the pass's own continuation (registered later, by its await) and before its end.
        void answered.then(() => Promise.resolve().then(() => loop!.notifyDue(clock.now())));
        return answered;
      },
    });
    loop = new ClaimLoop({ store: timedStore, clock, runner: engine.runner, workerId: engine.workerId, log: app.t.app.log });
    try {
      loop.start();
      await eventually(() => app.receiver.forJob(jobId).length, { what: 'the job written during the pass at the receiver', until: (n) => n === 1, withinMs: 3_000, everyMs: 10 });
      expect(armed).toBe(false);
    } finally {
      await loop.stop();
    }
  });
});
