/**
 * `npm run bench:e2e`: jobs due at once, from the dispatch request to the webhook, Punctual beside
 * a bare pipe in the same run (bench/delivery-harness.ts starts the receiver, Punctual and the bare
 * pipe as child processes).
 *
 * For each system, a warm-up (BENCH_WARMUP_JOBS, not measured) and then BENCH_JOBS (20,000)
 * immediate jobs dispatched by BENCH_CONNECTIONS (64) concurrent clients, each with one request in
 * flight, POST /api/jobs/dispatch with a payload of about 1 KB and no scheduledFor. The bare pipe
 * answers 201 after its forward to the receiver has been answered; Punctual answers 201 once the
 * job is committed and delivers it afterwards.
 *
 * Figures: jobs/s delivered = jobs / (last arrival at the receiver − first dispatch sent); lag =
 * arrival − the moment that job's dispatch request was sent (p50/p99/max); lost = jobs that never
 * arrived within 15 s of the last arrival; duplicates by jobId and by the benchmark's own key.
 * For Punctual, the SQLite file must then hold every job COMPLETED, with one attempt each.
 * Goal: punctual/bare jobs/s ≥ 0.5, zero lost, zero duplicates. Exits non-zero when not met.
 * DATABASE_URL=postgres://… and BENCH_INSTANCES run Punctual on PostgreSQL
 * (bench/delivery-harness.ts); the schema must then hold every job COMPLETED with one attempt, and
 * the database's work per job is printed too.
 */
import type { PgPhase } from './pg-bench.js';
import { pgPhaseLines } from './pg-bench.js';
import {
  cpuLine,
  created,
  dumpPhase,
  load,
  machineLine,
  ms,
  payloadFiller,
  payloadOf,
  positiveNumber,
  startAll,
  storeCounts,
  type CpuUse,
  type Receiver,
  type System,
} from './delivery-harness.js';

const RATIO_GOAL = 0.5;
const jobs = Math.round(positiveNumber('BENCH_JOBS', 20_000));
const warmupJobs = Math.round(positiveNumber('BENCH_WARMUP_JOBS', 2_000));
const connections = Math.round(positiveNumber('BENCH_CONNECTIONS', 64));
const payloadBytes = Math.round(positiveNumber('BENCH_PAYLOAD_BYTES', 1024));
const filler = payloadFiller(payloadBytes);

interface Run {
  system: string;
  jobs: number;
  dispatchS: number;
  deliveredS: number;
  lost: number;
  duplicates: number;
  failures: number;
  firstFailure: string | null;
  p50: number;
  p99: number;
  max: number;
  cpu: CpuUse;
  pg: PgPhase | null;
}

async function run(
  receiver: Receiver,
  system: System,
  phase: string,
  count: number,
  meter: () => () => CpuUse,
  pg: (() => Promise<() => Promise<PgPhase>>) | null,
): Promise<Run> {
  const stopPg = pg ? await pg() : null;
  const stopMeter = meter();
  const result = await load(system, {
    path: '/api/jobs/dispatch',
    connections,
    count,
    body: (i) => `{"payload":${payloadOf(`${phase}:${i}`, Date.now(), filler)}}`,
    ok: created,
  });
  const unique = await receiver.waitFor(phase, count, { idleMs: 15_000 });
  const cpu = stopMeter();
  const pgPhase = stopPg ? await stopPg() : null;
  const stats = await receiver.stats(phase);
  await dumpPhase(receiver, phase);
  return {
    system: system.name,
    jobs: count,
    dispatchS: (result.doneAt - result.firstSentAt) / 1000,
    deliveredS: (stats.lastArrival - result.firstSentAt) / 1000,
    lost: count - unique,
    duplicates: Math.max(stats.duplicateKeys, stats.duplicateJobIds),
    failures: result.failures,
    firstFailure: result.firstFailure,
    p50: stats.p50,
    p99: stats.p99,
    max: stats.max,
    cpu,
    pg: pgPhase,
  };
}

