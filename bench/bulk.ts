/**
 * `npm run bench:bulk`: what tags and bulk actions (SPEC section 14) cost on a big project: a tag
 * lookup's time against the project's size, a bulk cancel of 10,000 of its waiting jobs by tag,
 * and the lateness of other deliveries while bulk cancels run, beside the same run without them.
 * It prints figures and asserts nothing (BENCHMARKS.md records them).
 *
 * In one run, with the same child processes throughout (bench/delivery-harness.ts):
 *   1. the bare pipe's lateness run, for scale;
 *   2. BENCH_BULK_JOBS (1,000,000) QUEUED jobs due in 30 days, each tagged
 *      {"batch": "b<i / 10,000>", "order": "o<i / 10>"} (batches of 10,000 jobs, orders of 10),
 *      about 256 bytes of payload, written into the store beside the running server (rows of the
 *      shape the store writes for a dispatch with tags: the job with its tags, one job_tags row a
 *      tag); after 1 %, 10 % and all of them, BENCH_LOOKUPS (200) lookups of a random order's jobs
 *      (`GET /api/jobs?tag=order:o<n>`) and of a batch's newest 50 (`?tag=batch:b<n>`), p50 / p99;
 *   3. a bulk cancel of one batch (10,000 jobs) alone, after its dry run: the time of each;
 *   4. BENCH_BULK_ROUNDS (3) rounds of: the lateness run of bench:lateness (BENCH_JOBS, 5,000
 *      jobs over 10 s) with nothing else, then the same run while bulk cancels of the next batches
 *      run back to back, one after the other, from the first job's due time to the last's; each
 *      run once the store has settled (on SQLite, the WAL the previous one left checkpointed and
 *      cut back). Lateness p50 / p99 / max of every run, each round's p99 without and with, the
 *      median p99 of each side and their difference, and each bulk cancel's time.
 * With DATABASE_URL=postgres://…, the same on a fresh schema of that database. The machine may be
 * shared: before each lateness run it waits (up to BENCH_QUIET_WAIT_S, 300) until other processes
 * use at most BENCH_MAX_OTHERS (0.3) CPUs, and says what they used during each run.
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import {
  clean,
  describeLateness,
  latenessOptions,
  latenessRun,
  machineLine,
  ms,
  payloadFiller,
  positiveNumber,
  printLatenessTable,
  sleep,
  startAll,
  waitForQuietMachine,
  type LatenessRun,
  type PunctualSystem,
} from './delivery-harness.js';
import { percentile } from './percentile.js';

const DAY = 86_400_000;
const BATCH = 10_000;
const ORDER = 10;
const jobsWanted = Math.round(positiveNumber('BENCH_BULK_JOBS', 1_000_000));
const lookups = Math.round(positiveNumber('BENCH_LOOKUPS', 200));
const SEED_TRANSACTION = 5_000;
const maxOthers = positiveNumber('BENCH_MAX_OTHERS', 0.3);
const quietWaitS = positiveNumber('BENCH_QUIET_WAIT_S', 300);
const rounds = Math.round(positiveNumber('BENCH_BULK_ROUNDS', 3));
/** The WAL a settled embedded store is left with (its background connection truncates a bigger one once writes stop). */
const SETTLED_WAL_BYTES = 4 * 1024 * 1024;

const seedTags = (i: number) => `{"batch":"b${Math.floor(i / BATCH)}","order":"o${Math.floor(i / ORDER)}"}`;

/** Writes jobs [from, to) into the SQLite file beside the running server, a transaction at a time (waiting its turn as the CLI would). */
function seedSqlite(punctual: PunctualSystem, from: number, to: number, at: number): void {
  const db = new Database(punctual.dbPath!, { fileMustExist: true });
  db.pragma('busy_timeout = 10000');
  const payload = `{${payloadFiller(256)}}`;
  const job = db.prepare(`INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries, created_at, updated_at, tags)
    VALUES (?, ?, 'QUEUED', ?, ?, ?, ?, 3, ?, ?, ?)`);
  const tag = db.prepare('INSERT INTO job_tags (project_id, key, value, job_seq) SELECT ?, key, value, ? FROM json_each(?)');
  const insert = db.transaction((start: number, end: number) => {
    for (let i = start; i < end; i += 1) {
      const tags = seedTags(i);
      // The same length as the store's ids (34 characters).
      const seq = job.run(`job_bulk${String(i).padStart(26, '0')}`, punctual.projectId, payload, at + 30 * DAY, at + 30 * DAY, at, at, at, tags).lastInsertRowid;
      tag.run(punctual.projectId, seq, tags);
    }
  });
  for (let start = from; start < to; start += SEED_TRANSACTION) insert(start, Math.min(to, start + SEED_TRANSACTION));
  db.close();
}

