/**
 * `npm run bench:backlog`: the lateness workload of bench:lateness again, with a large backlog of
 * jobs waiting 30 days ahead; Punctual beside the bare pipe in the same run.
 *
 * In one run, with the same three child processes throughout (bench/delivery-harness.ts):
 *   1. a warm-up, then the lateness run without backlog, for the bare pipe and for Punctual;
 *   2. BENCH_BACKLOG (1,000,000) jobs due 30 days after they are sent, through
 *      POST /api/jobs/dispatch/batch, 100 per request, from BENCH_BACKLOG_CONNECTIONS (16) clients,
 *      payload about BENCH_BACKLOG_PAYLOAD_BYTES (256) bytes: into Punctual, then into the bare
 *      pipe (which holds them on in-memory timers); the insert rate is printed;
 *   3. the lateness run again, for the bare pipe and for Punctual.
 * Then: no backlog job reached the receiver, and the SQLite file holds every one of them QUEUED
 * and due at least 29 days ahead. Memory: VmHWM (peak RSS) of each server process from /proc,
 * read after each step; Punctual's at the end is the figure of the goal.
 *
 * Goal: Punctual's p99 with the backlog within 2 ms of its p99 without; Punctual's peak RSS
 * ≤ 300 MB. (The lateness goal of bench:lateness is printed too.) Exits non-zero when not met.
 */
import Database from 'better-sqlite3';
import {
  BACKLOG_BATCH,
  clean,
  describeLateness,
  latenessGoal,
  latenessOptions,
  insertBacklog,
  latenessRun,
  machineLine,
  memoryOf,
  ms,
  payloadFiller,
  positiveNumber,
  printLatenessTable,
  startAll,
  type LatenessRun,
  type PunctualSystem,
  type Receiver,
  type System,
} from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';

const P99_DELTA_GOAL_MS = 2;
const RSS_GOAL_MB = 300;
const BATCH = BACKLOG_BATCH;
const AHEAD_MS = 30 * 86_400_000;
const backlog = Math.round(positiveNumber('BENCH_BACKLOG', 1_000_000) / BATCH) * BATCH;
const backlogConnections = Math.round(positiveNumber('BENCH_BACKLOG_CONNECTIONS', 16));
const backlogFiller = payloadFiller(Math.round(positiveNumber('BENCH_BACKLOG_PAYLOAD_BYTES', 256)));
/** Progress is printed after each chunk of this many jobs. */
const CHUNK = 100_000;

/** Inserts the backlog, printing progress; returns the jobs/s over the whole insert. */
function insertWithProgress(system: System, phase: string): Promise<number> {
  return insertBacklog(system, {
    phase,
    jobs: backlog,
    connections: backlogConnections,
    filler: backlogFiller,
    aheadMs: AHEAD_MS,
    chunk: CHUNK,
    progress: (done, seconds) => {
      const memory = memoryOf(system.child.pid!);
      console.log(
        `  ${system.name}: ${done} backlog jobs in ${seconds.toFixed(1)} s (${(done / seconds).toFixed(0)} jobs/s), ` +
          `RSS ${memory.rssMb.toFixed(0)} MB (${memory.anonMb.toFixed(0)} anonymous), peak ${memory.peakMb.toFixed(0)} MB`,
      );
    },
  });
}

function memoryLine(step: string, systems: System[]): void {
  const parts = systems.map((s) => {
    const m = memoryOf(s.child.pid!);
    return `${s.name} peak ${m.peakMb.toFixed(0)} MB (now ${m.rssMb.toFixed(0)} MB: ${m.anonMb.toFixed(0)} anonymous, ${m.fileMb.toFixed(0)} file and shared)`;
  });
  console.log(`memory ${step}: ${parts.join(', ')}`);
}

