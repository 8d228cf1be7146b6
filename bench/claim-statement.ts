/**
 * `npm run bench:claim-statement`: what the embedded store's claim of due jobs costs as one SQLite
 * statement, written as Punctual writes it (`LIMIT (@limit + 0)`, store/sqlite/queries/bound-parameters.ts)
 * and, in the same run, with a bare `LIMIT @limit`, which SQLite's planner looks at while preparing
 * the statement, and so prepares it again at every run that binds it (every run, with better-sqlite3).
 *
 * A fresh SQLite file (migrated as `punctual serve` does) with BENCH_CLAIM_JOBS (5,000) QUEUED
 * jobs of one project due 2 ms apart; each case works on its own copy of it and runs
 * BENCH_CLAIMS (800) claims, each of the jobs due in the next 25 ms of a clock moved 10 ms a claim
 * (5 jobs a claim, as at 500 jobs a second), inside BEGIN IMMEDIATE … COMMIT as the writer runs
 * it. Printed per case: the median and p90 of the claim statement's time, and the rows a claim.
 * Also printed: the time to prepare the statement once.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../src/config.js';
import { claimRule } from '../src/delivery/capacity-rules.js';
import { JobClaimDue } from '../src/store/sqlite/queries/jobs.js';
import { openStore } from '../src/store/open-store.js';
import { machineLine, positiveNumber } from './delivery-harness.js';
import { percentile } from './percentile.js';
import { insertProject } from './store-fixtures.js';

const JOBS = Math.round(positiveNumber('BENCH_CLAIM_JOBS', 5_000));
const CLAIMS = Math.round(positiveNumber('BENCH_CLAIMS', 800));
const SPACING_MS = 2;
const CLAIM_EVERY_MS = 10;
const LOOKAHEAD_MS = 25;
const answer = { kind: 'single' as const, statusCode: 201, body: '{}' };

async function prepareFile(path: string, firstDue: number): Promise<void> {
  const store = await openStore(loadConfig({ DATABASE_URL: `sqlite:${path}`, PUNCTUAL_SECRET_KEY: 'x'.repeat(40) }).database, {});
  try {
    await store.migrate();
    const project = await insertProject(store, 'prj_claims', firstDue - 60_000);
    const payload = JSON.stringify({ note: 'x'.repeat(900) });
    for (let i = 0; i < JOBS; i += 500) {
      const jobs = Array.from({ length: Math.min(500, JOBS - i) }, (_, j) => ({
        id: `job_c${i + j}`,
        payload,
        scheduledFor: firstDue + (i + j) * SPACING_MS,
        runAt: firstDue + (i + j) * SPACING_MS,
        maxRetries: 0,
      }));
      await store.jobCreate({ projectId: project.id, teamId: project.teamId, now: firstDue - 60_000, jobs, quota: null, idempotency: null, answer });
    }
  } finally {
    await store.close();
  }
}

function measure(path: string, statement: string, firstDue: number): { medianUs: number; p90Us: number; rowsPerClaim: number } {
  const db = new Database(path);
  try {
    const claim = db.prepare(statement);
    const begin = db.prepare('BEGIN IMMEDIATE');
    const commit = db.prepare('COMMIT');
    const times: number[] = [];
    let rows = 0;
    for (let k = 0; k < CLAIMS; k++) {
      const now = firstDue + k * CLAIM_EVERY_MS;
      const params = {
        excludeProjectIds: '[]',
        heldByProject: '{}',
        startable: '{}',
        attemptPrefix: '',
        now,
        dueBy: now + LOOKAHEAD_MS,
        limit: 256,
        workerId: 'wrk_bench',
        leaseExtraMs: 30_000,
        ...claimRule(256),
      };
      begin.run();
      const started = process.hrtime.bigint();
      rows += claim.all(params).length;
      times.push(Number(process.hrtime.bigint() - started) / 1000);
      commit.run();
    }
    times.sort((a, b) => a - b);
    return { medianUs: percentile(times, 0.5), p90Us: percentile(times, 0.9), rowsPerClaim: rows / CLAIMS };
  } finally {
    db.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'punctual-claim-statement-'));
try {
  const firstDue = Date.now() + 3_600_000;
  const original = join(dir, 'punctual.db');
  await prepareFile(original, firstDue);
  const bare = JobClaimDue.replace(/LIMIT \(@limit \+ 0\)/, 'LIMIT @limit');
  if (bare === JobClaimDue) throw new Error('the claim statement no longer has LIMIT (@limit + 0): update this benchmark');
  console.log(`bench:claim-statement, ${new Date().toISOString()}; ${machineLine()}`);
  console.log(`${JOBS} QUEUED jobs ${SPACING_MS} ms apart; ${CLAIMS} claims of the next ${LOOKAHEAD_MS} ms, the clock moved ${CLAIM_EVERY_MS} ms a claim`);
  const cases: [string, string][] = [
    ['as shipped, LIMIT (@limit + 0)', JobClaimDue],
    ['bare LIMIT @limit', bare],
  ];
  for (const [index, [name, statement]] of cases.entries()) {
    const copy = join(dir, `copy-${index}.db`);
    copyFileSync(original, copy);
    const { medianUs, p90Us, rowsPerClaim } = measure(copy, statement, firstDue);
    console.log(`  ${name.padEnd(32)} claim statement median ${medianUs.toFixed(0)} µs, p90 ${p90Us.toFixed(0)} µs, ${rowsPerClaim.toFixed(1)} jobs a claim`);
  }
  const db = new Database(original, { readonly: true });
  const started = process.hrtime.bigint();
  for (let i = 0; i < 100; i++) db.prepare(JobClaimDue);
  console.log(`  preparing the claim statement once: ${(Number(process.hrtime.bigint() - started) / 100 / 1000).toFixed(0)} µs`);
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
