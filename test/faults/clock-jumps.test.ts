import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, SECOND, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

const MINUTE = 60 * SECOND;

/**
 * The application clock is the clock of record (STYLE: inject the clock). When it jumps a minute
 * forward or back (NTP stepping the system clock, a VM resumed), no job is lost and none runs
 * twice: due jobs run once, future ones wait for their time, and a delivery in flight across the
 * jump is not taken from its worker and sent again.
 */
describe(`clock jumps (${TEST_STORE}, injected clock)`, () => {
  let t: TestApp;
  let receiver: TestReceiver;
  let p: TestProject;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ delivery: true, random: () => 0.5 });
    p = await t.makeProject({ webhookUrl: receiver.url });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const dispatchAt = async (at: number | null) =>
    (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, scheduledFor: at === null ? null : new Date(at).toISOString() } })).json().jobId as string;
  const statusOf = async (jobId: string) => (await t.store.jobGet({ projectId: p.projectId, jobId }))!.status;
  const waitForStatus = (jobId: string, status: string) =>
    eventually(() => statusOf(jobId), { what: `job ${jobId} ${status}`, until: (now) => now === status, withinMs: 5_000, everyMs: 5 });
  /** What the background loops would do at this moment: rescue expired leases, claim due jobs. */
  const tick = async () => {
    await t.engine!.rescuer.tick();
    await t.engine!.claimLoop.tick();
  };

  it('a minute forward then back: every job runs once, at or after its time, and an attempt in flight is not sent twice', async () => {
    const t0 = t.clock.now();
    let releaseInFlight: () => void = () => {};
    const inFlightReleased = new Promise<void>((resolve) => (releaseInFlight = resolve));
    const inFlight = await dispatchAt(null);
    receiver.answer((request) => (request.json.jobId === inFlight ? { status: 200, held: inFlightReleased } : { status: 200 }));
    const at30s = await dispatchAt(t0 + 30 * SECOND);
    const at90s = await dispatchAt(t0 + 90 * SECOND);
    const at150s = await dispatchAt(t0 + 150 * SECOND);

    await tick();
    await receiver.waitFor(() => receiver.forJob(inFlight).length === 1, 5_000, 'the attempt in flight');

    // Forward a minute, the attempt still in flight (its lease: 30 s timeout + 30 s margin).
    t.clock.advance(MINUTE);
    await tick();
    await waitForStatus(at30s, 'COMPLETED');
    expect(await statusOf(at90s)).toBe('QUEUED');
    expect(await statusOf(inFlight)).toBe('STARTED');

    // Back a minute: nothing that ran runs again, nothing becomes due early.
    t.clock.set(t0);
    await tick();
    releaseInFlight();
    await waitForStatus(inFlight, 'COMPLETED');
    expect(await statusOf(at90s)).toBe('QUEUED');

    // Time catches up: each remaining job runs once at its time. A second before it, nothing of it
    // has started or left.
    t.clock.set(t0 + 90 * SECOND - SECOND);
    await tick();
    expect(await t.store.attemptListByJob(at90s)).toEqual([]);
    expect(receiver.forJob(at90s)).toHaveLength(0);
    // A millisecond before it, it may be claimed (the claim looks 25 ms ahead) and its attempt
    // recorded ahead (START_AHEAD_MS of ahead-timer.ts, so that the write is off the due instant):
    // that attempt starts at the due time.
    t.clock.set(t0 + 90 * SECOND - 1);
    await tick();
    const [early] = await eventually(() => t.store.attemptListByJob(at90s), { what: 'the attempt recorded ahead', until: (rows) => rows.length > 0, withinMs: 5_000, everyMs: 5 });
    expect(early!.startedAt).toBe(t0 + 90 * SECOND);
    t.clock.set(t0 + 90 * SECOND);
    await tick();
    await waitForStatus(at90s, 'COMPLETED');
    t.clock.set(t0 + 150 * SECOND);
    await tick();
    await waitForStatus(at150s, 'COMPLETED');
    for (const jobId of [inFlight, at30s, at90s, at150s]) expect(receiver.forJob(jobId), jobId).toHaveLength(1);
  });
});
