/**
 * `npm run bench:async`: the throughput cost of async completion (SPEC section 11) against plain
 * delivery, beside what a user would run instead, in the same run.
 *
 * For each system and each mode, BENCH_ASYNC_WARMUP_JOBS (500, not measured) and then
 * BENCH_ASYNC_JOBS (5,000) jobs due at once, dispatched through the batch endpoint (100 a request,
 * BENCH_ASYNC_CONNECTIONS = 8 clients, a payload of about BENCH_PAYLOAD_BYTES = 1,024 bytes):
 *   - plain: the receiver (bench/receiver.ts) answers 200 at once; a job is done when it arrived;
 *   - async: the receiver answers 202 at once and right after POSTs {"outcome":"success"} to the
 *     system; a job is done when that report's 200 came back to the receiver.
 * Systems, each in its own process (bench/delivery-harness.ts), one after the other:
 *   - bare:     bench/bare-pipe.ts, stores nothing; with BARE_ASYNC=1 its POST /result/:jobId
 *               answers 200 at once; a fresh process per mode;
 *   - bullmq:   bench/bullmq-front.ts, BullMQ 5 (Worker concurrency 64) on Redis; with
 *               BULLMQ_ASYNC=1 a 202 keeps the job active until POST /result/:jobId, which answers
 *               once the job is completed; a fresh front and key prefix per mode (obliterated after);
 *   - punctual: `punctual serve` as a user runs it (startPunctual mode 'user': its defaults, the
 *               embedded SQLite store, synchronous=FULL, deliveryConcurrency 100), one process: the
 *               first project for plain, a second one with asyncCompletion true (PATCHed through
 *               the management API) for async; the receiver reports to
 *               /api/jobs/:jobId/attempts/:attemptId/result with the delivery's callbackToken.
 * Printed per system and mode: jobs, seconds from the first dispatch to the last job done, jobs/s
 * done, reports refused (any answer but 200), jobs not done (within 15 s of the last progress),
 * duplicate deliveries, and each phase's CPU use by process; then async/plain per system, and
 * Punctual's async jobs/s against BullMQ's and the bare pipe's. Then Punctual's SQLite file: every
 * job of the async project COMPLETED with exactly one attempt whose acceptedAt and reportedAt are
 * set, every job of the plain project COMPLETED with one attempt.
 *
 * Each measured phase first waits for a quiet machine and is run again when other processes were
 * busy during it (BENCH_MAX_OTHERS, BENCH_RETRIES, BENCH_QUIET_WAIT_S below).
 *
 * Goal (issue 16): Punctual async/plain >= 0.5 (async completion, twice the HTTP work per job,
 * costs at most half the throughput). Exits non-zero when not met, when a job was not done, a
 * report refused, or the store check failed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  cpuLine,
  cpuMeter,
  insertBacklog,
  machineLine,
  manage,
  payloadFiller,
  positiveNumber,
  Receiver,
  startBare,
  startBullmq,
  startPunctual,
  stopSystem,
  type CpuUse,
  type PunctualSystem,
  waitForQuietMachine,
  type System,
} from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';
import { procStat } from './proc-stat.js';

const RATIO_GOAL = 0.5;
const jobs = Math.max(100, Math.round(positiveNumber('BENCH_ASYNC_JOBS', 5_000) / 100) * 100);
const warmupJobs = Math.max(100, Math.round(positiveNumber('BENCH_ASYNC_WARMUP_JOBS', 500) / 100) * 100);
const connections = Math.round(positiveNumber('BENCH_ASYNC_CONNECTIONS', 8));
const payloadBytes = Math.round(positiveNumber('BENCH_PAYLOAD_BYTES', 1024));
const filler = payloadFiller(payloadBytes);
const redisUrl = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';
const IDLE_MS = 15_000;
/**
 * The machine is shared: each measured phase waits (up to BENCH_QUIET_WAIT_S) until other
 * processes use at most BENCH_MAX_OTHERS CPUs, and is run again (up to BENCH_RETRIES times) when
 * they used more during it; the last run is the one reported, with a note when it was still busy.
 */
