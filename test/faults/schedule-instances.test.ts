import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_MARGIN_MS } from '../../src/delivery/capacity.js';
import { TEST_STORE } from '../support/make-app.js';
import { ReceiverProcess } from '../support/receiver-process.js';
import { projectByCli, runCli, sharedDatabase } from '../support/spawn-punctual.js';

const INSTANCES = 3;
const SCHEDULES = Number(process.env.SCHEDULE_FAULT_SCHEDULES ?? 200);
/** The project's delivery timeout, the shortest allowed: it sets how long a killed instance's claims are held. */
const DELIVERY_TIMEOUT_MS = 1_000;
/** Long enough for the killed instance's schedule leases (10 s) to lapse and be caught up well before the end. */
const RUN_MS = Number(process.env.SCHEDULE_FAULT_RUN_MS ?? 30_000);

/**
 * SPEC section 9's promise under faults: three `punctual serve` processes on one PostgreSQL, 200
 * every-second schedules (catchUp "all") for 30 s, one instance killed with SIGKILL a third of
 * the way in and started again: every schedule has exactly one job for every second of the run,
 * none delivered before its second, none missed, none doubled.
 */
describe.runIf(TEST_STORE === 'postgres')('schedules on three instances, one killed', () => {
  const database = sharedDatabase('SIGKILL');
  let receiver: ReceiverProcess;

  beforeAll(async () => {
    receiver = await new ReceiverProcess().start();
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.stop();
  });

  it(`fires ${SCHEDULES} every-second schedules once per second each, through a kill -9`, { timeout: RUN_MS + 90_000 }, async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'schedule-fault-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: 'schedule-fault-admin-0123', LOG_LEVEL: 'warn' };
    const { key, projectId } = projectByCli(env, receiver.url);
    // Jobs the killed instance had claimed (up to 25 ms before their second) go back to the queue
    // when their lease lapses: the delivery timeout + 30 s. The shortest timeout keeps that within
    // the run's wait below.
    expect(runCli(['projects', 'update', projectId, '--json', `{"deliveryTimeoutMs": ${DELIVERY_TIMEOUT_MS}}`], env).status).toBe(0);
    const start = () => database.start(env);
    const instances = [];
    for (let i = 0; i < INSTANCES; i++) instances.push(await start());

    const scheduleIds: string[] = [];
    for (let i = 0; i < SCHEDULES; i++) {
      const res = await fetch(`${instances[i % INSTANCES]!.base}/api/schedules`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ cron: '* * * * * *', catchUp: 'all', payload: { i } }),
      });
      expect(res.status).toBe(201);
      scheduleIds.push(((await res.json()) as { scheduleId: string }).scheduleId);
    }
    // Every schedule exists from here on: each second after it has a fire.
    const firstSecond = Math.ceil(Date.now() / 1000) * 1000;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    await sleep(RUN_MS / 3);
    await instances[0]!.server.stop('SIGKILL');
    const killedAt = Date.now();
    await sleep(5_000);
    instances[0] = await start();
    await sleep((2 * RUN_MS) / 3 - 5_000);

    // The last second counted: before the schedules are deleted (which cancels the jobs created
    // ahead of their second) and late enough for fires missed while a killed instance held their
    // schedules (a 10 s lease) to have been caught up.
    const lastSecond = Math.floor(Date.now() / 1000) * 1000 - 3_000;
    for (const [i, scheduleId] of scheduleIds.entries()) {
      const res = await fetch(`${instances[i % INSTANCES]!.base}/api/schedules/${scheduleId}`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
    }
    const expected = SCHEDULES * ((lastSecond - firstSecond) / 1000 + 1);
    const inWindow = async () =>
      (await receiver.arrivals()).filter((a) => a.scheduleId !== null && Date.parse(a.scheduledFor!) >= firstSecond && Date.parse(a.scheduledFor!) <= lastSecond);
    // Long enough for the killed instance's leases to lapse and be rescued (every 5 s), then delivered.
    const deadline = Math.max(Date.now() + 30_000, killedAt + DELIVERY_TIMEOUT_MS + LEASE_MARGIN_MS + 10_000);
    while (new Set((await inWindow()).map((a) => a.jobId)).size < expected && Date.now() < deadline) await sleep(200);
    await sleep(1_000);

    const arrivals = await inWindow();
    // One job per schedule and second: every fire of the window has exactly one job.
    const jobsPerFire = new Map<string, Set<string>>();
    for (const a of arrivals) {
      const fire = `${a.scheduleId} ${a.scheduledFor}`;
      jobsPerFire.set(fire, (jobsPerFire.get(fire) ?? new Set()).add(a.jobId));
    }
    const missing: string[] = [];
    for (const scheduleId of scheduleIds) {
      for (let second = firstSecond; second <= lastSecond; second += 1000) {
        if (!jobsPerFire.has(`${scheduleId} ${new Date(second).toISOString()}`)) missing.push(`${scheduleId} ${new Date(second).toISOString()}`);
      }
    }
    expect(missing.slice(0, 5), `${missing.length} fires without a job`).toEqual([]);
    expect([...jobsPerFire.values()].filter((jobs) => jobs.size !== 1)).toEqual([]);
    expect(jobsPerFire.size).toBe(expected);
    // Never early.
    expect(arrivals.filter((a) => a.arrivedAt < Date.parse(a.scheduledFor!))).toEqual([]);
    const lateness = arrivals.map((a) => a.arrivedAt - Date.parse(a.scheduledFor!)).sort((a, b) => a - b);
    const at = (q: number) => lateness[Math.min(lateness.length - 1, Math.floor(q * lateness.length))]!;
    console.log(`schedules: ${SCHEDULES} every-second schedules on ${INSTANCES} instances, ${jobsPerFire.size} fires: lateness p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${lateness.at(-1)} ms (fires caught up after the kill included)`);
  });
});
