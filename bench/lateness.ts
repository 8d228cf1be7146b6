/**
 * `npm run bench:lateness`: how close to its scheduledFor each job reaches the webhook, Punctual
 * beside a bare pipe (an in-memory setTimeout per job, then an undici POST) in the same run.
 *
 * For each system, a warm-up (BENCH_WARMUP_JOBS, 500, due over 1 s, not measured), then
 * BENCH_JOBS (5,000) jobs due evenly over the next BENCH_WINDOW_MS (10,000 ms), the first due
 * BENCH_LEAD_MS (2,000 ms) after dispatching starts, so that every job is stored before the first
 * is due. Dispatched by 64 concurrent clients, payload about 1 KB.
 *
 * Lateness = arrival at the receiver − scheduledFor, on the wall clock of this machine.
 * Goal: Punctual p99 ≤ 10 ms and max ≤ 50 ms, nothing lost, duplicated or early.
 * Exits non-zero when not met. DATABASE_URL=postgres://… and BENCH_INSTANCES run Punctual on
 * PostgreSQL (bench/delivery-harness.ts), and print the database's work per job too.
 */
import {
  clean,
  describeLateness,
  latenessGoal,
  latenessOptions,
  latenessRun,
  machineLine,
  printLatenessTable,
  startAll,
  type LatenessRun,
} from './delivery-harness.js';

async function main(): Promise<number> {
  const o = latenessOptions();
  const { receiver, bare, punctual, meter, pg, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(`${machineLine()}, ${punctual.storeLine}, LOG_LEVEL=warn`);
    console.log('');
    const runs: LatenessRun[] = [];
    for (const system of [bare, punctual]) {
      const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter, pg: system === punctual ? pg : null };
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
      runs.push(await latenessRun(receiver, system, { ...common, phase: system.name, jobs: o.jobs, windowMs: o.windowMs }));
    }
    printLatenessTable(runs);
    const bareRun = runs[1]!;
    const punctualRun = runs[3]!;
    console.log('');
    console.log(
      `ratio punctual/bare lateness: p50 ${(punctualRun.stats.p50 / bareRun.stats.p50).toFixed(2)}, p99 ${(punctualRun.stats.p99 / bareRun.stats.p99).toFixed(2)}, ` +
        `max ${(punctualRun.stats.max / bareRun.stats.max).toFixed(2)}`,
    );
    const met = latenessGoal(punctualRun);
    return met && clean(runs) ? 0 : 1;
  } finally {
    await close();
  }
}

process.exitCode = await main();
