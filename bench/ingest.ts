/**
 * `npm run bench:ingest`: how much of the framework's ingest rate Punctual keeps while making
 * every acknowledged job durable.
 *
 * One server (bench/bench-server.ts, the real app from dist/ on a fresh SQLite file) serves two
 * routes that take the same body through the same authentication, parsing and validation:
 *   - bare:     POST /api/bench/bare answers 201 without storing anything (the baseline);
 *   - punctual: POST /api/jobs/dispatch stores the job, and its 201 leaves after the group commit.
 * Each gets a warm-up, then the same autocannon load (64 connections, 10 s, a 1 KB payload
 * scheduled an hour ahead). The ratio punctual/bare of req/s is the figure BENCHMARKS.md records.
 *
 * Durability check: a last dispatch load is cut by SIGKILL to the server mid-run; the SQLite file
 * is then opened read-only and must hold at least as many jobs as 201s were received over every
 * dispatch run. (SIGKILL keeps the OS page cache, so this checks that each 201 follows its commit;
 * surviving power loss rests on synchronous=FULL, which the server reports and this prints.)
 *
 * Env: BENCH_DURATION (s, default 10), BENCH_CONNECTIONS (64), BENCH_WARMUP (s, 2).
 * Exits non-zero on any non-2xx answer or connection error in the measured runs, or a failed check.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import Database from 'better-sqlite3';

const PAYLOAD_BYTES = 1024;
const SCHEDULE_AHEAD_MS = 60 * 60 * 1000;
const RATIO_GOAL = 0.6;
/** How long into the crash run the server is killed, and how long that run lasts. */
const CRASH_AFTER_MS = 1000;
const CRASH_RUN_S = 2;

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

const duration = positiveNumber('BENCH_DURATION', 10);
const connections = Math.round(positiveNumber('BENCH_CONNECTIONS', 64));
const warmup = positiveNumber('BENCH_WARMUP', 2);

/** A JSON object of exactly `bytes` bytes, shaped like an application's job payload. */
function payloadOf(bytes: number): Record<string, unknown> {
  const payload = {
    type: 'invoice.reminder',
    invoiceId: 'inv_8f3a2c91d4e7b605',
    customer: { id: 'cus_41d9c0a7', email: 'ada@example.com', locale: 'en-GB' },
    lines: [
      { sku: 'PLAN-PRO-M', quantity: 1, unitAmount: 4900 },
      { sku: 'SEAT-EXTRA', quantity: 3, unitAmount: 900 },
    ],
    note: '',
  };
  const filler = bytes - Buffer.byteLength(JSON.stringify(payload));
  if (filler < 0) throw new Error(`payload skeleton exceeds ${bytes} bytes`);
  payload.note = 'x'.repeat(filler);
  return payload;
}

interface ServerInfo {
  port: number;
  apiKey: string;
  dbPath: string;
  synchronous: string;
}

/** Starts bench-server.ts and waits for its one line of JSON. */
async function startServer(dbPath: string): Promise<{ child: ChildProcess; info: ServerInfo }> {
  const entry = resolve(dirname(fileURLToPath(import.meta.url)), 'bench-server.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  let timer: NodeJS.Timeout | undefined;
  try {
    const info = await new Promise<ServerInfo>((resolveInfo, reject) => {
      timer = setTimeout(() => reject(new Error('the bench server did not start within 30 s')), 30_000);
      child.once('exit', (code, signal) => reject(new Error(`the bench server exited (${code ?? signal}) before listening`)));
      lines.once('line', (line) => {
        try {
          resolveInfo(JSON.parse(line) as ServerInfo);
        } catch {
          reject(new Error(`unexpected line from the bench server: ${line}`));
        }
      });
    });
    return { child, info };
  } catch (error) {
    await killed(child);
    throw error;
  } finally {
    clearTimeout(timer);
    child.removeAllListeners('exit');
  }
}

function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGKILL');
  });
}

interface Row {
  workload: string;
  result: Result;
}

const pad = (value: string | number, width: number) => String(value).padStart(width);

/**
 * Completed requests over the measured time. Not autocannon's requests.average: that is the mean
 * of per-second samples, and a run whose stop timer just misses a sample tick records one more,
 * partial sample, which drags the mean down by up to a tenth.
 */
