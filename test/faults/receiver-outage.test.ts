import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILING_AFTER, PROBE_FIRST_MS } from '../../src/store/event-store.js';
import { eventually } from '../support/eventually.js';
import { TEST_STORE } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { projectByCli, runCli, sharedDatabase } from '../support/spawn-punctual.js';

const INSTANCES = 3;
const JOBS = Number(process.env.OUTAGE_FAULT_JOBS ?? 300);
const ADMIN_TOKEN = 'outage-fault-admin-token-0123';

/**
 * SPEC section 13 with real processes: three `punctual serve` on one PostgreSQL, a project with
 * holdOnFailure and a receiver that answers 503 for a while, then 200. The project is held once,
 * by one instance; across the three, exactly one probe goes out, 30 s after the hold, and (the
 * receiver back by then) ends it; no job's request goes out while held; every job is then
 * delivered, each answered 200 exactly once.
 */
describe.runIf(TEST_STORE === 'postgres')('a receiver outage on three instances', () => {
  const database = sharedDatabase();
  let receiver: TestReceiver;
  let down = true;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer(() => (down ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.close();
  });

  it('holds once, probes once across instances, spends no attempt while held, and delivers every job after', { timeout: 240_000 }, async () => {
    const env = { PUNCTUAL_SECRET_KEY: 'outage-fault-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'warn', DATABASE_URL: database.url };
    const { key, projectId } = projectByCli(env, receiver.url);
    // Retries 1 s apart: without the hold every job would spend all its attempts within the outage.
    const settings = { holdOnFailure: true, deliveryTimeoutMs: 1_000, retryPolicy: { maxRetries: 3, initialDelayMs: 1_000, maxDelayMs: 1_000 } };
    expect(runCli(['projects', 'update', projectId, '--body', JSON.stringify(settings)], env).status).toBe(0);
    const instances: { base: string }[] = [];
    for (let i = 0; i < INSTANCES; i++) instances.push(await database.start(env));
    const dispatch = async (i: number) => {
      const res = await fetch(`${instances[i % INSTANCES]!.base}/api/jobs/dispatch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ payload: { i } }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { jobId: string }).jobId;
    };
    const health = async () =>
      ((await (await fetch(`${instances[0]!.base}/manage/v1/projects/${projectId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
        health: { state: string; since: string | null; nextProbeAt: string | null };
      }).health;

    const jobIds: string[] = [];
    for (let i = 0; i < JOBS; i++) jobIds.push(await dispatch(i));
    const held = await eventually(health, { what: 'held', until: (h) => h.state === 'held', withinMs: 30_000 });
    const heldSince = Date.parse(held.since!);
    expect(Date.parse(held.nextProbeAt!)).toBe(heldSince + PROBE_FIRST_MS);
    // Requests already out when the hold landed are answered; then nothing of a job goes out.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const jobRequests = () => receiver.requests.filter((r) => r.json.probe !== true);
    const probes = () => receiver.requests.filter((r) => r.json.probe === true);
    const sentBeforeHold = jobRequests().length;
    expect(sentBeforeHold).toBeGreaterThanOrEqual(FAILING_AFTER);
    // Dispatches are still accepted while held.
    for (let i = JOBS; i < JOBS + 20; i++) jobIds.push(await dispatch(i));

    // Back before the first probe: the probe, 30 s after the hold and from one instance only, ends
    // the hold. (A failed probe keeping the hold, and the doubling after it, are the injected-clock
    // tests' and the model's: waiting them out here would cost CI a minute more.)
    down = false;
    await receiver.waitFor(() => probes().length >= 1, 45_000, 'the probe');
    const probeAt = probes()[0]!.arrivedAt;
    expect(probeAt - heldSince).toBeGreaterThanOrEqual(PROBE_FIRST_MS - 50);
    expect(jobRequests().filter((r) => r.arrivedAt < probeAt)).toHaveLength(sentBeforeHold);
    await receiver.waitFor(() => jobIds.every((jobId) => receiver.forJob(jobId).some((r) => r.arrivedAt >= probeAt)), 60_000, 'every job after the hold');
    const recovered = await eventually(health, { what: 'healthy', until: (h) => h.state === 'healthy', withinMs: 10_000 });
    expect(recovered.nextProbeAt).toBeNull();
    // One probe sequence across the three instances: no other instance probed too.
    expect(probes()).toHaveLength(1);
    // Each job answered 200 exactly once (no kill, so no duplicate is allowed), its attempts before
    // the hold (at most a few: those in flight) plus that one.
    const successes = new Map<string, number>();
    for (const request of receiver.requests.filter((r) => r.json.probe !== true && r.arrivedAt >= probeAt)) {
      successes.set(request.json.jobId as string, (successes.get(request.json.jobId as string) ?? 0) + 1);
    }
    expect(jobIds.filter((jobId) => successes.get(jobId) !== 1)).toEqual([]);
    for (const jobId of jobIds) {
      const before = receiver.forJob(jobId).filter((r) => r.arrivedAt < probeAt).length;
      expect(before, jobId).toBeLessThanOrEqual(3);
    }
    // The receiver saw each job's last request before the instance that sent it recorded the 200:
    // poll the statuses to a deadline rather than read them once.
    const notCompleted = async () => {
      const statuses = await Promise.all(
        jobIds.map(async (jobId) => ((await (await fetch(`${instances[1]!.base}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { status: string }).status),
      );
      return statuses.filter((status) => status !== 'COMPLETED');
    };
    expect(await eventually(notCompleted, { what: 'every job COMPLETED', until: (left) => left.length === 0, withinMs: 10_000, everyMs: 100 })).toEqual([]);
  });
});
