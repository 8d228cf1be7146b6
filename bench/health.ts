/**
 * `npm run bench:health`: what a held project's backlog of due jobs costs the other projects'
 * deliveries, and how fast it drains once a probe ends the hold (SPEC section 13). Embedded store,
 * Punctual as a user runs it, the bare pipe in the same run for scale.
 *
 * In one run (bench/delivery-harness.ts):
 *   1. a warm-up, then the lateness run of bench:lateness, for the bare pipe and for Punctual;
 *   2. a second project with holdOnFailure, its webhook URL a closed port: 20 jobs fail on it
 *      (connection refused) and it is held; then BENCH_HELD_JOBS (10,000 by default, 100,000 for
 *      the figure in BENCHMARKS.md) jobs due at once are dispatched to it (batch endpoint): they
 *      wait, QUEUED;
 *   3. the lateness run again on Punctual's first project, with that backlog due and held;
 *   4. its webhook URL is pointed at the receiver and POST …/probe ends the hold: the time for the
 *      backlog to reach the receiver, and the rate.
 * Checks: the project was held, every backlog job arrived after the probe.
 *
 * Goal: Punctual's p99 with the held backlog within 1 ms of its p99 without. Exits non-zero when not met.
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

const P99_DELTA_GOAL_MS = 1;
const heldJobs = Math.round(positiveNumber('BENCH_HELD_JOBS', 10_000) / 100) * 100;
/** The held project's concurrency: the drain's ceiling. */
const CONCURRENCY = Math.round(positiveNumber('BENCH_HELD_CONCURRENCY', 100));

async function main(): Promise<number> {
  const o = latenessOptions();
  if (postgresUrlFromEnv()) throw new Error('bench:health runs on the embedded store only: unset DATABASE_URL');
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(`held backlog: ${heldJobs} jobs due at once, dispatched to a held second project (deliveryConcurrency ${CONCURRENCY})`);
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
      name: 'held',
      // Nothing listens there: every attempt is a network error, which counts toward the health.
      webhookUrl: 'http://127.0.0.1:9/down',
      holdOnFailure: true,
      deliveryConcurrency: CONCURRENCY,
    });
    const projectId = second.projectId as string;
    const key = (await manage(origin, adminToken, 'POST', `/manage/v1/projects/${projectId}/keys`, { name: 'bench' })).key as string;
    const heldSystem: System = { ...punctual, headers: { ...punctual.headers, authorization: `Bearer ${key}` } };
    const quiet = { connections: 4, filler: payloadFiller(256), aheadMs: 0, progress: () => {} };
    await insertBacklog(heldSystem, { ...quiet, phase: 'trip', jobs: 20, chunk: 20 });
    const heldAt = Date.now();
    let state = '';
    while (state !== 'held' && Date.now() - heldAt < 60_000) {
      await sleep(100);
      state = ((await manage(origin, adminToken, 'GET', `/manage/v1/projects/${projectId}`)).health as { state: string }).state;
    }
    if (state !== 'held') throw new Error(`the second project did not turn held (${state})`);
    const inserted = Date.now();
    const rate = await insertBacklog(heldSystem, { ...quiet, connections: 16, phase: 'held', jobs: heldJobs, chunk: heldJobs });
    console.log(`held backlog dispatched: ${heldJobs} jobs at ${rate.toFixed(0)} jobs/s in ${((Date.now() - inserted) / 1000).toFixed(1)} s`);

    runs.push(await latenessRun(receiver, punctual, { ...common, phase: 'punctual-held', jobs: o.jobs, windowMs: o.windowMs }));
    const leaked = (await receiver.count('held')).deliveries;

    await manage(origin, adminToken, 'PATCH', `/manage/v1/projects/${projectId}`, { webhookUrl: first.webhookUrl });
    const probedAt = Date.now();
    const probe = await manage(origin, adminToken, 'POST', `/manage/v1/projects/${projectId}/probe`);
    const answeredMs = Date.now() - probedAt;
    let drained = 0;
    while (drained < heldJobs && Date.now() - probedAt < 600_000) {
      await sleep(200);
      drained = (await receiver.count('held')).unique;
    }
    const drainMs = Date.now() - probedAt;
    const after = ((await manage(origin, adminToken, 'GET', `/manage/v1/projects/${projectId}`)).health as { state: string }).state;

    console.log('');
    printLatenessTable(runs);
    console.log('');
    const without = runs[3]!;
    const withBacklog = runs[4]!;
    const delta = withBacklog.stats.p99 - without.stats.p99;
    console.log(`punctual p99 without / with a held backlog of ${heldJobs}: ${ms(without.stats.p99)} / ${ms(withBacklog.stats.p99)} ms (delta ${ms(delta)} ms)`);
    console.log(`bare p99 in the same run: ${ms(runs[1]!.stats.p99)} ms`);
    console.log(`backlog jobs delivered while held: ${leaked}`);
    console.log(
      `probe: ${probe.outcome as string} (${probe.statusCode as number}), answered in ${answeredMs} ms (the hold ended, the backlog released); ` +
        `${drained} of ${heldJobs} delivered ${(drainMs / 1000).toFixed(1)} s after it (${(drained / (drainMs / 1000)).toFixed(0)} jobs/s at deliveryConcurrency ${CONCURRENCY}); health then: ${after}`,
    );
    const met = clean(runs) && leaked === 0 && drained === heldJobs && probe.outcome === 'success' && after === 'healthy' && delta <= P99_DELTA_GOAL_MS;
    console.log(`goal (p99 within ${P99_DELTA_GOAL_MS} ms, nothing delivered while held, all after the probe): ${met ? 'met' : 'NOT met'}`);
    return met ? 0 : 1;
  } finally {
    await close();
  }
}

process.exitCode = await main();
