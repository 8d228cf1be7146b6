import { describe, expect, it } from 'vitest';
import { useDeliveringApp } from '../support/delivering-app.js';
import { eventually } from '../support/eventually.js';
import { TEST_STORE } from '../support/make-app.js';

/**
 * The application clock jumping forward past due times (an injected clock here; a stepped system
 * clock in production) while the worker's timers, set in real time, still wait: what is due by the
 * clock starts at once, and in due order within a project (SPEC section 10), whichever way a job
 * reached the worker (claimed ahead of its time and held for it, or claimed once due).
 */
describe('jobs due when the clock jumps (injected clock)', () => {
  const app = useDeliveringApp();

  const dispatch = async (key: string, scheduledFor: number) => {
    const response = await app.t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, scheduledFor: new Date(scheduledFor).toISOString() } });
    expect(response.statusCode).toBe(201);
    return response.json().jobId as string;
  };

  /**
   * A job due 20 ms from now, claimed ahead and held here for its time; the clock goes back a
   * minute, so its timer waits about that long in real time; a second job, due 10 ms after it, is
   * dispatched; the clock jumps past both and the loop claims. The order they reached the receiver in.
   */
  const arrivalsAfterJump = async (deliveryConcurrency: number) => {
    app.receiver.answer({ status: 200 });
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url, settings: { deliveryConcurrency } });
    const { clock, store } = app.t;
    const start = clock.now();
    // Due within the claim's lookahead: claimed at once and held here for its time.
    const first = await dispatch(p.key, start + 20);
    await eventually(async () => (await store.jobGet({ projectId: p.projectId, jobId: first }))?.status, { what: 'the first job claimed ahead', until: (s) => s === 'DISPATCHED', withinMs: 5_000, everyMs: 5 });
    clock.advance(-60_000);
    const second = await dispatch(p.key, start + 30);
    clock.advance(61_000);
    await app.t.engine!.claimLoop.tick();
    await eventually(() => app.receiver.forJob(first).length + app.receiver.forJob(second).length, { what: 'both jobs at the receiver', until: (n) => n === 2, withinMs: 5_000, everyMs: 5 });
    return { first, second, arrivals: app.receiver.requests.filter((r) => r.json.jobId === first || r.json.jobId === second).map((r) => r.json.jobId) };
  };

  it('starts a job held ahead whose time passed before a job due after it, when the clock jumps past both', async () => {
    const { first, second, arrivals } = await arrivalsAfterJump(1);
    expect(arrivals).toEqual([first, second]);
  });

  // SQLite only: there a claim starts the jobs it finds due and has room for in its own commit
  // (JobClaimParams.startable), so without the fix the later job's request leaves before the held
  // one is even released. PostgreSQL's claim starts none; both go through the runner, which starts
  // them in due order in one turn, and two requests sent together may reach the receiver in either
  // order over their two connections. With the fix the held job leaves a whole claim (a durable
  // commit) ahead of the later one.
  it.runIf(TEST_STORE === 'sqlite')('starts a job held ahead whose time passed before a claim starts a job due after it at once (a project with room for both)', async () => {
    // Two slots: the held job takes one, so the claim has room to start the second job as it
    // claims it (STARTED); the held first job, due before it, must start first.
    const { first, second, arrivals } = await arrivalsAfterJump(2);
    expect(arrivals).toEqual([first, second]);
  });

  it("claims at once on a wake-up that comes after the clock jumped past the loop's next wake-up, not when its timer ends", async () => {
    app.receiver.answer({ status: 200 });
    const p = await app.t.makeProject({ webhookUrl: app.receiver.url });
    const { clock } = app.t;
    const loop = app.t.engine!.claimLoop;
    const jobId = await dispatch(p.key, clock.now() + 10_000);
    await loop.tick();
    await eventually(() => loop.wakesAt, { what: 'the loop asleep until the job', until: (at) => at === clock.now() + 10_000, withinMs: 5_000, everyMs: 5 });
    // The clock jumps past the job's time; the loop's timer, set in real time, has 10 s to go. A
    // wake-up for a later time (another instance's dispatch, a reschedule) comes now.
    clock.advance(20_000);
    app.t.engine!.notifyDue(clock.now() + 60_000);
    await eventually(() => app.receiver.forJob(jobId).length, { what: 'the job at the receiver', until: (n) => n > 0, withinMs: 3_000, everyMs: 5 });
  });
});
