/**
 * What the delivery benchmarks (bench/e2e.ts, bench/lateness.ts, bench/backlog.ts) share: three
 * child processes and the load that drives them from this one.
 *
 *   - the receiver (bench/receiver.ts, forked, IPC): the webhook both systems deliver to;
 *   - Punctual: `node dist/cli/punctual.js serve` as shipped (a fresh SQLite file in a temporary
 *     directory, LOG_LEVEL=warn, everything else at its defaults), its first project pointed at the
 *     receiver through the admin API (PATCH /manage/v1/projects/:id {webhookUrl,
 *     deliveryConcurrency: 1000}). Not bench/bench-server.ts: no tsx loader in the process whose
 *     memory is measured (it adds about 28 MB of RSS). With DATABASE_URL=postgres://… it runs on a
 *     fresh schema of that database instead (bench/pg-bench.ts), as BENCH_INSTANCES processes
 *     (default 1) sharing it; the load's clients are then spread over them round robin, and the
 *     one receiver counts the deliveries of all;
 *   - the bare pipe (bench/bare-pipe.ts): Fastify + undici, forwards at once or after an
 *     in-memory timer, stores nothing.
 * The load generator (undici Pool, one connection per concurrent client, one request in flight
 * each) runs here. Every job's payload carries `k` ("<phase>:<index>") and `ref` (the moment its
 * dispatch request was built and sent, or its scheduledFor), from which the receiver computes
 * lag or lateness; phases keep the two systems' and the warm-ups' deliveries apart.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import ts from 'typescript';
import { Pool } from 'undici';
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
import { procStat } from './proc-stat.js';
import type { PhaseStats } from './receiver.js';

const here = dirname(fileURLToPath(import.meta.url));

export function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export function machineLine(): string {
  return `machine: ${availableParallelism()} CPUs (${cpus()[0]?.model ?? 'unknown'}), node ${process.version}`;
}

/**
 * The inside of a JSON object (no braces) that brings a payload with `k` and `ref` (about 40 bytes)
 * to about `bytes` bytes: an application's job description padded with a note; below about 300
 * bytes, a shorter description.
 */
export function payloadFiller(bytes: number): string {
  const full = {
    type: 'invoice.reminder',
    invoiceId: 'inv_8f3a2c91d4e7b605',
    customer: { id: 'cus_41d9c0a7', email: 'ada@example.com', locale: 'en-GB' },
    lines: [
      { sku: 'PLAN-PRO-M', quantity: 1, unitAmount: 4900 },
      { sku: 'SEAT-EXTRA', quantity: 3, unitAmount: 900 },
    ],
    note: '',
  };
  const short = { type: 'invoice.reminder', invoiceId: 'inv_8f3a2c91d4e7b605', note: '' };
  const budget = bytes - 40;
  const payload = Buffer.byteLength(JSON.stringify(full)) <= budget ? full : short;
  payload.note = 'x'.repeat(Math.max(0, budget - Buffer.byteLength(JSON.stringify(payload))));
  return JSON.stringify(payload).slice(1, -1);
}

export function payloadOf(key: string, ref: number, filler: string): string {
  return `{"k":${JSON.stringify(key)},"ref":${ref},${filler}}`;
}

// ---------------------------------------------------------------------------------------------
// Child processes

export function killed(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL', graceMs = 0): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill(signal);
    if (signal !== 'SIGKILL') setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
  });
}

/**
 * A bench server (e.g. 'bare-pipe.ts') as plain JavaScript, for a process whose memory is measured:
 * under tsx it would carry the loader (a thread and about 20 MB of RSS here) that Punctual, run
 * from dist/, does not. Transpiled once per run (types only removed, as tsx does) into a
 * temporary copy of bench/'s place in the tree, with dist/ and node_modules/ linked beside it so
 * that its imports resolve as from bench/; removed when this process exits.
 */
export function compiledBenchServer(entry: string): string {
  if (!compiledRoot) {
    const root = mkdtempSync(join(tmpdir(), 'punctual-bench-js-'));
    compiledRoot = root;
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'bench'));
    symlinkSync(resolve(here, '../dist'), join(root, 'dist'));
    symlinkSync(resolve(here, '../node_modules'), join(root, 'node_modules'));
    writeFileSync(join(root, 'package.json'), '{"type":"module"}\n');
  }
  const target = join(compiledRoot, 'bench', entry.replace(/\.ts$/, '.js'));
  if (!existsSync(target)) {
    const source = readFileSync(resolve(here, entry), 'utf8');
    const options = { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false };
    writeFileSync(target, ts.transpileModule(source, { compilerOptions: options, fileName: entry }).outputText);
  }
  return target;
}
let compiledRoot: string | null = null;

/**
 * Spawns `node [execArgv] --import tsx <entry>` (an entry in bench/), or `node [execArgv] <entry>`
 * for a path from compiledBenchServer, and waits for its one line of JSON on stdout.
 */