/** The same on PostgreSQL, a statement of 50,000 jobs at a time. */
async function seedPostgres(punctual: PunctualSystem, from: number, to: number, at: number): Promise<void> {
  const payload = `{${payloadFiller(256)}}`;
  for (let start = from; start < to; start += 50_000) {
    const end = Math.min(to, start + 50_000);
    await punctual.schema!.query(
      `WITH inserted AS (
         INSERT INTO jobs (id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries, created_at, updated_at, on_hold, tags)
         SELECT 'job_bulk' || lpad(g::text, 26, '0'), $1, 'QUEUED', $2, $3::bigint, $3::bigint, $4::bigint, 3, $4::bigint, $4::bigint, false,
           '{"batch":"b' || (g / ${BATCH}) || '","order":"o' || (g / ${ORDER}) || '"}'
         FROM generate_series($5::int, $6::int - 1) AS g ORDER BY g
         RETURNING seq, project_id, tags
       )
       INSERT INTO job_tags (project_id, key, value, job_seq) SELECT i.project_id, e.key, e.value, i.seq FROM inserted i, json_each_text(i.tags::json) AS e`,
      [punctual.projectId, payload, at + 30 * DAY, at, start, end],
    );
  }
}

async function seed(punctual: PunctualSystem, from: number, to: number, at: number): Promise<void> {
  if (punctual.schema) await seedPostgres(punctual, from, to, at);
  else seedSqlite(punctual, from, to, at);
}

/**
 * Waits for a quiet machine and, on the embedded store, for the WAL left by what ran before (the
 * seeding, a bulk cancel) to be checkpointed and cut back: a run measures its own load only.
 */
async function settled(punctual: PunctualSystem): Promise<void> {
  await waitForQuietMachine(maxOthers, quietWaitS);
  if (!punctual.dbPath) return;
  const wal = `${punctual.dbPath}-wal`;
  for (const until = Date.now() + 30_000; (statSync(wal, { throwIfNoEntry: false })?.size ?? 0) > SETTLED_WAL_BYTES && Date.now() < until; ) await sleep(250);
}

const p = (values: number[], q: number) => percentile([...values].sort((a, b) => a - b), q);

/** `count` GETs of `path(i)`, one at a time, each answer read: its latency in ms. */
async function timedGets(punctual: PunctualSystem, count: number, path: (i: number) => string, expected: (body: { jobs: unknown[] }) => boolean): Promise<number[]> {
  const pool = new Pool(punctual.origin, { connections: 1 });
  const latencies: number[] = [];
  try {
    for (let i = 0; i < count; i += 1) {
      const started = performance.now();
      const response = await pool.request({ path: path(i), method: 'GET', headers: punctual.headers });
      const body = (await response.body.json()) as { jobs: unknown[] };
      latencies.push(performance.now() - started);
      if (response.statusCode !== 200 || !expected(body)) throw new Error(`${path(i)} answered ${response.statusCode} with ${body.jobs?.length} jobs`);
    }
  } finally {
    await pool.close();
  }
  return latencies;
}

