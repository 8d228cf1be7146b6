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
 *
 * PostgreSQL: with DATABASE_URL=postgres://… the servers run on a fresh schema of that database
 * (bench/pg-bench.ts), BENCH_INSTANCES of them (default 1) started on the same schema; autocannon's
 * connections are spread over them round robin (connection i to server i mod N), for both routes.
 * The durability check then counts the jobs in the schema after every server was killed, and each
 * run also prints the database's work per request (statements, commits, WAL, CPU).
 *
 * BENCH_PLAN_COMPARE=1: the rate-limit comparison of bench/plan-compare.ts instead of the above.
 * Each run prints the CPU used by process (the servers, this process, the database's processes,
 * Redis when REDIS_URL is set, and everything else as `others`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import Database from 'better-sqlite3';
import { cpuLine, cpuMeter, type CpuUse } from './delivery-harness.js';
import {
  createSchema,
  instancesFromEnv,
  PostgresMonitor,
  pgPhaseLines,
  postgresUrlFromEnv,
  QUERY_COUNTER_IMPORT,
  type BenchSchema,
  type PgPhase,
} from './pg-bench.js';
import { comparePlans } from './plan-compare.js';

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
const postgresUrl = postgresUrlFromEnv();
const instances = instancesFromEnv(postgresUrl !== null);

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

export interface ServerInfo {
  port: number;
  /** The first instance's; null on a further instance. */
  apiKey: string | null;
  adminToken: string | null;
  /** SQLite only. */
  dbPath: string | null;
  synchronous: string | null;
}

/**
 * Starts bench-server.ts and waits for its one line of JSON; later lines go to `onLine` (which
 * says whether it took them) or to stderr.
 */
async function startServer(
  env: Record<string, string>,
  execArgv: string[] = [],
  onLine: (child: ChildProcess, line: string) => boolean = () => false,
  onSpawn: (child: ChildProcess) => void = () => {},
): Promise<{ child: ChildProcess; info: ServerInfo }> {
  const entry = resolve(dirname(fileURLToPath(import.meta.url)), 'bench-server.ts');
  const child = spawn(process.execPath, [...execArgv, '--import', 'tsx', entry], {
    env: { ...process.env, ...env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  onSpawn(child);
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
    lines.on('line', (line) => {
      if (!onLine(child, line)) console.error(`[bench-server] ${line}`);
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

/** The servers of a run: one on SQLite; BENCH_INSTANCES on one PostgreSQL schema. */
export interface Servers {
  children: ChildProcess[];
  origins: string[];
  /** The first server's (it set the database up). */
  info: ServerInfo & { apiKey: string; adminToken: string };
  schema: BenchSchema | null;
  monitor: PostgresMonitor | null;
  /** Starts a CPU meter: `server` (all instances), `loader` (this process), the database's processes, `redis`, `others`. */
  meter: () => () => CpuUse;
  storeLine: string;
}

/** The pids of processes whose command name is `comm` (for redis-server). */
function pidsNamed(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
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

async function startServers(dir: string, started: (() => Promise<void>)[]): Promise<Servers> {
  if (!postgresUrl) {
    const { child, info } = await startServer({ DATABASE_URL: `sqlite:${join(dir, 'punctual.db')}` });
    started.push(() => killed(child));
    const redis: Record<string, number[]> = process.env.REDIS_URL ? { redis: pidsNamed('redis-server') } : {};
    return {
      children: [child],
      origins: [`http://127.0.0.1:${info.port}`],
      info: info as Servers['info'],
      schema: null,
      monitor: null,
      meter: () => cpuMeter({ server: [child.pid!], loader: [process.pid], ...redis }),
      storeLine: `SQLite synchronous=${info.synchronous}`,
    };
  }
  const schema = await createSchema(postgresUrl);
  started.push(() => schema.drop());
  const owners: number[] = [];
  const monitor = await PostgresMonitor.start(postgresUrl, () => owners);
  started.push(() => monitor.stop());
  const onLine = (child: ChildProcess, line: string) => monitor.counter.handle(child, line);
  // Registered as soon as spawned, so that the connections each opens at start count as Punctual's.
  const onSpawn = (child: ChildProcess) => {
    started.push(() => killed(child));
    owners.push(child.pid!);
    monitor.counter.register(child);
  };
  const spawned: { child: ChildProcess; info: ServerInfo }[] = [];
  spawned.push(await startServer(schema.env, QUERY_COUNTER_IMPORT, onLine, onSpawn));
  spawned.push(
    ...(await Promise.all(
      Array.from({ length: instances - 1 }, () => startServer({ ...schema.env, BENCH_SECONDARY: '1' }, QUERY_COUNTER_IMPORT, onLine, onSpawn)),
    )),
  );
  const [synchronousCommit] = await schema.query<{ s: string }>('SHOW synchronous_commit').then((rows) => rows.map((r) => Object.values(r)[0] as string));
  const redis: Record<string, number[]> = process.env.REDIS_URL ? { redis: pidsNamed('redis-server') } : {};
  return {
    children: spawned.map((s) => s.child),
    origins: spawned.map((s) => `http://127.0.0.1:${s.info.port}`),
    info: spawned[0]!.info as Servers['info'],
    schema,
    monitor,
    meter: () => cpuMeter({ server: spawned.map((s) => s.child.pid!), loader: [process.pid], ...redis }, () => monitor.cpu.start()),
    storeLine: `PostgreSQL (schema ${schema.name}, synchronous_commit=${synchronousCommit}), ${instances} instance${instances > 1 ? 's' : ''}`,
  };
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'punctual-bench-'));
  const started: (() => Promise<void>)[] = [];
  try {
    const servers = await startServers(dir, started);
    const info = servers.info;
    const scheduledFor = new Date(Date.now() + SCHEDULE_AHEAD_MS).toISOString();
    const body = JSON.stringify({ payload: payloadOf(PAYLOAD_BYTES), scheduledFor });
    if (process.env.BENCH_PLAN_COMPARE === '1') return await comparePlans(servers, body);
    const load = (path: string, seconds: number) =>
      autocannon({
        // Several servers: autocannon gives connection i the URL i mod N.
        url: servers.origins.length === 1 ? `${servers.origins[0]}${path}` : servers.origins.map((origin) => `${origin}${path}`),
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${info.apiKey}` },
        body,
      });
    /** A measured run, with the CPU used during it and, on PostgreSQL, the database's work. */
    const measured = async (path: string, seconds: number) => {
      const stopPg = servers.monitor ? await servers.monitor.phase() : null;
      const stopMeter = servers.meter();
      const result = await load(path, seconds);
      const cpu = stopMeter();
      const pg = stopPg ? await stopPg() : null;
      return { result, cpu, pg };
    };

    console.log(
      `ingest: ${connections} connections, ${duration} s each after a ${warmup} s warm-up; body ${Buffer.byteLength(body)} bytes ` +
        `(payload ${PAYLOAD_BYTES} bytes, scheduledFor +1 h)`,
    );
    console.log(`machine: ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}, ${servers.storeLine}, LOG_LEVEL=warn`);
    console.log('');

    const warmBare = await load('/api/bench/bare', warmup);
    const bareRun = await measured('/api/bench/bare', duration);
    const bare = bareRun.result;
    const warmPunctual = await load('/api/jobs/dispatch', warmup);
    const punctualRun = await measured('/api/jobs/dispatch', duration);
    const punctual = punctualRun.result;

    // The crash run: SIGKILL while dispatches are in flight; every 201 received must be in the store.
    const crashRun = load('/api/jobs/dispatch', CRASH_RUN_S);
    await new Promise((wait) => setTimeout(wait, CRASH_AFTER_MS));
    await Promise.all(servers.children.map((child) => killed(child)));
    const crash = await crashRun;

    printTable([
      { workload: 'bare', result: bare },
      { workload: 'punctual', result: punctual },
    ]);
    const ratio = perSecond(punctual) / perSecond(bare);
    console.log('');
    console.log(`ratio punctual/bare req/s: ${ratio.toFixed(2)} (goal >= ${RATIO_GOAL}: ${ratio >= RATIO_GOAL ? 'met' : 'NOT met'})`);
    console.log(`p99 punctual/bare: ${punctual.latency.p99} ms / ${bare.latency.p99} ms`);
    for (const [label, run] of [['bare', bareRun], ['punctual', punctualRun]] as const) {
      const serverUs = ((run.cpu.cpus.server! * run.cpu.seconds * 1e6) / run.result.requests.total).toFixed(0);
      console.log(`${cpuLine(label, run.cpu)}; server CPU ${serverUs} µs/request`);
    }
    for (const [label, run] of [['bare', bareRun], ['punctual', punctualRun]] as const) {
      if (run.pg) for (const line of pgPhaseLines(label, run.pg as PgPhase, run.result.requests.total, renamed(run.cpu))) console.log(line);
    }

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
    let stored: number;
    if (servers.schema) {
      stored = (await servers.schema.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs'))[0]!.n;
    } else {
      const db = new Database(info.dbPath!, { readonly: true, fileMustExist: true });
      stored = (db.prepare('SELECT count(*) AS n FROM jobs').get() as { n: number }).n;
      db.close();
    }
    const durable = stored >= acknowledged;
    console.log(
      `durability: ${acknowledged} jobs acknowledged with 201 (${crash['2xx']} in the run cut by SIGKILL after ${CRASH_AFTER_MS} ms), ` +
        `${stored} in the ${servers.schema ? 'PostgreSQL schema' : 'SQLite file'} after the kill: ${durable ? 'ok' : 'FAIL'}`,
    );
    if (!durable) failed = true;
    return failed ? 1 : 0;
  } finally {
    for (const stop of started.reverse()) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** pgPhaseLines reads Punctual's CPU as `punctual`; here the servers are `server`. */
function renamed(cpu: CpuUse): CpuUse {
  return { ...cpu, cpus: { ...cpu.cpus, punctual: cpu.cpus.server ?? 0 } };
}

process.exitCode = await main();