export async function spawnWithJsonLine<T>(entry: string, env: NodeJS.ProcessEnv, execArgv: string[] = []): Promise<{ child: ChildProcess; info: T }> {
  const script = entry.endsWith('.js') ? [entry] : ['--import', 'tsx', resolve(here, entry)];
  const child = spawn(process.execPath, [...execArgv, ...script], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  let timer: NodeJS.Timeout | undefined;
  try {
    const info = await new Promise<T>((resolveInfo, reject) => {
      timer = setTimeout(() => reject(new Error(`${entry} did not start within 30 s`)), 30_000);
      child.once('exit', (code, signal) => reject(new Error(`${entry} exited (${code ?? signal}) before listening`)));
      lines.once('line', (line) => {
        try {
          resolveInfo(JSON.parse(line) as T);
        } catch {
          reject(new Error(`unexpected line from ${entry}: ${line}`));
        }
      });
    });
    // Anything printed later (there should be nothing) goes to our stderr.
    lines.on('line', (line) => console.error(`[${entry}] ${line}`));
    return { child, info };
  } catch (error) {
    await killed(child);
    throw error;
  } finally {
    clearTimeout(timer);
    child.removeAllListeners('exit');
  }
}

export class Receiver {
  private nextId = 1;
  private readonly waiting = new Map<number, (reply: Record<string, unknown>) => void>();

  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {
    child.on('message', (message: Record<string, unknown>) => {
      const id = message.id as number;
      this.waiting.get(id)?.(message);
      this.waiting.delete(id);
    });
  }

  static async start(): Promise<Receiver> {
    const child = fork(resolve(here, 'receiver.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const port = await new Promise<number>((done, reject) => {
      child.once('message', (message: { port: number }) => done(message.port));
      child.once('exit', (code) => reject(new Error(`the receiver exited (${code}) before listening`)));
    });
    child.removeAllListeners('exit');
    return new Receiver(child, `http://127.0.0.1:${port}/hook`);
  }

  private ask(type: 'count' | 'stats' | 'dump' | 'arrivals' | 'async' | 'reports', phase: string, extra: { path?: string; callbackBase?: string } = {}): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((done) => {
      this.waiting.set(id, done);
      this.child.send({ id, type, phase, ...extra });
    });
  }

  /**
   * Async completion (bench/async-completion.ts): from now on the phase's deliveries are answered
   * 202, each followed by its success report to `callbackBase` (bench/receiver.ts says where).
   */
  async answerAsync(phase: string, callbackBase: string): Promise<void> {
    await this.ask('async', phase, { callbackBase });
  }

  /** The phase's reports: distinct keys answered 200, when the last of them was (wall-clock ms), and the refused. */
  async reports(phase: string): Promise<{ reported: number; refused: number; firstRefusal: string | null; lastReport: number }> {
    return (await this.ask('reports', phase)) as unknown as { reported: number; refused: number; firstRefusal: string | null; lastReport: number };
  }

  /** Writes the phase's deliveries (`jobId key arrival` lines) to `path`. */
  async dump(phase: string, path: string): Promise<void> {
    await this.ask('dump', phase, { path });
  }

  /** Each key's first arrival (wall-clock ms, sub-millisecond) in the phase. */
  async arrivals(phase: string): Promise<Record<string, number>> {
    return ((await this.ask('arrivals', phase)) as { arrivals: Record<string, number> }).arrivals;
  }

  async count(phase: string): Promise<{ unique: number; deliveries: number; malformed: number; reported: number }> {
    return (await this.ask('count', phase)) as { unique: number; deliveries: number; malformed: number; reported: number };
  }

  async stats(phase: string): Promise<PhaseStats & { malformed: number }> {
    return (await this.ask('stats', phase)) as unknown as PhaseStats & { malformed: number };
  }

  /**
   * Waits until `expected` distinct jobs of the phase have arrived (with `reports`: have had their
   * report answered 200), or until none did for `idleMs` after `notBefore` (then the rest are lost).
   * Returns the distinct count.
   */
  async waitFor(phase: string, expected: number, options: { idleMs: number; notBefore?: number; reports?: boolean }): Promise<number> {
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const counts = await this.count(phase);
      const unique = options.reports ? counts.reported : counts.unique;
      if (unique >= expected) return unique;
      const now = Date.now();
      if (unique !== last) {
        last = unique;
        lastChange = now;
      } else if (now - Math.max(lastChange, options.notBefore ?? 0) > options.idleMs) return unique;
      await sleep(20);
    }
  }

  stop(): Promise<void> {
    return killed(this.child);
  }
}

export interface System {
  /** 'bare' and 'punctual' in bench:e2e/lateness/backlog; bench/compare.ts has more. */
  name: string;
  /** The first (or only) process and its origin. */
  origin: string;
  child: ChildProcess;
  /** Every process of the system (PostgreSQL: BENCH_INSTANCES Punctual processes), and their origins. */
  children: ChildProcess[];
  origins: string[];
  headers: Record<string, string>;
}

export interface PunctualSystem extends System {
  name: 'punctual';
  /** The SQLite file, or null on PostgreSQL. */
  dbPath: string | null;
  /** PostgreSQL: the run's schema. */
  schema: BenchSchema | null;
  /** A line that says which store, e.g. "SQLite synchronous=FULL" or "PostgreSQL, 2 instances". */
  storeLine: string;
  synchronous: string;
  /** Lines and bytes its processes wrote to stdout and stderr since they were set up (counted in mode 'user'). */
  logs: () => LogCount;
  /** From the first-start banner: the /manage/v1 token and the first project (the one the key belongs to). */
  adminToken: string;
  projectId: string;
}

export interface LogCount {
  lines: number;
  bytes: number;
}

