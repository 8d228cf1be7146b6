/**
 * `npm run bench:overview`: what a project's overview (the dashboard's first tab) costs to read
 * on a big store, measured on the store alone (no HTTP), where the cost sits.
 *
 * On a fresh database (SQLite file; with DATABASE_URL=postgres://…, a fresh schema), migrated by
 * the store, then filled with rows of the shape the store writes, in bulk:
 *   - BENCH_OVERVIEW_JOBS (1,000,000) jobs of the measured project, created over the last 24 hours:
 *     1 % QUEUED (due tomorrow), 20 % FAILED, 1 % CANCELLED, the rest COMPLETED; each delivered one
 *     with its attempt; and a fifth as many jobs of another project;
 *   - the overview's rows (0011_project_overview.sql) of 24 hours of attempts finishing at
 *     BENCH_OVERVIEW_RATE (1,000) a second, 1 % failed, for BENCH_OVERVIEW_PROJECTS (10) projects:
 *     a row per project and minute (16 per minute on PostgreSQL, its shards, all filled), lateness
 *     in 40 buckets for each of the last 60 minutes; and a failed attempt row for each FAILED job.
 * Then 20 reads of the overview (projectOverview), timed one by one: median and max. On
 * PostgreSQL, again after VACUUM ANALYZE (index-only scans need the visibility map autovacuum keeps),
 * and again once the past minutes' shards are folded into one row each, as the retention pass does
 * every minute (overviewCompact): the state a day of steady traffic leaves.
 *
 * For scale, the same attempts per minute read from the attempts themselves, as the page would
 * without the rows per minute: with an index on attempts (finished_at) built for the measurement
 * (Punctual has none: it would cost every attempt's finish), over the measured project's attempts
 * of the last 24 hours, which here are only the seeded jobs' (about 11 a second, not 1,000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { PROJECT_DEFAULTS } from '../src/services/project-settings.js';
import { openStore } from '../src/store/open-store.js';
import type { Store } from '../src/store/store.js';
import { machineLine, positiveNumber } from './delivery-harness.js';
import { createSchema, postgresUrlFromEnv } from './pg-bench.js';

const JOBS = Math.round(positiveNumber('BENCH_OVERVIEW_JOBS', 1_000_000) / 1000) * 1000;
const RATE = positiveNumber('BENCH_OVERVIEW_RATE', 1_000);
const PROJECTS = Math.round(positiveNumber('BENCH_OVERVIEW_PROJECTS', 10));
const READS = 20;
const MIN = 60_000;
const DAY = 86_400_000;
const SHARDS = 16;
const BUCKETS = 40;
const PROJECT = 'prj_measured';

/** The seed, as statements of one dialect: `$n` placeholders on both (SQLite's as @pn, see `named`). */
function seedStatements(postgres: boolean, now: number): { sql: string; params: unknown[] }[] {
  const minute = now - (now % MIN);
  const perMinute = Math.round(RATE * 60);
  // The jobs: i from 0, created evenly over the last 24 hours; status by i % 100.
  const int = (k: number) => `CAST($${k} AS BIGINT)`;
  const text = (k: number) => `CAST($${k} AS TEXT)`;
  const status = `CASE WHEN i % 100 = 0 THEN 'QUEUED' WHEN i % 100 <= 20 THEN 'FAILED' WHEN i % 100 = 21 THEN 'CANCELLED' ELSE 'COMPLETED' END`;
  // now in $2, the day in $3, the number of jobs in $4.
  const created = `${int(2)} - ${int(3)} + i * (${int(3)} / ${int(4)})`;
  const series = postgres
    ? (n: string) => `generate_series(0, ${n} - 1) AS s(i)`
    : (n: string) => `(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ${n}) SELECT i FROM s) AS s`;
  const shards = postgres ? SHARDS : 1;
  const shardColumn = postgres ? ', shard' : '';
  const shardValue = postgres ? ', sh.k' : '';
  const shardSeries = postgres ? `, generate_series(0, ${SHARDS - 1}) AS sh(k)` : '';
  const projects = Array.from({ length: PROJECTS }, (_, p) => (p === 0 ? PROJECT : `prj_other${p}`));
  const inList = projects.map((id) => `'${id}'`).join(', ');
  return [
    {
      sql: `INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, attempt_count, created_at, updated_at, completed_at, failed_at, cancelled_at, last_error)
        SELECT 'job_m' || i, ${text(1)}, ${status}, '{"filler":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}',
          CASE WHEN i % 100 = 0 THEN ${int(2)} + ${int(3)} ELSE ${created} END, ${created}, 0,
          CASE WHEN i % 100 IN (0, 21) THEN 0 ELSE 1 END, ${created}, ${created} + 50,
          CASE WHEN i % 100 > 21 THEN ${created} + 50 END, CASE WHEN i % 100 BETWEEN 1 AND 20 THEN ${created} + 50 END,
          CASE WHEN i % 100 = 21 THEN ${created} + 50 END, CASE WHEN i % 100 BETWEEN 1 AND 20 THEN 'HTTP 500' END
        FROM ${series(int(4))}`,
      params: [PROJECT, now, DAY, JOBS],
    },
    {
      sql: `INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, attempt_count, created_at, updated_at, completed_at)
        SELECT 'job_o' || i, ${text(1)}, 'COMPLETED', '{}', ${created}, ${created}, 0, 1, ${created}, ${created}, ${created}
        FROM ${series(int(4))}`,
      params: ['prj_other1', now, DAY, JOBS / 5],
    },
    {
      sql: `INSERT INTO attempts (id, job_id, attempt_number, started_at, finished_at, outcome, status_code, duration_ms, error, response_body)
        SELECT 'att_m' || i, 'job_m' || i, 1, ${created} + 2, ${created} + 50,
          CASE WHEN i % 100 BETWEEN 1 AND 20 THEN 'http_error' ELSE 'success' END,
          CASE WHEN i % 100 BETWEEN 1 AND 20 THEN 500 ELSE 200 END, 48,
          CASE WHEN i % 100 BETWEEN 1 AND 20 THEN 'HTTP 500' END, 'ok'
        FROM ${series(int(4))} WHERE i % 100 NOT IN (0, 21) AND ${text(1)} IS NOT NULL`,
      params: [PROJECT, now, DAY, JOBS],
    },
    {
      sql: `INSERT INTO failed_attempts (project_id, finished_at, attempt_id)
        SELECT ${text(1)}, ${created} + 50, 'att_m' || i FROM ${series(int(4))} WHERE i % 100 BETWEEN 1 AND 20`,
      params: [PROJECT, now, DAY, JOBS],
    },
    {
      sql: `INSERT INTO delivery_minutes (project_id, minute${shardColumn}, attempts, failed_attempts)
        SELECT p.id, ${int(1)} - i * ${MIN}${shardValue}, ${int(2)}, ${int(3)}
        FROM ${series('1440')}${shardSeries}, (SELECT id FROM projects WHERE id IN (${inList})) AS p`,
      params: [minute, Math.round(perMinute / shards), Math.round(perMinute / shards / 100)],
    },
    {
      sql: `INSERT INTO lateness_minutes (project_id, minute, bucket${shardColumn}, attempts)
        SELECT p.id, ${int(1)} - (i / ${BUCKETS}) * ${MIN}, i % ${BUCKETS}${shardValue}, ${int(2)}
        FROM ${series(String(60 * BUCKETS))}${shardSeries}, (SELECT id FROM projects WHERE id IN (${inList})) AS p`,
      params: [minute, Math.max(1, Math.round(perMinute / shards / BUCKETS))],
    },
  ];
}

