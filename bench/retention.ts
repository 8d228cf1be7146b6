/**
 * `npm run bench:retention`: what deleting a million final jobs costs the deliveries and the API
 * running beside it (SPEC section 12), and what it does to the embedded store's files.
 *
 * In one run, with the same child processes throughout (bench/delivery-harness.ts):
 *   1. BENCH_RETENTION_JOBS (1,000,000) COMPLETED jobs, each with its successful attempt, about
 *      1 KB of payload, written into Punctual's SQLite file beside the running server in
 *      transactions of 5,000 (rows of the shape the store writes for a delivered job), completed
 *      29 days ago: under the default retention of 30 days, none is due for deletion yet;
 *   2. the lateness run of bench:lateness (5,000 jobs over 10 s), then an API probe for
 *      BENCH_PROBE_SECONDS (10) at BENCH_PROBE_RATE (200 requests/s: a status read and a dispatch
 *      due in an hour, turn about), recording each answer's latency: the figures without a prune;
 *   3. the project's retentionDays set to 28 through the management API, as an operator would:
 *      every seeded job is now due, and the next retention pass (at most a minute later) starts;
 *      once /metrics shows rows pruned, the same lateness run and probe again, during the prune;
 *   4. the wait for the prune to finish: rows pruned per second; the files before and after, and
 *      the pages freed for reuse (SQLite's freelist).
 * The bare pipe runs the same lateness workload in the same run, for scale.
 *
 * Goal (issue 13): lateness p99 during the prune within 1 ms of the run without; the API's p99
 * within 1 ms too; the WAL back under 64 MB once the prune has settled. Exits non-zero when not met.
 */
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { Pool } from 'undici';
import {
  clean,
  describeLateness,
  latenessOptions,
  latenessRun,
  machineLine,
  ms,
  payloadFiller,
  payloadOf,
  positiveNumber,
  printLatenessTable,
  sleep,
  startAll,
  type LatenessRun,
  type PunctualSystem,
} from './delivery-harness.js';
import { percentile } from './percentile.js';
import { postgresUrlFromEnv } from './pg-bench.js';

const DAY = 86_400_000;
const P99_DELTA_GOAL_MS = 1;
const WAL_GOAL_BYTES = 64 * 1024 * 1024;
const seeded = Math.round(positiveNumber('BENCH_RETENTION_JOBS', 1_000_000));
const probeRate = positiveNumber('BENCH_PROBE_RATE', 200);
const probeSeconds = positiveNumber('BENCH_PROBE_SECONDS', 10);
const SEED_TRANSACTION = 5_000;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

function files(punctual: PunctualSystem): { database: number; wal: number } {
  const size = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  return { database: size(punctual.dbPath!), wal: size(`${punctual.dbPath!}-wal`) };
}