const pad = (value: string | number, width: number) => String(value).padStart(width);

async function main(): Promise<number> {
  const { receiver, bare, punctual, meter, pg, close } = await startAll();
  try {
    console.log(
      `e2e: ${jobs} immediate jobs per system after ${warmupJobs} warm-up jobs, ${connections} concurrent clients, ` +
        `payload about ${payloadBytes} bytes; bare pipe answers 201 after its forward is answered`,
    );
    console.log(`${machineLine()}, ${punctual.storeLine}, LOG_LEVEL=warn`);
    console.log('');

    const runs: Run[] = [];
    for (const system of [bare, punctual]) {
      const systemPg = system === punctual ? pg : null;
      await run(receiver, system, `${system.name}warm`, warmupJobs, meter, systemPg);
      runs.push(await run(receiver, system, system.name, jobs, meter, systemPg));
    }

    console.log(
      `${'system'.padEnd(10)}${pad('jobs', 7)}${pad('dispatch/s', 12)}${pad('delivered/s', 13)}${pad('lag p50 ms', 12)}${pad('p99 ms', 9)}` +
        `${pad('max ms', 9)}${pad('lost', 6)}${pad('dup', 5)}${pad('fail', 6)}${pad('server CPU µs/job', 19)}`,
    );
    for (const r of runs) {
      console.log(
        `${r.system.padEnd(10)}${pad(r.jobs, 7)}${pad((r.jobs / r.dispatchS).toFixed(0), 12)}${pad((r.jobs / r.deliveredS).toFixed(0), 13)}` +
          `${pad(ms(r.p50), 12)}${pad(ms(r.p99), 9)}${pad(ms(r.max), 9)}${pad(r.lost, 6)}${pad(r.duplicates, 5)}${pad(r.failures, 6)}` +
          `${pad(((r.cpu.cpus[r.system]! * r.cpu.seconds * 1e6) / r.jobs).toFixed(0), 19)}`,
      );
    }
    for (const r of runs) console.log(cpuLine(r.system, r.cpu));
    for (const r of runs) if (r.pg) for (const line of pgPhaseLines(r.system, r.pg, r.jobs, r.cpu)) console.log(line);
    const [bareRun, punctualRun] = runs as [Run, Run];
    const ratio = punctualRun.jobs / punctualRun.deliveredS / (bareRun.jobs / bareRun.deliveredS);
    console.log('');
    console.log(`ratio punctual/bare delivered jobs/s: ${ratio.toFixed(2)} (goal >= ${RATIO_GOAL}: ${ratio >= RATIO_GOAL ? 'met' : 'NOT met'})`);

    let failed = ratio < RATIO_GOAL;
    for (const r of runs) {
      if (r.failures > 0) console.log(`FAIL: ${r.system}: ${r.failures} dispatches failed, first: ${r.firstFailure}`);
      if (r.lost > 0 || r.duplicates > 0) console.log(`FAIL: ${r.system}: ${r.lost} lost, ${r.duplicates} duplicates`);
      if (r.failures > 0 || r.lost > 0 || r.duplicates > 0) failed = true;
    }
    // The receiver has each request before Punctual records its outcome: allow the last ones to land.
    const total = jobs + warmupJobs;
    const checkFrom = Date.now();
    let counts = await storeCounts(punctual);
    let consistent = false;
    for (;;) {
      consistent = counts.byStatus.COMPLETED === total && counts.attempts === total;
      if (consistent || Date.now() - checkFrom > 10_000) break;
      await new Promise((wait) => setTimeout(wait, 100));
      counts = await storeCounts(punctual);
    }
    console.log(
      `punctual store: ${JSON.stringify(counts.byStatus)}, ${counts.attempts} attempts for ${total} jobs ` +
        `(${Date.now() - checkFrom} ms after the figures): ${consistent ? 'ok' : 'FAIL'}`,
    );
    if (!consistent) failed = true;
    return failed ? 1 : 0;
  } finally {
    await close();
  }
}

process.exitCode = await main();