/**
 * How Punctual is started: 'bench' as bench:e2e/lateness/backlog run it (LOG_LEVEL=warn, the
 * environment passed through, deliveryConcurrency 1000, log lines shown on stderr); 'user' as a
 * user starts it (bench/compare.ts): NODE_ENV=production and the defaults, the only settings
 * HOST, PORT, DATABASE_URL (and PUNCTUAL_SECRET_KEY, which PostgreSQL requires) and
 * PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true for a receiver on 127.0.0.1; every other PUNCTUAL_*,
 * LOG_LEVEL, NODE_ENV and REDIS_URL of this environment is left out; the project's webhookUrl is
 * the only field patched; stdout and stderr are read from pipes and counted.
 */
export type PunctualMode = 'bench' | 'user';

/** This environment without the variables that would change a user-started Punctual's defaults. */
function userEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('PUNCTUAL_') || name === 'LOG_LEVEL' || name === 'NODE_ENV' || name === 'REDIS_URL' || name === 'DATABASE_URL') continue;
    env[name] = value;
  }
  return env;
}

/**
 * Counts a stream's bytes and lines; while `wanted()` is true, also hands each line to `onLine`.
 * Once nothing wants the text, a chunk costs a native newline search and no string.
 */
function readLines(stream: NodeJS.ReadableStream, counter: LogCount, wanted: () => boolean, onLine: (line: string) => void): void {
  let partial = '';
  stream.on('data', (chunk: Buffer) => {
    counter.bytes += chunk.length;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) counter.lines += 1;
    if (!wanted()) {
      partial = '';
      return;
    }
    const text = partial + chunk.toString('utf8');
    const lines = text.split('\n');
    partial = lines.pop()!;
    for (const line of lines) onLine(line);
  });
}

/** A port free right now on 127.0.0.1 (punctual serve prints no address when given PORT=0). */
function freePort(): Promise<number> {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      server.close(() => done(port));
    });
  });
}

interface PunctualProcess {
  child: ChildProcess;
  origin: string;
  /** From the first-start banner (the instance that set the database up). */
  banner: Record<string, string>;
  /** Output since setup (mode 'user'; in mode 'bench' stderr is not counted). */
  logs: () => LogCount;
}

/**
 * One `node dist/cli/punctual.js serve`. With `expectBanner`, waits for the first-start banner;
 * otherwise (a further instance on a database already set up) until /readyz answers 200.
 */
async function spawnPunctual(
  dir: string,
  env: Record<string, string>,
  options: {
    mode: PunctualMode;
    expectBanner: boolean;
    execArgv: string[];
    onLine: (child: ChildProcess, line: string) => boolean;
    /** Called at once, before the process connects to anything (the database's CPU meter needs its pid early). */
    onSpawn: (child: ChildProcess) => void;
  },
): Promise<PunctualProcess> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const user = options.mode === 'user';
  const childEnv = user
    ? { ...userEnvironment(), ...env, NODE_ENV: 'production', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true', HOST: '127.0.0.1', PORT: String(port) }
    : { ...process.env, ...env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), PUNCTUAL_PUBLIC_URL: origin };
  const child = spawn(process.execPath, [...options.execArgv, resolve(here, '../dist/cli/punctual.js'), 'serve'], {
    env: childEnv,
    // A user's logs go to a pipe (a terminal, journald, a container runtime): here they are read and counted.
    stdio: ['ignore', 'pipe', user ? 'pipe' : 'inherit'],
    cwd: dir,
  });
  options.onSpawn(child);
  const banner: Record<string, string> = {};
  let setUp = false;
  let setupDone: () => void = () => {};
  // Only the lines after setup count as logs; the startup lines (banner included) are kept apart.
  const stdoutLine = (line: string) => {
    if (options.onLine(child, line)) return;
    const field = /^\s+(API key|Admin token|Project)\s+(\S+)/.exec(line);
    if (!setUp && field) banner[field[1]!] = field[2]!;
    else if (!setUp && banner.Project && /^─+$/.test(line)) {
      setUp = true;
      setupDone();
    } else if (!user && (setUp || line.startsWith('{'))) console.error(`[punctual] ${line}`); // a log line
  };
  const counted: LogCount = { lines: 0, bytes: 0 };
  readLines(child.stdout!, counted, () => !user || !setUp, stdoutLine);
  // Kept to say why a start failed.
  const errors: string[] = [];
  if (user) readLines(child.stderr!, counted, () => !setUp, (line) => errors.push(line));
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((done, reject) => {
      setupDone = done;
      timer = setTimeout(() => reject(new Error('punctual serve was not set up within 30 s')), 30_000);
      child.once('exit', (code, signal) =>
        reject(new Error(`punctual serve exited (${code ?? signal}) before it was set up${errors.length > 0 ? `: ${errors.slice(-5).join(' | ')}` : ''}`)),
      );
      if (!options.expectBanner) {
        void (async () => {
          while (!setUp) {
            const status = await fetch(`${origin}/readyz`).then((r) => r.status, () => 0);
            if (status === 200) {
              setUp = true;
              done();
            } else await sleep(100);
          }
        })();
      }
    });
  } catch (error) {
    await killed(child);
    throw error;
  } finally {
    clearTimeout(timer);
    child.removeAllListeners('exit');
  }
  const startup = { ...counted };
  return { child, origin, banner, logs: () => ({ lines: counted.lines - startup.lines, bytes: counted.bytes - startup.bytes }) };
}

/**
 * `node dist/cli/punctual.js serve` exactly as shipped, on a fresh SQLite file (or, with `schema`,
 * as `instances` processes on a fresh PostgreSQL schema), with LOG_LEVEL=warn; the API key, admin
 * token and project id are read from the first-start banner, and the first project is pointed at
 * `receiverUrl` through the admin API.
 */
