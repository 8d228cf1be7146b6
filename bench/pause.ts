/**
 * `npm run bench:pause`: what a paused project's backlog of due jobs costs the other projects'
 * deliveries, and how fast it drains once resumed (SPEC section 10). Embedded store, Punctual as a
 * user runs it, the bare pipe in the same run for scale.
 *
 * In one run (bench/delivery-harness.ts):
 *   1. a warm-up, then the lateness run of bench:lateness, for the bare pipe and for Punctual;
 *   2. a second project is created and paused through the management API, as an operator would,
 *      and BENCH_PAUSED_JOBS (100,000) jobs due at once are dispatched to it (batch endpoint): they
 *      wait, QUEUED;
 *   3. the lateness run again on Punctual's first project, with that backlog due and waiting;
 *   4. the project is resumed: the time for its backlog to reach the receiver.
 * Checks: no backlog job arrived before the resume, every one after it.
 *
 * Goal: Punctual's p99 with the paused backlog within 2 ms of its p99 without. Exits non-zero when
 * not met. (Before jobs of a paused project were held out of the scheduler's index, each claim
 * stepped over them: about 20 ms a claim for 100,000, measured with the store alone.)
 */
import {
  clean,
  describeLateness,
  insertBacklog,
  latenessOptions,
  latenessRun,
  machineLine,
  manage,
  ms,
  payloadFiller,
  positiveNumber,
  printLatenessTable,
  sleep,
  startAll,
  type LatenessRun,
  type System,
} from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';

const P99_DELTA_GOAL_MS = 2;
const pausedJobs = Math.round(positiveNumber('BENCH_PAUSED_JOBS', 100_000) / 100) * 100;

async function main(): Promise<number> {
  const o = latenessOptions();
  if (postgresUrlFromEnv()) throw new Error('bench:pause runs on the embedded store only: unset DATABASE_URL');
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(`paused backlog: ${pausedJobs} jobs due at once, dispatched to a paused second project`);
    console.log(`${machineLine()}, SQLite synchronous=${punctual.synchronous}`);
    console.log('');
    const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter };
    const runs: LatenessRun[] = [];
    for (const system of [bare, punctual]) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
      runs.push(await latenessRun(receiver, system, { ...common, phase: system.name, jobs: o.jobs, windowMs: o.windowMs }));
    }

    const { origin, adminToken } = punctual;
    const first = await manage(origin, adminToken, 'GET', `/manage/v1/projects/${punctual.projectId}`);
    const second = await manage(origin, adminToken, 'POST', `/manage/v1/teams/${first.teamId as string}/projects`, {
      name: 'paused',
      webhookUrl: first.webhookUrl,
    });
    const projectId = second.projectId as string;
    await manage(origin, adminToken, 'PATCH', `/manage/v1/projects/${projectId}`, { paused: true, deliveryConcurrency: 1_000 });
    const key = (await manage(origin, adminToken, 'POST', `/manage/v1/projects/${projectId}/keys`, { name: 'bench' })).key as string;
    const pausedSystem: System = { ...punctual, headers: { ...punctual.headers, authorization: `Bearer ${key}` } };
    const inserted = Date.now();
    const rate = await insertBacklog(pausedSystem, {
      phase: 'paused',
      jobs: pausedJobs,
      connections: 16,
      filler: payloadFiller(256),
      aheadMs: 0,
      chunk: pausedJobs,
      progress: () => {},
    });
    console.log(`paused backlog dispatched: ${pausedJobs} jobs at ${rate.toFixed(0)} jobs/s in ${((Date.now() - inserted) / 1000).toFixed(1)} s`);

    runs.push(await latenessRun(receiver, punctual, { ...common, phase: 'punctual-paused', jobs: o.jobs, windowMs: o.windowMs }));
    const leaked = (await receiver.count('paused')).deliveries;

    const resumedAt = Date.now();
    await manage(origin, adminToken, 'PATCH', `/manage/v1/projects/${projectId}`, { paused: false });
    const answeredMs = Date.now() - resumedAt;
    let drained = 0;
    while (drained < pausedJobs && Date.now() - resumedAt < 600_000) {
      await sleep(200);
      drained = (await receiver.count('paused')).unique;
    }
    const drainMs = Date.now() - resumedAt;

    console.log('');
    printLatenessTable(runs);
    console.log('');
    const without = runs[3]!;
    const withBacklog = runs[4]!;
    const delta = withBacklog.stats.p99 - without.stats.p99;
    console.log(`punctual p99 without / with a paused backlog of ${pausedJobs}: ${ms(without.stats.p99)} / ${ms(withBacklog.stats.p99)} ms (delta ${ms(delta)} ms)`);
    console.log(`bare p99 in the same run: ${ms(runs[1]!.stats.p99)} ms`);
    console.log(`backlog jobs delivered while paused: ${leaked}`);
    console.log(`resume: PATCH answered in ${answeredMs} ms; ${drained} of ${pausedJobs} delivered ${(drainMs / 1000).toFixed(1)} s after it (${(drained / (drainMs / 1000)).toFixed(0)} jobs/s)`);
    const met = clean(runs) && leaked === 0 && drained === pausedJobs && delta <= P99_DELTA_GOAL_MS;
    console.log(`goal (p99 within ${P99_DELTA_GOAL_MS} ms, nothing delivered while paused, all after): ${met ? 'met' : 'NOT met'}`);
    return met ? 0 : 1;
  } finally {
    await close();
  }
}

process.exitCode = await main();