/** One bulk request, timed: its answer and the ms it took. */
async function bulk(punctual: PunctualSystem, body: Record<string, unknown>): Promise<{ answer: { matched: number; changed: number; hasMore: boolean }; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${punctual.origin}/api/jobs/bulk`, { method: 'POST', headers: punctual.headers, body: JSON.stringify(body) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`POST /api/jobs/bulk answered ${response.status}: ${text}`);
  return { answer: JSON.parse(text) as { matched: number; changed: number; hasMore: boolean }, ms: performance.now() - started };
}

async function main(): Promise<void> {
  const o = latenessOptions();
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    const batches = Math.max(1, Math.floor(jobsWanted / BATCH));
    console.log(describeLateness(o));
    console.log(`bulk: ${jobsWanted} QUEUED jobs due in 30 days, tagged batch (${BATCH} jobs each, ${batches} batches) and order (${ORDER} each); ${lookups} lookups per size`);
    console.log(`${machineLine()}, ${punctual.storeLine}, LOG_LEVEL=warn`);
    console.log('');
    const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter };
    const runs: LatenessRun[] = [];
    for (const system of [bare, punctual]) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
    }
    runs.push(await latenessRun(receiver, bare, { ...common, phase: 'bare', jobs: o.jobs, windowMs: o.windowMs }));

    // The tag lookup against the project's size.
    const at = Date.now();
    const sizes = [...new Set([Math.round(jobsWanted / 100), Math.round(jobsWanted / 10), jobsWanted])].filter((n) => n >= ORDER);
    const lookupRows: string[] = [];
    let seeded = 0;
    for (const size of sizes) {
      const started = Date.now();
      await seed(punctual, seeded, size, at);
      console.log(`  seeded ${size} jobs (${((Date.now() - started) / 1000).toFixed(0)} s for the last ${size - seeded})`);
      seeded = size;
      await sleep(1_000);
      const orders = Math.floor(size / ORDER);
      const order = await timedGets(punctual, lookups, (i) => `/api/jobs?tag=order:o${(i * 7919) % orders}`, (body) => body.jobs.length === ORDER);
      const newest = await timedGets(punctual, lookups, (i) => `/api/jobs?tag=batch:b${i % Math.max(1, Math.floor(size / BATCH))}`, (body) => body.jobs.length === Math.min(50, size));
      lookupRows.push(
        `${String(size).padStart(10)}  ${ms(p(order, 0.5)).padStart(8)} ${ms(p(order, 0.99)).padStart(8)}   ${ms(p(newest, 0.5)).padStart(8)} ${ms(p(newest, 0.99)).padStart(8)}`,
      );
    }

    // One bulk cancel of a batch, alone, after its dry run.
    const dry = await bulk(punctual, { action: 'cancel', filter: { tags: { batch: 'b0' } }, dryRun: true, limit: 10_000 });
    const alone = await bulk(punctual, { action: 'cancel', filter: { tags: { batch: 'b0' } }, limit: 10_000 });

    // Lateness without, then with bulk cancels running back to back over the run's window, in
    // alternating rounds (what is left of the seeding's WAL, or the machine's drift, weighs on
    // both sides alike), each after the store has settled.
    const during: { ms: number; changed: number }[] = [];
    const pairs: [LatenessRun, LatenessRun][] = [];
    let nextBatch = 1;
    for (let round = 1; round <= rounds; round += 1) {
      await settled(punctual);
      const without = await latenessRun(receiver, punctual, { ...common, phase: `punctual-no-bulk-${round}`, jobs: o.jobs, windowMs: o.windowMs });
      await settled(punctual);
      const firstDue = Date.now() + o.leadMs;
      const lastDue = firstDue + o.windowMs;
      const bulks = (async () => {
        await sleep(Math.max(0, firstDue - Date.now()));
        for (; nextBatch < batches && Date.now() < lastDue; nextBatch += 1) {
          const { answer, ms: took } = await bulk(punctual, { action: 'cancel', filter: { tags: { batch: `b${nextBatch}` } }, limit: 10_000 });
          during.push({ ms: took, changed: answer.changed });
        }
      })();
      const withBulk = await latenessRun(receiver, punctual, { ...common, phase: `punctual-bulk-${round}`, jobs: o.jobs, windowMs: o.windowMs });
      await bulks;
      pairs.push([without, withBulk]);
      runs.push(without, withBulk);
    }

    console.log('');
    console.log(`tag lookup through GET /api/jobs (HTTP, one at a time), ms:`);
    console.log(`  project jobs  order (10 jobs) p50 / p99   batch (newest 50) p50 / p99`);
    for (const row of lookupRows) console.log(`  ${row}`);
    console.log('');
    console.log(
      `bulk cancel of ${alone.answer.changed} of ${seeded} waiting jobs by tag, alone: ${ms(alone.ms)} ms ` +
        `(${((alone.answer.changed / alone.ms) * 1000).toFixed(0)} jobs/s); its dry run (count ${dry.answer.matched}): ${ms(dry.ms)} ms`,
    );
    const times = during.map((d) => d.ms);
    console.log(
      `bulk cancels during the lateness run: ${during.length}, ${during.reduce((sum, d) => sum + d.changed, 0)} jobs in all, ` +
        `each ${ms(p(times, 0.5))} ms (p50), ${ms(Math.max(...times))} ms (max)`,
    );
    console.log('');
    printLatenessTable(runs);
    const median = (values: number[]) => p(values, 0.5);
    const withoutP99 = median(pairs.map(([without]) => without.stats.p99));
    const withP99 = median(pairs.map(([, withBulk]) => withBulk.stats.p99));
    console.log('');
    for (const [i, [without, withBulk]] of pairs.entries()) {
      console.log(`round ${i + 1}: lateness p99 without / during bulk cancels ${ms(without.stats.p99)} / ${ms(withBulk.stats.p99)} ms; max ${ms(without.stats.max)} / ${ms(withBulk.stats.max)} ms`);
    }
    console.log(
      `lateness p99, median of ${pairs.length} rounds, without / during bulk cancels: ${ms(withoutP99)} / ${ms(withP99)} ms, ` +
        `difference ${(withP99 - withoutP99).toFixed(1)} ms (issue 28's goal: within 1 ms)`,
    );
    for (const run of runs.slice(-2 * pairs.length)) {
      const others = run.cpu?.cpus.others ?? 0;
      if (others > maxOthers) console.log(`NOTE: other processes used ${others.toFixed(2)} CPUs during ${run.phase} (above ${maxOthers}): its figures are not a measurement`);
    }
    if (!clean(runs)) console.log('NOTE: a run lost, duplicated or failed jobs (see the table)');
  } finally {
    await close();
  }
}

await main();