export async function startPunctual(
  dir: string,
  receiverUrl: string,
  postgres: {
    schema: BenchSchema;
    instances: number;
    onLine: (child: ChildProcess, line: string) => boolean;
    onSpawn: (child: ChildProcess) => void;
  } | null = null,
  mode: PunctualMode = 'bench',
): Promise<PunctualSystem> {
  const execArgv = (process.env.BENCH_PUNCTUAL_EXEC_ARGV ?? '').split(' ').filter(Boolean);
  const dbPath = postgres ? null : join(dir, 'punctual.db');
  const env = postgres ? postgres.schema.env : { DATABASE_URL: `sqlite:${dbPath}` };
  const onLine = postgres?.onLine ?? (() => false);
  const onSpawn = postgres?.onSpawn ?? (() => {});
  // The statement counter is the benchmarks' instrument, not something a user loads.
  const argv = postgres && mode === 'bench' ? [...execArgv, ...QUERY_COUNTER_IMPORT] : execArgv;
  const processes: PunctualProcess[] = [];
  try {
    processes.push(await spawnPunctual(dir, env, { mode, expectBanner: true, execArgv: argv, onLine, onSpawn }));
    const { banner, origin } = processes[0]!;
    const adminToken = banner['Admin token'];
    if (!banner['API key'] || !adminToken || !banner.Project) throw new Error(`incomplete first-start banner: ${JSON.stringify(Object.keys(banner))}`);
    const response = await fetch(`${origin}/manage/v1/projects/${banner.Project}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(mode === 'user' ? { webhookUrl: receiverUrl } : { webhookUrl: receiverUrl, deliveryConcurrency: 1000 }),
    });
    if (response.status !== 200) throw new Error(`PATCH project answered ${response.status}: ${await response.text()}`);
    const more = Array.from({ length: (postgres?.instances ?? 1) - 1 }, () =>
      spawnPunctual(dir, env, { mode, expectBanner: false, execArgv: argv, onLine, onSpawn }),
    );
    processes.push(...(await Promise.all(more)));
  } catch (error) {
    for (const p of processes) await killed(p.child);
    throw error;
  }
  const synchronous = ((mode === 'bench' ? process.env.PUNCTUAL_SQLITE_SYNCHRONOUS : undefined) ?? 'FULL').toUpperCase();
  const synchronousCommit = postgres ? Object.values((await postgres.schema.query('SHOW synchronous_commit'))[0]!)[0] : null;
  return {
    name: 'punctual',
    origin: processes[0]!.origin,
    child: processes[0]!.child,
    origins: processes.map((p) => p.origin),
    children: processes.map((p) => p.child),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${processes[0]!.banner['API key']}` },
    adminToken: processes[0]!.banner['Admin token']!,
    projectId: processes[0]!.banner.Project!,
    dbPath,
    schema: postgres?.schema ?? null,
    storeLine: postgres
      ? `PostgreSQL (schema ${postgres.schema.name}, synchronous_commit=${synchronousCommit}), ${processes.length} Punctual instance${processes.length > 1 ? 's' : ''}`
      : `SQLite synchronous=${synchronous}`,
    synchronous,
    logs: () => {
      const each = processes.map((p) => p.logs());
      return { lines: each.reduce((sum, l) => sum + l.lines, 0), bytes: each.reduce((sum, l) => sum + l.bytes, 0) };
    },
  };
}

/**
 * With `answerAtOnce`, a job due now gets its 201 before its forward (BARE_ANSWER=at-once in
 * bench/bare-pipe.ts); with `compiled`, it runs as plain JavaScript (compiledBenchServer); with
 * `async`, a 202 is a forward taken and POST /result/:jobId answers 200 (BARE_ASYNC=1).
 */
export async function startBare(receiverUrl: string, options: { answerAtOnce?: boolean; compiled?: boolean; async?: boolean } = {}): Promise<System> {
  const execArgv = (process.env.BENCH_BARE_EXEC_ARGV ?? '').split(' ').filter(Boolean);
  const env = { BARE_RECEIVER_URL: receiverUrl, BARE_ANSWER: options.answerAtOnce ? 'at-once' : '', BARE_ASYNC: options.async ? '1' : '' };
  const entry = options.compiled ? compiledBenchServer('bare-pipe.ts') : 'bare-pipe.ts';
  const { child, info } = await spawnWithJsonLine<{ port: number }>(entry, env, execArgv);
  const origin = `http://127.0.0.1:${info.port}`;
  return { name: 'bare', origin, child, origins: [origin], children: [child], headers: { 'content-type': 'application/json' } };
}

/**
 * bench/bullmq-front.ts as plain JavaScript (compiledBenchServer) on Redis at `redisUrl`, under a
 * key prefix of the caller's (queue "webhooks"), delivering to `receiverUrl`; `limitPerSecond` sets
 * the Worker's limiter (BULLMQ_LIMIT_PER_SECOND), `async` the wait for a report after a 202
 * (BULLMQ_ASYNC=1).
 */