/** The backlog must still be waiting, untouched: every job QUEUED and due at least 29 days ahead. */
function backlogIntact(punctual: PunctualSystem): number {
  const db = new Database(punctual.dbPath!, { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare(`SELECT count(*) AS n FROM jobs WHERE status = 'QUEUED' AND run_at >= ?`).get(Date.now() + 29 * 86_400_000) as { n: number };
    return row.n;
  } finally {
    db.close();
  }
}

async function deliveredBacklog(receiver: Receiver, phase: string): Promise<number> {
  return (await receiver.count(phase)).deliveries;
}

async function main(): Promise<number> {
  const o = latenessOptions();
  if (postgresUrlFromEnv()) throw new Error('bench:backlog runs on the embedded store only: unset DATABASE_URL');
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(
      `backlog: ${backlog} jobs due 30 days ahead, batch endpoint, ${BATCH} per request, ${backlogConnections} clients, ` +
        `payload about ${Math.round(positiveNumber('BENCH_BACKLOG_PAYLOAD_BYTES', 256))} bytes`,
    );
    console.log(`${machineLine()}, SQLite synchronous=${punctual.synchronous}, LOG_LEVEL=warn`);
    console.log('');
    const systems = [bare, punctual];
    // Scraped as Prometheus would, but every second: the queue-depth count runs over every job.
    const scrapeMetricsEveryMs = positiveNumber('BENCH_SCRAPE_MS', 1_000);
    console.log(`Punctual's /metrics is scraped every ${scrapeMetricsEveryMs} ms during every run (queue depth counted at most every 5 s)`);
    const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter, scrapeMetricsEveryMs };
    const runs: LatenessRun[] = [];
    for (const system of systems) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
      runs.push(await latenessRun(receiver, system, { ...common, phase: system.name, jobs: o.jobs, windowMs: o.windowMs }));
    }
    memoryLine('after the runs without backlog', systems);

    const rates: Record<string, number> = {};
    for (const system of [punctual, bare]) rates[system.name] = await insertWithProgress(system, `backlog-${system.name}`);
    memoryLine('after the backlog insert', systems);

    for (const system of systems) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}-backlog`, jobs: o.jobs, windowMs: o.windowMs }));
    }
    memoryLine('at the end', systems);
    const punctualPeak = memoryOf(punctual.child.pid!).peakMb;

    console.log('');
    printLatenessTable(runs);
    console.log('');
    console.log(
      `backlog insert: punctual ${rates.punctual!.toFixed(0)} jobs/s, bare ${rates.bare!.toFixed(0)} jobs/s (ratio ${(rates.punctual! / rates.bare!).toFixed(2)})`,
    );
    const [, bareBefore, , punctualBefore, bareAfter, punctualAfter] = runs as [LatenessRun, LatenessRun, LatenessRun, LatenessRun, LatenessRun, LatenessRun];
    console.log(
      `ratio punctual/bare lateness with backlog: p50 ${(punctualAfter.stats.p50 / bareAfter.stats.p50).toFixed(2)}, ` +
        `p99 ${(punctualAfter.stats.p99 / bareAfter.stats.p99).toFixed(2)}, max ${(punctualAfter.stats.max / bareAfter.stats.max).toFixed(2)}`,
    );
    console.log(`bare p99 without / with backlog: ${ms(bareBefore.stats.p99)} / ${ms(bareAfter.stats.p99)} ms`);

    let failed = !clean(runs);
    const delta = punctualAfter.stats.p99 - punctualBefore.stats.p99;
    const deltaMet = delta <= P99_DELTA_GOAL_MS;
    console.log(
      `punctual p99 without / with backlog: ${ms(punctualBefore.stats.p99)} / ${ms(punctualAfter.stats.p99)} ms, ` +
        `difference ${delta.toFixed(1)} ms (goal <= ${P99_DELTA_GOAL_MS}: ${deltaMet ? 'met' : 'NOT met'})`,
    );
    const rssMet = punctualPeak <= RSS_GOAL_MB;
    console.log(`punctual peak RSS (VmHWM): ${punctualPeak.toFixed(0)} MB (goal <= ${RSS_GOAL_MB}: ${rssMet ? 'met' : 'NOT met'})`);
    latenessGoal(punctualBefore);
    latenessGoal(punctualAfter);

    const early = (await deliveredBacklog(receiver, 'backlog-punctual')) + (await deliveredBacklog(receiver, 'backlog-bare'));
    const intact = backlogIntact(punctual);
    const backlogOk = early === 0 && intact === backlog;
    console.log(
      `backlog: ${early} backlog jobs reached the receiver; ${intact} of ${backlog} still QUEUED in SQLite and due >= 29 days ahead: ${backlogOk ? 'ok' : 'FAIL'}`,
    );
    if (!backlogOk || !deltaMet || !rssMet) failed = true;
    return failed ? 1 : 0;
  } finally {
    await close();
  }
}

process.exitCode = await main();