/** Writes the final jobs beside the running server, a transaction at a time (it waits its turn as the CLI would). */
function seed(punctual: PunctualSystem, completedAt: number): void {
  const db = new Database(punctual.dbPath!, { fileMustExist: true });
  db.pragma('busy_timeout = 10000');
  const filler = payloadFiller(1024);
  const job = db.prepare(`INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries,
    attempt_count, round_start_attempt_count, created_at, updated_at, completed_at)
    VALUES (?, ?, 'COMPLETED', ?, NULL, ?, ?, 3, 1, 0, ?, ?, ?)`);
  const attempt = db.prepare(`INSERT INTO attempts (id, job_id, attempt_number, started_at, finished_at, outcome, status_code,
    duration_ms, error, response_body) VALUES (?, ?, 1, ?, ?, 'success', 200, 3, NULL, 'ok')`);
  const insert = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i += 1) {
      // The same lengths as the store's ids (a 34-character job id, a 34-character attempt id).
      const jobId = `job_seed${String(i).padStart(26, '0')}`;
      const createdAt = completedAt - 1_000 + (i % 1_000);
      job.run(jobId, punctual.projectId, payloadOf(`seed:${i}`, createdAt, filler), createdAt, createdAt, createdAt, completedAt, completedAt);
      attempt.run(`att_seed${String(i).padStart(26, '0')}`, jobId, completedAt - 3, completedAt);
    }
  });
  const started = Date.now();
  for (let from = 0; from < seeded; from += SEED_TRANSACTION) {
    insert(from, Math.min(seeded, from + SEED_TRANSACTION));
    if ((from + SEED_TRANSACTION) % 200_000 === 0) console.log(`  seeded ${from + SEED_TRANSACTION} jobs in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  db.close();
}

/** Status reads and dispatches at a steady rate until stopped; the latency of each answer, in ms. */
function probe(punctual: PunctualSystem): { stop: () => Promise<{ latencies: number[]; failures: number }> } {
  const pool = new Pool(punctual.origin, { connections: 8 });
  const latencies: number[] = [];
  let failures = 0;
  let jobId: string | null = null;
  let n = 0;
  const pending = new Set<Promise<void>>();
  const one = async () => {
    const started = performance.now();
    const read = n++ % 2 === 0 && jobId !== null;
    try {
      const response = await pool.request(
        read
          ? { path: `/api/jobs/${jobId}`, method: 'GET', headers: punctual.headers }
          : { path: '/api/jobs/dispatch', method: 'POST', headers: punctual.headers, body: JSON.stringify({ payload: { probe: n }, scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }) },
      );
      const text = await response.body.text();
      latencies.push(performance.now() - started);
      if (response.statusCode !== (read ? 200 : 201)) failures += 1;
      else if (!read) jobId = (JSON.parse(text) as { jobId: string }).jobId;
    } catch {
      failures += 1;
    }
  };
  const timer = setInterval(() => {
    const request = one().finally(() => pending.delete(request));
    pending.add(request);
  }, 1_000 / probeRate);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      await pool.close();
      return { latencies, failures };
    },
  };
}

/** The probe alone, for BENCH_PROBE_SECONDS (10): apart from the lateness run's burst of dispatches, which it would queue behind. */
async function probeFor(punctual: PunctualSystem): Promise<{ latencies: number[]; failures: number }> {
  const running = probe(punctual);
  await sleep(probeSeconds * 1000);
  return running.stop();
}

async function prunedJobs(punctual: PunctualSystem): Promise<number> {
  const text = await (await fetch(`${punctual.origin}/metrics`)).text();
  return Number(/^punctual_rows_pruned_total\{table="jobs"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

async function main(): Promise<number> {
  const o = latenessOptions();
  if (postgresUrlFromEnv()) throw new Error('bench:retention runs on the embedded store: unset DATABASE_URL');
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(`retention: ${seeded} COMPLETED jobs with one attempt each, about 1 KB of payload; API probe ${probeRate} requests/s`);
    console.log(`${machineLine()}, ${punctual.storeLine}, LOG_LEVEL=warn, retention settings as shipped`);
    console.log('');
    const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter };
    const runs: LatenessRun[] = [];
    for (const system of [bare, punctual]) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
    }
    runs.push(await latenessRun(receiver, bare, { ...common, phase: 'bare', jobs: o.jobs, windowMs: o.windowMs }));

    const empty = files(punctual);
    const seedStarted = Date.now();
    seed(punctual, Date.now() - 29 * DAY);
    await sleep(3_000);
    const full = files(punctual);
    console.log(`seeded ${seeded} jobs in ${((Date.now() - seedStarted) / 1000).toFixed(0)} s; database ${mb(empty.database)} → ${mb(full.database)}, WAL ${mb(full.wal)}`);

    runs.push(await latenessRun(receiver, punctual, { ...common, phase: 'punctual-no-prune', jobs: o.jobs, windowMs: o.windowMs }));
    const quiet = await probeFor(punctual);

    const patched = await fetch(`${punctual.origin}/manage/v1/projects/${punctual.projectId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${punctual.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ retentionDays: 28 }),
    });
    if (patched.status !== 200) throw new Error(`PATCH retentionDays answered ${patched.status}`);
    const asked = Date.now();
    while ((await prunedJobs(punctual)) === 0) {
      if (Date.now() - asked > 90_000) throw new Error('no retention pass started within 90 s');
      await sleep(50);
    }
    const pruneStarted = Date.now();
    console.log(`the retention pass started ${((pruneStarted - asked) / 1000).toFixed(1)} s after the PATCH`);
    runs.push(await latenessRun(receiver, punctual, { ...common, phase: 'punctual-during-prune', jobs: o.jobs, windowMs: o.windowMs }));
    const prunedByEndOfRun = await prunedJobs(punctual);
    const busy = await probeFor(punctual);
    const prunedByEndOfProbe = await prunedJobs(punctual);
    if (prunedByEndOfProbe >= seeded) console.log('NOTE: the prune ended before the API probe did');
    while ((await prunedJobs(punctual)) < seeded) {
      if (Date.now() - pruneStarted > 30 * 60_000) throw new Error('the prune did not finish within 30 minutes');
      await sleep(100);
    }
    const pruneSeconds = (Date.now() - pruneStarted) / 1000;
    const afterPrune = files(punctual);
    await sleep(5_000);
    const settled = files(punctual);
    const db = new Database(punctual.dbPath!, { readonly: true, fileMustExist: true });
    const freePages = db.pragma('freelist_count', { simple: true }) as number;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const left = (db.prepare("SELECT count(*) AS n FROM jobs WHERE id LIKE 'job_seed%'").get() as { n: number }).n;
    db.close();

    console.log('');
    printLatenessTable(runs);
    console.log('');
    const [quietRun, busyRun] = runs.slice(-2) as [LatenessRun, LatenessRun];
    const p99 = (values: number[]) => percentile([...values].sort((a, b) => a - b), 0.99);
    const apiQuiet = p99(quiet.latencies);
    const apiBusy = p99(busy.latencies);
    console.log(
      `prune: ${seeded} jobs and their attempts in ${pruneSeconds.toFixed(1)} s (${(seeded / pruneSeconds).toFixed(0)} jobs/s); ` +
        `${prunedByEndOfRun} of them by the end of the lateness run, ${prunedByEndOfProbe} by the end of the API probe`,
    );
    console.log(
      `files: database ${mb(full.database)} before, ${mb(afterPrune.database)} after (${mb(freePages * pageSize)} of it free pages for reuse); ` +
        `WAL ${mb(afterPrune.wal)} when the prune ended, ${mb(settled.wal)} 5 s later; ${left} seeded jobs left`,
    );
    const latenessDelta = busyRun.stats.p99 - quietRun.stats.p99;
    const apiDelta = apiBusy - apiQuiet;
    const latenessMet = latenessDelta <= P99_DELTA_GOAL_MS;
    const apiMet = apiDelta <= P99_DELTA_GOAL_MS;
    const walMet = settled.wal <= WAL_GOAL_BYTES;
    console.log(
      `lateness p99 without / during the prune: ${ms(quietRun.stats.p99)} / ${ms(busyRun.stats.p99)} ms, ` +
        `difference ${latenessDelta.toFixed(1)} ms (goal <= ${P99_DELTA_GOAL_MS}: ${latenessMet ? 'met' : 'NOT met'})`,
    );
    console.log(
      `API p99 without / during the prune: ${ms(apiQuiet)} / ${ms(apiBusy)} ms over ${quiet.latencies.length} / ${busy.latencies.length} requests ` +
        `(${quiet.failures + busy.failures} failed), difference ${apiDelta.toFixed(1)} ms (goal <= ${P99_DELTA_GOAL_MS}: ${apiMet ? 'met' : 'NOT met'})`,
    );
    console.log(`WAL once settled: ${mb(settled.wal)} (goal <= 64 MB: ${walMet ? 'met' : 'NOT met'})`);
    const ok = clean(runs) && left === 0 && quiet.failures + busy.failures === 0;
    return ok && latenessMet && apiMet && walMet ? 0 : 1;
  } finally {
    await close();
  }
}

process.exitCode = await main();