export async function startBullmq(receiverUrl: string, options: { redisUrl: string; prefix: string; limitPerSecond?: number; async?: boolean }): Promise<System> {
  const front = await spawnWithJsonLine<{ port: number }>(compiledBenchServer('bullmq-front.ts'), {
    BULLMQ_RECEIVER_URL: receiverUrl,
    REDIS_URL: options.redisUrl,
    BULLMQ_PREFIX: options.prefix,
    BULLMQ_QUEUE: 'webhooks',
    BULLMQ_LIMIT_PER_SECOND: options.limitPerSecond === undefined ? '' : String(options.limitPerSecond),
    BULLMQ_ASYNC: options.async ? '1' : '',
  });
  const origin = `http://127.0.0.1:${front.info.port}`;
  return { name: 'bullmq', origin, child: front.child, origins: [origin], children: [front.child], headers: { 'content-type': 'application/json' } };
}

/** A call to Punctual's management API (/manage/v1) with the admin token; throws unless 2xx. */
export async function manage(origin: string, token: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** SIGTERM (so a --cpu-prof profile gets written), SIGKILL after 10 s. */
export async function stopSystem(system: System): Promise<void> {
  await Promise.all(system.children.map((child) => killed(child, 'SIGTERM', 10_000)));
}

/** Set by startAll when BENCH_DUMP_DIR is: where the receiver's dumps go. */
let keptDir: string | null = null;

/** With BENCH_DUMP_DIR: writes the phase's deliveries to <kept directory>/<phase>.log. */
export async function dumpPhase(receiver: Receiver, phase: string): Promise<void> {
  if (keptDir) await receiver.dump(phase, join(keptDir, `${phase}.log`));
}

/**
 * The three children and a temporary directory, removed by close(); with BENCH_DUMP_DIR, the
 * directory is made there and kept (Punctual's SQLite file, and the receiver's dumps). With
 * DATABASE_URL=postgres://…, a fresh schema (dropped by close(), kept with BENCH_DUMP_DIR) and
 * BENCH_INSTANCES Punctual processes, and `pg` to measure the database per phase.
 */
export async function startAll(): Promise<{
  receiver: Receiver;
  bare: System;
  punctual: PunctualSystem;
  /** Starts a CPU meter over this process (the load generator), the three children and the rest of the machine. */
  meter: () => () => CpuUse;
  /** PostgreSQL: starts measuring the database's work; the returned function ends the phase. */
  pg: (() => Promise<() => Promise<PgPhase>>) | null;
  close: () => Promise<void>;
}> {
  const dumpDir = process.env.BENCH_DUMP_DIR;
  const postgresUrl = postgresUrlFromEnv();
  const instances = instancesFromEnv(postgresUrl !== null);
  const dir = mkdtempSync(join(dumpDir ?? tmpdir(), 'punctual-bench-'));
  if (dumpDir) {
    keptDir = dir;
    console.error(`keeping ${dir}`);
  }
  const started: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const stop of started.reverse()) await stop();
    if (!dumpDir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const receiver = await Receiver.start();
    started.push(() => receiver.stop());
    let punctual: PunctualSystem;
    let monitor: PostgresMonitor | null = null;
    if (postgresUrl) {
      const schema = await createSchema(postgresUrl);
      started.push(async () => {
        if (!dumpDir) return schema.drop();
        console.error(`keeping schema ${schema.name}`);
        await schema.keep();
      });
      const owners: number[] = [];
      const pgMonitor = await PostgresMonitor.start(postgresUrl, () => owners);
      monitor = pgMonitor;
      started.push(() => pgMonitor.stop());
      const onLine = (child: ChildProcess, line: string) => pgMonitor.counter.handle(child, line);
      // Registered as soon as spawned, so that the connections each opens at start count as Punctual's.
      const onSpawn = (child: ChildProcess) => {
        owners.push(child.pid!);
        pgMonitor.counter.register(child);
      };
      punctual = await startPunctual(dir, receiver.url, { schema, instances, onLine, onSpawn });
    } else {
      punctual = await startPunctual(dir, receiver.url);
    }
    started.push(() => stopSystem(punctual));
    const bare = await startBare(receiver.url);
    started.push(() => stopSystem(bare));
    const pids = { punctual: punctual.children.map((c) => c.pid!), bare: [bare.child.pid!], receiver: [receiver.child.pid!], loader: [process.pid] };
    const pg = monitor ? () => monitor.phase() : null;
    return { receiver, bare, punctual, meter: () => cpuMeter(pids, monitor ? () => monitor.cpu.start() : undefined), pg, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** VmHWM (peak RSS) and VmRSS of a process, with the anonymous and file-backed parts of the latter, in MB, from /proc. */
export function memoryOf(pid: number): { peakMb: number; rssMb: number; anonMb: number; fileMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) / 1024;
  return { peakMb: mb('VmHWM'), rssMb: mb('VmRSS'), anonMb: mb('RssAnon'), fileMb: mb('RssFile') + mb('RssShmem') };
}

/** Job counts by status and the number of attempts, read from the SQLite file (read-only, beside the server) or the PostgreSQL schema. */
export async function storeCounts(punctual: PunctualSystem): Promise<{ byStatus: Record<string, number>; attempts: number }> {
  if (punctual.schema) {
    const rows = await punctual.schema.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM jobs GROUP BY status');
    const [attempts] = await punctual.schema.query<{ n: number }>('SELECT count(*)::int AS n FROM attempts');
    return { byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])), attempts: attempts!.n };
  }
  const db = new Database(punctual.dbPath!, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT status, count(*) AS n FROM jobs GROUP BY status').all() as { status: string; n: number }[];
    const attempts = (db.prepare('SELECT count(*) AS n FROM attempts').get() as { n: number }).n;
    return { byStatus: Object.fromEntries(rows.map((r) => [r.status, r.n])), attempts };
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Load

export interface LoadResult {
  /** Wall-clock ms when the first request was built. */
  firstSentAt: number;
  /** Wall-clock ms when the last answer arrived. */
  doneAt: number;
  requests: number;
  failures: number;
  firstFailure: string | null;
}

/**
 * `count` POSTs to `path` from `connections` clients, one request in flight each. `body(i)` is
 * called just before request i is sent; `ok` judges each answer. With several processes
 * (system.origins), client c talks to origin c mod N: the clients are spread round robin.
 */
export async function load(
  system: System,
  options: {
    path: string;
    connections: number;
    count: number;
    body: (i: number) => string;
    ok: (status: number, text: string) => boolean;
    /** Called as soon as request i's answer has been read. */
    onAnswer?: (i: number) => void;
  },
): Promise<LoadResult> {
  const share = (k: number) => Math.ceil((options.connections - k) / system.origins.length);
  const pools = system.origins.map((origin, k) => new Pool(origin, { connections: share(k), pipelining: 1 }));
  let next = 0;
  let failures = 0;
  let firstFailure: string | null = null;
  const firstSentAt = Date.now();
  const client = async (c: number) => {
    const pool = pools[c % pools.length]!;
    while (next < options.count) {
      const i = next++;
      try {
        const response = await pool.request({ path: options.path, method: 'POST', headers: system.headers, body: options.body(i) });
        const text = await response.body.text();
        options.onAnswer?.(i);
        if (!options.ok(response.statusCode, text)) {
          failures += 1;
          firstFailure ??= `${response.statusCode} ${text.slice(0, 300)}`;
        }
      } catch (error) {
        failures += 1;
        firstFailure ??= String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, (_, c) => client(c)));
  const doneAt = Date.now();
  await Promise.all(pools.map((pool) => pool.close()));
  return { firstSentAt, doneAt, requests: options.count, failures, firstFailure };
}

export const created = (status: number) => status === 201;

/** Jobs per request of a backlog insert: the batch endpoint's most. */
export const BACKLOG_BATCH = 100;

/**
 * A backlog: `jobs` (a multiple of BACKLOG_BATCH) jobs due `aheadMs` after they are sent, through
 * POST /api/jobs/dispatch/batch from `connections` clients, in chunks of `chunk` jobs with
 * `progress` called after each. Returns the jobs/s over the whole insert; throws when a request
 * failed.
 */
export async function insertBacklog(
  system: System,
  options: {
    phase: string;
    jobs: number;
    connections: number;
    filler: string;
    aheadMs: number;
    chunk: number;
    progress: (done: number, seconds: number) => void;
  },
): Promise<number> {
  const started = Date.now();
  let failures = 0;
  let firstFailure: string | null = null;
  for (let done = 0; done < options.jobs; ) {
    const jobs = Math.min(options.chunk, options.jobs - done);
    const offset = done;
    const result = await load(system, {
      path: '/api/jobs/dispatch/batch',
      connections: options.connections,
      count: Math.ceil(jobs / BACKLOG_BATCH),
      body: (request) => {
        const due = Date.now() + options.aheadMs;
        const scheduledFor = new Date(due).toISOString();
        const items: string[] = [];
        for (let j = 0; j < BACKLOG_BATCH; j += 1) {
          items.push(`{"payload":${payloadOf(`${options.phase}:${offset + request * BACKLOG_BATCH + j}`, due, options.filler)},"scheduledFor":"${scheduledFor}"}`);
        }
        return `{"jobs":[${items.join(',')}]}`;
      },
      ok: (status, text) => {
        if (status !== 200) return false;
        const answers = (JSON.parse(text) as { jobs: { jobId?: string }[] }).jobs;
        return answers.length === BACKLOG_BATCH && answers.every((a) => typeof a.jobId === 'string');
      },
    });
    failures += result.failures;
    firstFailure ??= result.firstFailure;
    done += jobs;
    options.progress(done, (Date.now() - started) / 1000);
  }
  if (failures > 0) throw new Error(`${system.name}: ${failures} batch requests failed, first: ${firstFailure}`);
  return options.jobs / ((Date.now() - started) / 1000);
}

// ---------------------------------------------------------------------------------------------
// The lateness workload (bench:lateness, bench:backlog)

export interface LatenessRun {
  system: string;
  phase: string;
  jobs: number;
  windowMs: number;
  /** How long dispatching the jobs took, and the lead they had before the first was due. */
  dispatchMs: number;
  leadMs: number;
  load: LoadResult;
  stats: PhaseStats;
  lost: number;
  /** From the first dispatch to the last arrival (or the end of the wait). */
  cpu: CpuUse | null;
  /** PostgreSQL: the database's work over the same interval. */
  pg: PgPhase | null;
}

/**
 * `jobs` jobs due evenly over `windowMs`, the first `leadMs` after dispatching starts; all are
 * dispatched (64 clients) before the first is due, unless the lead is too short (then it says so).
 */
export async function latenessRun(
  receiver: Receiver,
  system: System,
  options: {
    phase: string;
    jobs: number;
    windowMs: number;
    leadMs: number;
    connections: number;
    filler: string;
    meter?: () => () => CpuUse;
    pg?: (() => Promise<() => Promise<PgPhase>>) | null;
    /** GET /metrics this often during the run, as Prometheus would (Punctual only). */
    scrapeMetricsEveryMs?: number;
  },
): Promise<LatenessRun> {
  const stopPg = options.pg ? await options.pg() : null;
  const scraper =
    options.scrapeMetricsEveryMs && system.name === 'punctual'
      ? setInterval(() => void fetch(`${system.origin}/metrics`).then((res) => res.arrayBuffer()).catch(() => {}), options.scrapeMetricsEveryMs)
      : null;
  const stopMeter = options.meter?.();
  const start = Date.now() + options.leadMs;
  const due = (i: number) => start + Math.floor((i * options.windowMs) / options.jobs);
  const result = await load(system, {
    path: '/api/jobs/dispatch',
    connections: options.connections,
    count: options.jobs,
    body: (i) => `{"payload":${payloadOf(`${options.phase}:${i}`, due(i), options.filler)},"scheduledFor":"${new Date(due(i)).toISOString()}"}`,
    ok: created,
  });
  const lastDue = due(options.jobs - 1);
  await sleep(Math.max(0, lastDue - Date.now()));
  const unique = await receiver.waitFor(options.phase, options.jobs, { idleMs: 10_000, notBefore: lastDue });
  if (scraper) clearInterval(scraper);
  const cpu = stopMeter?.() ?? null;
  const pg = stopPg ? await stopPg() : null;
  const stats = await receiver.stats(options.phase);
  await dumpPhase(receiver, options.phase);
  return {
    cpu,
    pg,
    system: system.name,
    phase: options.phase,
    jobs: options.jobs,
    windowMs: options.windowMs,
    dispatchMs: result.doneAt - result.firstSentAt,
    leadMs: options.leadMs,
    load: result,
    stats,
    lost: options.jobs - unique,
  };
}

const pad = (value: string | number, width: number) => String(value).padStart(width);
export const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');

export function printLatenessTable(runs: LatenessRun[]): void {
  console.log(
    `${'run'.padEnd(26)}${pad('jobs', 7)}${pad('dispatch ms', 12)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('max ms', 8)}` +
      `${pad('min ms', 8)}${pad('early', 7)}${pad('lost', 6)}${pad('dup', 5)}${pad('fail', 6)}`,
  );
  for (const run of runs) {
    const s = run.stats;
    console.log(
      `${`${run.system} ${run.phase}`.padEnd(26)}${pad(run.jobs, 7)}${pad(run.dispatchMs, 12)}${pad(ms(s.p50), 8)}${pad(ms(s.p99), 8)}` +
        `${pad(ms(s.max), 8)}${pad(ms(s.min), 8)}${pad(s.early, 7)}${pad(run.lost, 6)}${pad(Math.max(s.duplicateKeys, s.duplicateJobIds), 5)}` +
        `${pad(run.load.failures, 6)}`,
    );
  }
  for (const run of runs) {
    if (run.dispatchMs > run.leadMs) {
      console.log(`WARNING: ${run.system} ${run.phase}: dispatching took ${run.dispatchMs} ms, longer than the ${run.leadMs} ms lead`);
    }
    if (run.load.failures > 0) console.log(`FAIL: ${run.system} ${run.phase}: ${run.load.failures} dispatches failed, first: ${run.load.firstFailure}`);
    if (Math.abs(run.stats.clockDrift) > 0.5) {
      console.log(`note: by the end of ${run.system} ${run.phase}, the receiver's clock anchor had moved ${run.stats.clockDrift.toFixed(2)} ms since start`);
    }
  }
  for (const run of runs) if (run.cpu) console.log(cpuLine(`${run.system} ${run.phase}`, run.cpu));
  for (const run of runs) if (run.pg && run.cpu) for (const line of pgPhaseLines(`${run.system} ${run.phase}`, run.pg, run.jobs, run.cpu)) console.log(line);
}

/** True when the runs lost, duplicated or failed nothing. */
export function clean(runs: LatenessRun[]): boolean {
  return runs.every((r) => r.lost === 0 && r.stats.duplicateKeys === 0 && r.stats.duplicateJobIds === 0 && r.load.failures === 0);
}

export const P99_GOAL_MS = 10;
export const MAX_GOAL_MS = 50;

export const latenessOptions = () => ({
  jobs: Math.round(positiveNumber('BENCH_JOBS', 5_000)),
  windowMs: Math.round(positiveNumber('BENCH_WINDOW_MS', 10_000)),
  leadMs: Math.round(positiveNumber('BENCH_LEAD_MS', 2_000)),
  warmupJobs: Math.round(positiveNumber('BENCH_WARMUP_JOBS', 500)),
  connections: Math.round(positiveNumber('BENCH_CONNECTIONS', 64)),
  filler: payloadFiller(Math.round(positiveNumber('BENCH_PAYLOAD_BYTES', 1024))),
});

export function describeLateness(o: ReturnType<typeof latenessOptions>): string {
  return (
    `lateness: ${o.jobs} jobs due evenly over ${o.windowMs} ms, the first ${o.leadMs} ms after dispatching starts ` +
    `(${o.connections} clients); warm-up ${o.warmupJobs} jobs over 1 s per system`
  );
}

/** The goal line for one Punctual run; true when met. */
export function latenessGoal(run: LatenessRun): boolean {
  const met = run.stats.p99 <= P99_GOAL_MS && run.stats.max <= MAX_GOAL_MS && run.stats.early === 0;
  console.log(
    `${run.system} ${run.phase}: p99 ${ms(run.stats.p99)} ms (goal <= ${P99_GOAL_MS}), max ${ms(run.stats.max)} ms (goal <= ${MAX_GOAL_MS}), ` +
      `${run.stats.early} early: ${met ? 'met' : 'NOT met'}`,
  );
  return met;
}

// ---------------------------------------------------------------------------------------------
// CPU accounting: the machine is shared, so each phase reports who used the CPUs during it.

/** Clock ticks per second of /proc (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

function machineTicks(): { busy: number; interrupts: number; niced: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  return { busy: fields.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + v), 0), interrupts: fields[5]! + fields[6]!, niced: fields[1]! };
}

/** CPU ticks of the kernel's threads (kthreadd, pid 2, and its children). */
function kernelThreadTicks(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat && (entry === '2' || stat.ppid === 2)) ticks += stat.ticks;
  }
  return ticks;
}