const maxOthers = positiveNumber('BENCH_MAX_OTHERS', 0.3);
const retries = Math.round(Number(process.env.BENCH_RETRIES ?? 2));
const quietWaitS = positiveNumber('BENCH_QUIET_WAIT_S', 300);

type Mode = 'plain' | 'async';
const MODES: Mode[] = ['plain', 'async'];

interface Run {
  system: string;
  mode: Mode;
  jobs: number;
  seconds: number;
  done: number;
  refused: number;
  firstRefusal: string | null;
  duplicates: number;
  cpu: CpuUse;
}

/** One system in one mode: what to dispatch to, and the processes to meter. */
interface Started {
  system: System;
  pids: Record<string, number[]>;
}

/** `count` jobs due at once to `system`; done when they arrived (plain) or their reports were answered 200 (async). */
async function measure(receiver: Receiver, started: Started, phase: string, mode: Mode, count: number): Promise<Run> {
  const { system } = started;
  if (mode === 'async') await receiver.answerAsync(phase, system.origin);
  const stopMeter = cpuMeter({ ...started.pids, receiver: [receiver.child.pid!], loader: [process.pid] });
  const firstDispatch = Date.now();
  await insertBacklog(system, { phase, jobs: count, connections, filler, aheadMs: 0, chunk: count, progress: () => {} });
  const done = await receiver.waitFor(phase, count, { idleMs: IDLE_MS, reports: mode === 'async' });
  const cpu = stopMeter();
  const stats = await receiver.stats(phase);
  const reports = await receiver.reports(phase);
  const lastDone = mode === 'async' ? reports.lastReport : stats.lastArrival;
  return {
    system: system.name,
    mode,
    jobs: count,
    seconds: (lastDone - firstDispatch) / 1000,
    done,
    refused: reports.refused,
    firstRefusal: reports.firstRefusal,
    duplicates: Math.max(stats.duplicateKeys, stats.duplicateJobIds),
    cpu,
  };
}

/** redis-server's pid when it runs on this machine, for the CPU meter; null otherwise. */
async function redisPid(): Promise<number | null> {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await client.connect();
    const pid = Number(/^process_id:(\d+)/m.exec(await client.info('server'))?.[1]);
    return Number.isInteger(pid) && procStat(pid) !== null ? pid : null;
  } finally {
    client.disconnect();
  }
}