const perSecond = (result: Result) => result.requests.total / result.duration;

function printTable(rows: Row[]): void {
  console.log(`${'workload'.padEnd(10)}${pad('s', 7)}${pad('N', 9)}${pad('req/s', 10)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('non-2xx', 9)}${pad('errors', 8)}`);
  for (const { workload, result } of rows) {
    console.log(
      `${workload.padEnd(10)}${pad(result.duration.toFixed(2), 7)}${pad(result.requests.total, 9)}${pad(perSecond(result).toFixed(0), 10)}` +
        `${pad(result.latency.p50, 8)}${pad(result.latency.p99, 8)}${pad(result.non2xx, 9)}${pad(result.errors + result.timeouts, 8)}`,
    );
  }
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-bench-'));
  let child: ChildProcess | null = null;
  try {
    const server = await startServer(join(dir, 'punctual.db'));
    child = server.child;
    const info = server.info;
    const scheduledFor = new Date(Date.now() + SCHEDULE_AHEAD_MS).toISOString();
    const body = JSON.stringify({ payload: payloadOf(PAYLOAD_BYTES), scheduledFor });
    const load = (path: string, seconds: number) =>
      autocannon({
        url: `http://127.0.0.1:${info.port}${path}`,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${info.apiKey}` },
        body,
      });

    console.log(
      `ingest: ${connections} connections, ${duration} s each after a ${warmup} s warm-up; body ${Buffer.byteLength(body)} bytes ` +
        `(payload ${PAYLOAD_BYTES} bytes, scheduledFor +1 h)`,
    );
    console.log(`machine: ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, SQLite synchronous=${info.synchronous}, LOG_LEVEL=warn`);
    console.log('');

    const warmBare = await load('/api/bench/bare', warmup);
    const bare = await load('/api/bench/bare', duration);
    const warmPunctual = await load('/api/jobs/dispatch', warmup);
    const punctual = await load('/api/jobs/dispatch', duration);

    // The crash run: SIGKILL while dispatches are in flight; every 201 received must be in the file.
    const crashRun = load('/api/jobs/dispatch', CRASH_RUN_S);
    await new Promise((wait) => setTimeout(wait, CRASH_AFTER_MS));
    await killed(server.child);
    const crash = await crashRun;

    printTable([
      { workload: 'bare', result: bare },
      { workload: 'punctual', result: punctual },
    ]);
    const ratio = perSecond(punctual) / perSecond(bare);
    console.log('');
    console.log(`ratio punctual/bare req/s: ${ratio.toFixed(2)} (goal >= ${RATIO_GOAL}: ${ratio >= RATIO_GOAL ? 'met' : 'NOT met'})`);
    console.log(`p99 punctual/bare: ${punctual.latency.p99} ms / ${bare.latency.p99} ms`);

    let failed = false;
    for (const [name, result] of Object.entries({ 'bare warm-up': warmBare, bare, 'punctual warm-up': warmPunctual, punctual })) {
      if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
        console.log(`FAIL: ${name} had ${result.non2xx} non-2xx answers (${JSON.stringify(result.statusCodeStats)}), ${result.errors} errors, ${result.timeouts} timeouts`);
        failed = true;
      }
    }
    if (crash.non2xx > 0) {
      console.log(`FAIL: the crash run had ${crash.non2xx} non-2xx answers (${JSON.stringify(crash.statusCodeStats)})`);
      failed = true;
    }

    const acknowledged = warmPunctual['2xx'] + punctual['2xx'] + crash['2xx'];
    const db = new Database(info.dbPath, { readonly: true, fileMustExist: true });
    const stored = (db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
    db.close();
    const durable = stored >= acknowledged;
    console.log(
      `durability: ${acknowledged} jobs acknowledged with 201 (${crash['2xx']} in the run cut by SIGKILL after ${CRASH_AFTER_MS} ms), ` +
        `${stored} in the SQLite file after the kill: ${durable ? 'ok' : 'FAIL'}`,
    );
    if (!durable) failed = true;
    return failed ? 1 : 0;
  } finally {
    if (child) await killed(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