const processTicks = (pid: number): number => procStat(pid)?.ticks ?? 0;

export interface CpuUse {
  seconds: number;
  /** CPUs' worth used during the interval, by process name, plus `others` (everything else on the machine). */
  cpus: Record<string, number>;
  /** For a name that stands for several processes: each one's share, in order. */
  split: Record<string, number[]>;
  /**
   * Two parts of `others`, for information: the machine's time in interrupts and softirqs (here
   * mostly the loopback network and disk completions of the run itself), and the kernel's threads
   * (kworker, jbd2, …). Each is read on its own, so they need not add up to `others`.
   */
  interrupts: number;
  /**
   * The part of `others` run at a positive nice value: other work on the machine deliberately
   * kept behind the benchmark (the scheduler gives a nice-19 process about 1/70 of a nice-0
   * one's share when both want a CPU).
   */
  niced: number;
  kernelThreads: number;
}

/**
 * Starts measuring; the returned function gives the CPU use since. A name may stand for several
 * processes (their sum). `extra` measures processes that come and go (the database server's, by
 * class): its ticks count as ours, not as `others`.
 */
export function cpuMeter(processes: Record<string, number | number[]>, extra?: () => () => Record<string, number>): () => CpuUse {
  const groups = Object.entries(processes).map(([name, pids]) => [name, Array.isArray(pids) ? pids : [pids]] as const);
  const start = { at: performance.now(), machine: machineTicks(), kernel: kernelThreadTicks(), own: groups.map(([, pids]) => pids.map(processTicks)) };
  const stopExtra = extra?.();
  return () => {
    const seconds = (performance.now() - start.at) / 1000;
    const cpus: Record<string, number> = {};
    const split: Record<string, number[]> = {};
    let ours = 0;
    groups.forEach(([name, pids], g) => {
      const each = pids.map((pid, k) => processTicks(pid) - start.own[g]![k]!);
      const ticks = each.reduce((a, b) => a + b, 0);
      ours += ticks;
      cpus[name] = ticks / TICKS_PER_SECOND / seconds;
      if (pids.length > 1) split[name] = each.map((t) => t / TICKS_PER_SECOND / seconds);
    });
    for (const [name, ticks] of Object.entries(stopExtra?.() ?? {})) {
      ours += ticks;
      cpus[name] = ticks / TICKS_PER_SECOND / seconds;
    }
    const machine = machineTicks();
    cpus.others = Math.max(0, machine.busy - start.machine.busy - ours) / TICKS_PER_SECOND / seconds;
    return {
      seconds,
      cpus,
      split,
      interrupts: (machine.interrupts - start.machine.interrupts) / TICKS_PER_SECOND / seconds,
      niced: (machine.niced - start.machine.niced) / TICKS_PER_SECOND / seconds,
      kernelThreads: (kernelThreadTicks() - start.kernel) / TICKS_PER_SECOND / seconds,
    };
  };
}