/** A fresh front under a key prefix of its own; `stop` stops it and obliterates its queue. */
async function startBullmqMode(receiver: Receiver, mode: Mode, redis: number | null): Promise<Started & { stop: () => Promise<void> }> {
  const prefix = `punctual-async-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const obliterate = async () => {
    const queue = new Queue('webhooks', { connection: { url: redisUrl }, prefix });
    await queue.obliterate({ force: true });
    await queue.close();
  };
  const system = await startBullmq(receiver.url, { redisUrl, prefix, async: mode === 'async' });
  return {
    system,
    pids: { bullmq: [system.child.pid!], ...(redis !== null && { redis: [redis] }) },
    stop: async () => {
      await stopSystem(system);
      await obliterate();
    },
  };
}

interface ProjectCheck {
  jobs: number;
  completed: number;
  oneAttempt: number;
  acceptedAndReported: number;
}

/** Per project in Punctual's SQLite file (read-only, beside the server): its jobs, COMPLETED ones, ones with exactly one attempt, and of those the ones accepted and reported. */
function checkProject(punctual: PunctualSystem, projectId: string): ProjectCheck {
  const db = new Database(punctual.dbPath!, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(
        `SELECT count(*) AS jobs, coalesce(sum(status = 'COMPLETED'), 0) AS completed, coalesce(sum(n = 1), 0) AS oneAttempt,
                coalesce(sum(n = 1 AND reported = 1), 0) AS acceptedAndReported
         FROM (SELECT j.status, count(a.id) AS n, coalesce(sum(a.accepted_at IS NOT NULL AND a.reported_at IS NOT NULL), 0) AS reported
               FROM jobs j LEFT JOIN attempts a ON a.job_id = j.id WHERE j.project_id = ? GROUP BY j.id)`,
      )
      .get(projectId) as ProjectCheck;
  } finally {
    db.close();
  }
}

const pad = (value: string | number, width: number) => String(value).padStart(width);
const ratio = (a: Run, b: Run) => a.done / a.seconds / (b.done / b.seconds);

async function main(): Promise<number> {
  if (postgresUrlFromEnv()) throw new Error('bench:async runs Punctual on the embedded store, as a user runs it: unset DATABASE_URL');
  const cleanups: (() => Promise<void>)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'punctual-async-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    const receiver = await Receiver.start();
    cleanups.push(() => receiver.stop());
    const redis = await redisPid();
    console.log(
      `async completion: ${jobs} jobs due at once per system and mode after ${warmupJobs} warm-up jobs, batch endpoint (100 a request, ` +
        `${connections} clients), payload about ${payloadBytes} bytes; plain: the receiver answers 200; async: it answers 202, then POSTs the success report`,
    );
    console.log(
      `${machineLine()}; Punctual as a user runs it (SQLite synchronous=FULL, defaults: deliveryConcurrency 100); BullMQ: Worker concurrency 64; ` +
        `bare pipe: forwards at once, stores nothing`,
    );
    console.log('');

    const runs: Run[] = [];
    const warmups: Run[] = [];
    const rerun: Run[] = [];
    const notes: string[] = [];
    const measured = async (started: Started, mode: Mode) => {
      const name = started.system.name;
      warmups.push(await measure(receiver, started, `${name}-${mode}-warm`, mode, warmupJobs));
      for (let attempt = 0; ; attempt += 1) {
        await waitForQuietMachine(maxOthers, quietWaitS);
        const run = await measure(receiver, started, `${name}-${mode}${attempt > 0 ? `-again${attempt}` : ''}`, mode, jobs);
        const others = run.cpu.cpus.others ?? 0;
        console.log(`${name} ${mode}: ${run.done} of ${run.jobs} done in ${run.seconds.toFixed(3)} s; other processes used ${others.toFixed(2)} CPUs`);
        if (others <= maxOthers || attempt >= retries) {
          if (others > maxOthers) notes.push(`NOTE: ${name} ${mode}: other processes used ${others.toFixed(2)} CPUs, above ${maxOthers}, after ${retries} retries`);
          runs.push(run);
          break;
        }
        rerun.push(run);
        console.log(`  above ${maxOthers}: running it again`);
      }
    };
    /** Jobs dispatched to Punctual in `mode`: the warm-up, the measured run and the runs done again. */
    const dispatched = (mode: Mode) => [...warmups, ...rerun, ...runs].filter((r) => r.system === 'punctual' && r.mode === mode).reduce((n, r) => n + r.jobs, 0);

    for (const mode of MODES) {
      const bare = await startBare(receiver.url, { compiled: true, async: mode === 'async' });
      try {
        await measured({ system: bare, pids: { bare: [bare.child.pid!] } }, mode);
      } finally {
        await stopSystem(bare);
      }
    }
    for (const mode of MODES) {
      const bullmq = await startBullmqMode(receiver, mode, redis);
      try {
        await measured(bullmq, mode);
      } finally {
        await bullmq.stop();
      }
    }

    const punctual = await startPunctual(dir, receiver.url, null, 'user');
    cleanups.push(() => stopSystem(punctual));
    const { origin, adminToken } = punctual;
    const first = await manage(origin, adminToken, 'GET', `/manage/v1/projects/${punctual.projectId}`);
    const second = await manage(origin, adminToken, 'POST', `/manage/v1/teams/${first.teamId as string}/projects`, { name: 'async', webhookUrl: receiver.url });
    const asyncProjectId = second.projectId as string;
    await manage(origin, adminToken, 'PATCH', `/manage/v1/projects/${asyncProjectId}`, { asyncCompletion: true });
    const asyncKey = (await manage(origin, adminToken, 'POST', `/manage/v1/projects/${asyncProjectId}/keys`, { name: 'bench' })).key as string;
    const pids = { punctual: [punctual.child.pid!] };
    await measured({ system: punctual, pids }, 'plain');
    await measured({ system: { ...punctual, headers: { ...punctual.headers, authorization: `Bearer ${asyncKey}` } }, pids }, 'async');

    // The receiver has a plain delivery before Punctual records its outcome: allow the last ones to land.
    const plainTotal = dispatched('plain');
    const asyncTotal = dispatched('async');
    const checkFrom = Date.now();
    let plainCheck = checkProject(punctual, punctual.projectId);
    while ((plainCheck.completed < plainTotal || plainCheck.oneAttempt < plainTotal) && Date.now() - checkFrom < 10_000) {
      await new Promise((wait) => setTimeout(wait, 100));
      plainCheck = checkProject(punctual, punctual.projectId);
    }
    const asyncCheck = checkProject(punctual, asyncProjectId);

    console.log('');
    console.log(
      `${'system'.padEnd(10)}${'mode'.padEnd(7)}${pad('jobs', 6)}${pad('seconds', 9)}${pad('jobs/s done', 13)}${pad('refused', 9)}${pad('not done', 10)}${pad('dup', 5)}`,
    );
    for (const r of runs) {
      console.log(
        `${r.system.padEnd(10)}${r.mode.padEnd(7)}${pad(r.jobs, 6)}${pad(r.seconds.toFixed(3), 9)}${pad((r.done / r.seconds).toFixed(0), 13)}` +
          `${pad(r.refused, 9)}${pad(r.jobs - r.done, 10)}${pad(r.duplicates, 5)}`,
      );
    }
    for (const r of runs) console.log(cpuLine(`${r.system} ${r.mode}`, r.cpu));
    console.log('');
    const run = (system: string, mode: Mode) => runs.find((r) => r.system === system && r.mode === mode)!;
    const costs = ['bare', 'bullmq', 'punctual'].map((s) => `${s} ${ratio(run(s, 'async'), run(s, 'plain')).toFixed(2)}`);
    console.log(`async/plain jobs/s done: ${costs.join(', ')}`);
    const punctualAsync = run('punctual', 'async');
    console.log(
      `punctual async / bullmq async: ${ratio(punctualAsync, run('bullmq', 'async')).toFixed(2)}; ` +
        `punctual async / bare async: ${ratio(punctualAsync, run('bare', 'async')).toFixed(2)}`,
    );
    const asyncOk = asyncCheck.jobs === asyncTotal && asyncCheck.completed === asyncTotal && asyncCheck.acceptedAndReported === asyncTotal;
    const plainOk = plainCheck.jobs === plainTotal && plainCheck.completed === plainTotal && plainCheck.oneAttempt === plainTotal;
    console.log(
      `punctual store, async project: ${asyncCheck.jobs} jobs, ${asyncCheck.completed} COMPLETED, ${asyncCheck.oneAttempt} with one attempt, ` +
        `${asyncCheck.acceptedAndReported} of those accepted and reported, for ${asyncTotal} dispatched: ${asyncOk ? 'ok' : 'FAIL'}`,
    );
    console.log(
      `punctual store, plain project: ${plainCheck.jobs} jobs, ${plainCheck.completed} COMPLETED, ${plainCheck.oneAttempt} with one attempt, ` +
        `for ${plainTotal} dispatched: ${plainOk ? 'ok' : 'FAIL'}`,
    );

    for (const note of notes) console.log(note);
    let failed = !asyncOk || !plainOk;
    for (const r of [...warmups, ...rerun, ...runs]) {
      const what = `${r.system} ${r.mode}${warmups.includes(r) ? ' warm-up' : rerun.includes(r) ? ' (a run done again)' : ''}`;
      if (r.refused > 0) console.log(`FAIL: ${what}: ${r.refused} reports refused, first: ${r.firstRefusal}`);
      if (r.done < r.jobs) console.log(`FAIL: ${what}: ${r.jobs - r.done} jobs not done`);
      if (r.refused > 0 || r.done < r.jobs) failed = true;
    }
    const cost = ratio(punctualAsync, run('punctual', 'plain'));
    const met = cost >= RATIO_GOAL;
    console.log(`goal (punctual async/plain >= ${RATIO_GOAL}): ${cost.toFixed(2)}, ${met ? 'met' : 'NOT met'}`);
    return failed || !met ? 1 : 0;
  } finally {
    for (const stop of cleanups.reverse()) await stop();
  }
}

process.exitCode = await main();