/** For scale: the attempts per minute from the attempts themselves, through an index on finished_at. */
const FROM_ATTEMPTS = `SELECT a.finished_at - a.finished_at % ${MIN} AS minute, count(*) AS attempts,
  sum(CASE WHEN a.outcome <> 'success' THEN 1 ELSE 0 END) AS failed
  FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.finished_at >= $1 AND j.project_id = $2 GROUP BY 1 ORDER BY 1`;

/** PostgreSQL's $1, $2 … as better-sqlite3 named parameters @p1, @p2 …, and their values. */
const named = (sql: string) => sql.replace(/\$(\d+)/g, '@p$1');
const namedValues = (values: unknown[]) => Object.fromEntries(values.map((v, i) => [`p${i + 1}`, v]));

async function insertProjects(store: Store, at: number): Promise<void> {
  for (let p = 0; p < PROJECTS; p += 1) {
    const id = p === 0 ? PROJECT : `prj_other${p}`;
    await store.teamInsert({ id: `team_${id}`, name: 't', plan: 'unlimited', createdAt: at });
    const row = { id, teamId: `team_${id}`, name: id, webhookUrl: 'http://127.0.0.1:1/', ...PROJECT_DEFAULTS, createdAt: at };
    await store.projectInsert({ project: row, secret: { id: `whs_${id}`, projectId: id, ciphertext: 'x', createdAt: at, expiresAt: null } });
  }
}