/** CPUs the rest of the machine uses over one second (call it when nothing of the benchmark's runs). */
export function othersNow(): Promise<number> {
  const stop = cpuMeter({ loader: [process.pid] });
  return sleep(1000).then(() => stop().cpus.others ?? 0);
}

/**
 * The machine is shared (tests of other work may run beside): waits, up to `waitS` seconds, until
 * other processes use at most `maxOthers` CPUs, saying so when it waits. Returns what they use then.
 */
export async function waitForQuietMachine(maxOthers: number, waitS: number, indent = '  '): Promise<number> {
  const waitFrom = Date.now();
  let others = await othersNow();
  while (others > maxOthers && Date.now() - waitFrom < waitS * 1000) {
    if (Date.now() - waitFrom < 1500) console.log(`${indent}waiting for a quiet machine: other processes use ${others.toFixed(2)} CPUs (at most ${maxOthers})`);
    others = await othersNow();
  }
  if (Date.now() - waitFrom > 1500) console.log(`${indent}waited ${((Date.now() - waitFrom) / 1000).toFixed(0)} s; other processes now use ${others.toFixed(2)} CPUs`);
  return others;
}

export function cpuLine(label: string, use: CpuUse): string {
  const parts = Object.entries(use.cpus).map(
    ([name, cpus]) => `${name} ${cpus.toFixed(2)}${use.split[name] ? ` (${use.split[name].map((c) => c.toFixed(2)).join(' + ')})` : ''}`,
  );
  return (
    `CPU ${label} (${use.seconds.toFixed(1)} s, CPUs busy by process): ${parts.join(', ')} ` +
    `(in others: irq+softirq ${use.interrupts.toFixed(2)}, kernel threads ${use.kernelThreads.toFixed(2)}, niced ${use.niced.toFixed(2)})`
  );
}
