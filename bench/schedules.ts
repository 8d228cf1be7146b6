/**
 * `npm run bench:schedules`: how punctual schedule fires are beside plain jobs, and what many
 * schedules cost (issue 14, SPEC section 9). Punctual as bench:lateness starts it (SQLite, or
 * PostgreSQL with DATABASE_URL; LOG_LEVEL=warn, deliveryConcurrency 1000), its own receiver
 * process; the bare pipe runs the plain-job workload in the same run, for scale.
 *
 *   1. Fires beside jobs: BENCH_FIRE_SCHEDULES (100) every-second schedules created, then the
 *      lateness workload of bench:lateness (5,000 plain jobs due evenly over 10 s) while they
 *      fire; lateness of each fire (arrival − its instant; fires from 3 s after the schedules were
 *      created, since an earlier one cannot be created ahead) and of each plain job (arrival − its
 *      scheduledFor), from the same run. The schedules are then deleted.
 *   2. CPU per fire: BENCH_CPU_SCHEDULES (1,000) every-second schedules for BENCH_CPU_SECONDS
 *      (10) with nothing else running: Punctual's CPU time over the fires delivered (creating,
 *      claiming and delivering each).
 *   3. Many schedules: BENCH_MANY_SCHEDULES (100,000) schedules that fire once a year, created
 *      through the API (64 clients) in projects of 1,000 (the limit); the server's RSS before and after, and its CPU over
 *      BENCH_IDLE_SECONDS (10) of idling with them, against the same before they existed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import {
  cpuLine,
  created,
  latenessOptions,
  latenessRun,
  load,
  machineLine,
  memoryOf,
  ms,
  positiveNumber,
  printLatenessTable,
  sleep,
  startAll,
  type PunctualSystem,
  type Receiver,
} from './delivery-harness.js';
import { percentile } from './percentile.js';

const fireSchedules = Math.round(positiveNumber('BENCH_FIRE_SCHEDULES', 100));
const cpuSchedules = Math.round(positiveNumber('BENCH_CPU_SCHEDULES', 1_000));
const cpuSeconds = positiveNumber('BENCH_CPU_SECONDS', 10);
const manySchedules = Math.round(positiveNumber('BENCH_MANY_SCHEDULES', 100_000));
const idleSeconds = positiveNumber('BENCH_IDLE_SECONDS', 10);

const FIRE_SETTLE_MS = 3_000;

/** Lateness of the fires of a phase whose instant is in [from, until], from the receiver's record of every delivery. */
async function fireLateness(receiver: Receiver, phase: string, from: number, until: number) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-schedules-'));
  const path = join(dir, 'fires.log');
  await receiver.dump(phase, path);
  const firsts = new Map<string, number>();
  let duplicated = 0;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const [, key, arrival] = line.split(' ');
    if (!key || !arrival) continue;
    const instant = Date.parse(key.slice(key.indexOf('@') + 1));
    if (instant < from || instant > until) continue;
    if (firsts.has(key)) duplicated += 1;
    else firsts.set(key, Number(arrival) - instant);
  }
  rmSync(dir, { recursive: true, force: true });
  const values = [...firsts.values()].sort((a, b) => a - b);
  return { count: values.length, p50: percentile(values, 0.5), p99: percentile(values, 0.99), max: values.at(-1) ?? Number.NaN, early: values.filter((v) => v < 0).length, duplicated };
}

/** Creates `count` schedules with this cron, each payload keyed `<phase>:<i>`; their ids. */
async function createSchedules(punctual: PunctualSystem, phase: string, count: number, cron: (i: number) => string): Promise<string[]> {
  const ids: string[] = new Array<string>(count);
  const result = await load(punctual, {
    path: '/api/schedules',
    connections: 64,
    count,
    body: (i) => JSON.stringify({ cron: cron(i), payload: { k: `${phase}:${i}`, ref: 0 } }),
    ok: (status, text) => {
      if (!created(status)) return false;
      const { scheduleId, payload } = JSON.parse(text) as { scheduleId: string; payload: { k: string } };
      ids[Number(payload.k.slice(phase.length + 1))] = scheduleId;
      return true;
    },
  });
  if (result.failures > 0) throw new Error(`${result.failures} schedules refused: ${result.firstFailure}`);
  return ids;
}

async function createManySchedules(punctual: PunctualSystem, count: number): Promise<void> {
  const admin = { authorization: `Bearer ${punctual.adminToken}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${punctual.origin}${path}`, { method: 'POST', headers: admin, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, string>;
  };
  const team = await post('/manage/v1/teams', { name: 'many schedules', plan: 'unlimited' });
  const keys: string[] = [];
  for (let p = 0; p < Math.ceil(count / 1_000); p++) {
    const project = await post(`/manage/v1/teams/${team.teamId}/projects`, { name: `p${p}`, webhookUrl: 'http://127.0.0.1:9/unused' });
    keys.push((await post(`/manage/v1/projects/${project.projectId}/keys`, { name: 'bench' })).key!);
  }
  const pool = new Pool(punctual.origin, { connections: 64 });
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < count) {
        const i = next++;
        const response = await pool.request({
          path: '/api/schedules',
          method: 'POST',
          headers: { authorization: `Bearer ${keys[Math.floor(i / 1_000)]}`, 'content-type': 'application/json' },
          body: JSON.stringify({ cron: `${i % 60} ${Math.floor(i / 60) % 24} 1 1 *`, payload: { i } }),
        });
        const text = await response.body.text();
        if (response.statusCode !== 201) throw new Error(`schedule ${i}: ${response.statusCode} ${text}`);
      }
    }),
  );
  await pool.close();
}