async function timeReads(label: string, read: () => Promise<unknown>): Promise<string> {
  await read();
  const times: number[] = [];
  for (let k = 0; k < READS; k += 1) {
    const started = performance.now();
    await read();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return `${label}: median ${times[READS / 2]!.toFixed(1)} ms, max ${times[READS - 1]!.toFixed(1)} ms (${READS} reads)`;
}

async function measure(store: Store, now: number, label: string): Promise<string[]> {
  const overview = await store.projectOverview({ projectId: PROJECT, now });
  const attempts = overview.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0);
  const counts = Object.entries(overview.jobsByStatus).map(([status, n]) => `${status} ${n.toLocaleString('en-US')}`).join(', ');
  return [
    await timeReads(`projectOverview, ${label}`, () => store.projectOverview({ projectId: PROJECT, now })),
    `  read: ${counts}; ${overview.deliveryMinutes.length} minutes, ${attempts.toLocaleString('en-US')} attempts; lateness p50 ${overview.lateness.p50Ms} ms, p99 ${overview.lateness.p99Ms} ms over ${overview.lateness.firstAttempts.toLocaleString('en-US')}; ${overview.recentFailures.length} failures listed`,
  ];
}

async function runSqlite(now: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-overview-'));
  const path = join(dir, 'punctual.db');
  try {
    const config = loadConfig({ DATABASE_URL: `sqlite:${path}`, PUNCTUAL_SECRET_KEY: 'x'.repeat(40) });
    let store = await openStore(config.database, {});
    await insertProjects(store, now - 2 * DAY);
    await store.close();
    const db = new Database(path);
    const started = performance.now();
    for (const { sql, params } of seedStatements(false, now)) db.prepare(named(sql)).run(namedValues(params));
    db.exec('ANALYZE');
    const seeded = `seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`;
    store = await openStore(config.database, {});
    const lines = [seeded, ...(await measure(store, now, 'SQLite'))];
    await store.close();
    db.exec('CREATE INDEX attempts_finished_bench ON attempts (finished_at)');
    const fromAttempts = db.prepare(named(FROM_ATTEMPTS));
    const window = now - (now % MIN) - 1439 * MIN;
    lines.push(await timeReads('for scale, per minute from attempts (index on finished_at)', async () => fromAttempts.all(namedValues([window, PROJECT]))));
    db.close();
    return lines;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runPostgres(baseUrl: string, now: number): Promise<string[]> {
  const schema = await createSchema(baseUrl);
  try {
    const config = loadConfig({ DATABASE_URL: schema.url, PUNCTUAL_SECRET_KEY: 'x'.repeat(40) });
    const store = await openStore(config.database, {});
    try {
      await insertProjects(store, now - 2 * DAY);
      const client = new pg.Client({ connectionString: schema.url });
      await client.connect();
      try {
        const started = performance.now();
        for (const { sql, params } of seedStatements(true, now)) await client.query(sql, params);
        await client.query('ANALYZE');
        const lines = [`seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`, ...(await measure(store, now, 'PostgreSQL, as seeded'))];
        await client.query('VACUUM ANALYZE');
        lines.push(...(await measure(store, now, 'PostgreSQL, after VACUUM ANALYZE')));
        // What the retention pass does each minute: past minutes' shards folded into one row.
        const folding = performance.now();
        let folded = 0;
        for (let n = -1; n !== 0; folded += n) n = await store.overviewCompact({ before: now - (now % MIN) - MIN, limit: 10_000 });
        lines.push(`folded ${folded.toLocaleString('en-US')} shard rows in ${((performance.now() - folding) / 1000).toFixed(1)} s`);
        await client.query('VACUUM ANALYZE');
        lines.push(...(await measure(store, now, 'PostgreSQL, shards folded, after VACUUM ANALYZE')));
        await client.query('CREATE INDEX attempts_finished_bench ON attempts (finished_at)');
        await client.query('ANALYZE attempts');
        const window = now - (now % MIN) - 1439 * MIN;
        lines.push(await timeReads('for scale, per minute from attempts (index on finished_at)', () => client.query(FROM_ATTEMPTS, [window, PROJECT])));
        return lines;
      } finally {
        await client.end();
      }
    } finally {
      await store.close();
    }
  } finally {
    await schema.drop();
  }
}

const postgres = postgresUrlFromEnv();
const now = Date.now();
console.log(`${machineLine()}; ${postgres ? 'PostgreSQL' : 'SQLite'}; ${JOBS.toLocaleString('en-US')} jobs in the measured project, ` +
  `${RATE.toLocaleString('en-US')} attempts/s for 24 h in ${PROJECTS} projects`);
for (const line of postgres ? await runPostgres(postgres, now) : await runSqlite(now)) console.log(line);