async function deleteSchedules(punctual: PunctualSystem, ids: string[]): Promise<void> {
  const pool = new Pool(punctual.origin, { connections: 16 });
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const response = await pool.request({ path: `/api/schedules/${id}`, method: 'DELETE', headers: punctual.headers });
        await response.body.text();
      }
    }),
  );
  await pool.close();
}

async function main(): Promise<void> {
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(`bench:schedules on ${punctual.storeLine}`);
    console.log(machineLine());
    const o = latenessOptions();
    const filler = o.filler;
    const warm = { jobs: o.warmupJobs, windowMs: 1_000, leadMs: o.leadMs, connections: o.connections, filler };
    await latenessRun(receiver, bare, { phase: 'barewarm', ...warm });
    await latenessRun(receiver, punctual, { phase: 'warm', ...warm });

    // 1. Fires beside plain jobs.
    const bareRun = await latenessRun(receiver, bare, { phase: 'bare', jobs: o.jobs, windowMs: o.windowMs, leadMs: o.leadMs, connections: o.connections, filler });
    const fireIds = await createSchedules(punctual, 'fire', fireSchedules, () => '* * * * * *');
    // A fire due sooner after its schedule was created than the firing lead cannot be created
    // ahead of it: only fires from FIRE_SETTLE_MS on count, as plain jobs get their lead.
    const firesFrom = Date.now() + FIRE_SETTLE_MS;
    const plainRun = await latenessRun(receiver, punctual, { phase: 'plain', jobs: o.jobs, windowMs: o.windowMs, leadMs: o.leadMs, connections: o.connections, filler, meter });
    const firesUntil = Date.now() - 1_000;
    await deleteSchedules(punctual, fireIds);
    await sleep(2_000);
    const fires = await fireLateness(receiver, 'fire', firesFrom, firesUntil);
    printLatenessTable([bareRun, plainRun]);
    console.log(
      `schedule fires in the same run (${fireSchedules} every-second schedules, fires from ${FIRE_SETTLE_MS / 1000} s after they were created to the end of the plain jobs): ` +
        `${fires.count} fires, lateness p50 ${ms(fires.p50)} / p99 ${ms(fires.p99)} / max ${ms(fires.max)} ms, early ${fires.early}, fires delivered twice ${fires.duplicated}`,
    );

    // 2. CPU per fire.
    const cpuIds = await createSchedules(punctual, 'cpu', cpuSchedules, () => '* * * * * *');
    await sleep(3_000);
    const before = (await receiver.stats('cpu')).unique;
    const stopMeter = meter();
    await sleep(cpuSeconds * 1000);
    const use = stopMeter();
    const after = (await receiver.stats('cpu')).unique;
    await deleteSchedules(punctual, cpuIds);
    const delivered = after - before;
    const serverCpuSeconds = (use.cpus.punctual ?? 0) * use.seconds;
    console.log(cpuLine(`${cpuSchedules} every-second schedules`, use));
    console.log(`CPU per fire (created, claimed, delivered): ${((serverCpuSeconds / delivered) * 1e6).toFixed(0)} µs over ${delivered} fires`);
    console.log(`CPU per plain job in the lateness run: ${plainRun.cpu ? (((plainRun.cpu.cpus.punctual ?? 0) * plainRun.cpu.seconds) / o.jobs * 1e6).toFixed(0) : 'n/a'} µs`);

    // 3. Many schedules.
    const pid = punctual.child.pid!;
    const idle = async () => {
      const stop = meter();
      await sleep(idleSeconds * 1000);
      return stop().cpus.punctual ?? 0;
    };
    const idleBefore = await idle();
    const rssBefore = memoryOf(pid).rssMb;
    const startedAt = Date.now();
    // A project holds at most 1,000 schedules: as many projects as that takes, each with a key.
    // Once a year, each at its own minute of 1 January, so that none fires during the run.
    await createManySchedules(punctual, manySchedules);
    const insertSeconds = (Date.now() - startedAt) / 1000;
    await sleep(2_000);
    const idleAfter = await idle();
    const rssAfter = memoryOf(pid).rssMb;
    console.log(
      `${manySchedules} yearly schedules: created at ${(manySchedules / insertSeconds).toFixed(0)}/s; server RSS ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MB; ` +
        `idle CPU ${idleBefore.toFixed(3)} → ${idleAfter.toFixed(3)} CPUs (over ${idleSeconds} s each)`,
    );
  } finally {
    await close();
  }
}

await main();
