/**
 * What the delivery benchmarks (bench/e2e.ts, bench/lateness.ts, bench/backlog.ts) share: three
 * child processes and the load that drives them from this one.
 *
 *   - the receiver (bench/receiver.ts, forked, IPC): the webhook both systems deliver to;
 *   - Punctual: `node dist/cli/punctual.js serve` as shipped (a fresh SQLite file in a temporary
 *     directory, LOG_LEVEL=warn, everything else at its defaults), its first project pointed at the
 *     receiver through the admin API (PATCH /manage/v1/projects/:id {webhookUrl,
 *     deliveryConcurrency: 1000}). Not bench/bench-server.ts: no tsx loader in the process whose
 *     memory is measured (it adds about 28 MB of RSS);
 *   - the bare pipe (bench/bare-pipe.ts): Fastify + undici, forwards at once or after an
 *     in-memory timer, stores nothing.
 * The load generator (undici Pool, one connection per concurrent client, one request in flight
 * each) runs here. Every job's payload carries `k` ("<phase>:<index>") and `ref` (the moment its
 * dispatch request was built and sent, or its scheduledFor), from which the receiver computes
 * lag or lateness; phases keep the two systems' and the warm-ups' deliveries apart.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
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

function killed(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL', graceMs = 0): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill(signal);
    if (signal !== 'SIGKILL') setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
  });
}

/** Spawns `node [execArgv] --import tsx <entry>` and waits for its one line of JSON on stdout. */
async function spawnWithJsonLine<T>(entry: string, env: NodeJS.ProcessEnv, execArgv: string[] = []): Promise<{ child: ChildProcess; info: T }> {
  const child = spawn(process.execPath, [...execArgv, '--import', 'tsx', resolve(here, entry)], {
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

  private ask(type: 'count' | 'stats' | 'dump', phase: string, path?: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    return new Promise((done) => {
      this.waiting.set(id, done);
      this.child.send({ id, type, phase, path });
    });
  }

  /** Writes the phase's deliveries (`jobId key arrival` lines) to `path`. */
  async dump(phase: string, path: string): Promise<void> {
    await this.ask('dump', phase, path);
  }

  async count(phase: string): Promise<{ unique: number; deliveries: number; malformed: number }> {
    return (await this.ask('count', phase)) as { unique: number; deliveries: number; malformed: number };
  }

  async stats(phase: string): Promise<PhaseStats & { malformed: number }> {
    return (await this.ask('stats', phase)) as unknown as PhaseStats & { malformed: number };
  }

  /**
   * Waits until `expected` distinct jobs of the phase have arrived, or until none arrived for
   * `idleMs` after `notBefore` (then the rest are lost). Returns the distinct count.
   */
  async waitFor(phase: string, expected: number, options: { idleMs: number; notBefore?: number }): Promise<number> {
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const { unique } = await this.count(phase);
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
  name: 'bare' | 'punctual';
  origin: string;
  child: ChildProcess;
  headers: Record<string, string>;
}

export interface PunctualSystem extends System {
  name: 'punctual';
  dbPath: string;
  synchronous: string;
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

/**
 * `node dist/cli/punctual.js serve` exactly as shipped, on a fresh SQLite file, with LOG_LEVEL=warn;
 * the API key, admin token and project id are read from its first-start banner, and the first
 * project is pointed at `receiverUrl` through the admin API.
 */
export async function startPunctual(dir: string, receiverUrl: string): Promise<PunctualSystem> {
  const execArgv = (process.env.BENCH_PUNCTUAL_EXEC_ARGV ?? '').split(' ').filter(Boolean);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const dbPath = join(dir, 'punctual.db');
  const child = spawn(process.execPath, [...execArgv, resolve(here, '../dist/cli/punctual.js'), 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: `sqlite:${dbPath}`,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      PUNCTUAL_PUBLIC_URL: origin,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: dir,
  });
  const lines = createInterface({ input: child.stdout! });
  const banner: Record<string, string> = {};
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((done, reject) => {
      timer = setTimeout(() => reject(new Error('punctual serve printed no first-start banner within 30 s')), 30_000);
      child.once('exit', (code, signal) => reject(new Error(`punctual serve exited (${code ?? signal}) before it was set up`)));
      lines.on('line', (line) => {
        const field = /^\s+(API key|Admin token|Project)\s+(\S+)/.exec(line);
        if (field) banner[field[1]!] = field[2]!;
        else if (banner.Project && /^─+$/.test(line)) done();
        else if (line.startsWith('{')) console.error(`[punctual] ${line}`); // a log line
      });
    });
    lines.removeAllListeners('line');
    lines.on('line', (line) => console.error(`[punctual] ${line}`));
    const adminToken = banner['Admin token'];
    if (!banner['API key'] || !adminToken || !banner.Project) throw new Error(`incomplete first-start banner: ${JSON.stringify(Object.keys(banner))}`);
    const response = await fetch(`${origin}/manage/v1/projects/${banner.Project}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhookUrl: receiverUrl, deliveryConcurrency: 1000 }),
    });
    if (response.status !== 200) throw new Error(`PATCH project answered ${response.status}: ${await response.text()}`);
  } catch (error) {
    await killed(child);
    throw error;
  } finally {
    clearTimeout(timer);
    child.removeAllListeners('exit');
  }
  const synchronous = (process.env.PUNCTUAL_SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase();
  return {
    name: 'punctual',
    origin,
    child,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${banner['API key']}` },
    dbPath,
    synchronous,
  };
}

export async function startBare(receiverUrl: string): Promise<System> {
  const execArgv = (process.env.BENCH_BARE_EXEC_ARGV ?? '').split(' ').filter(Boolean);
  const { child, info } = await spawnWithJsonLine<{ port: number }>('bare-pipe.ts', { BARE_RECEIVER_URL: receiverUrl }, execArgv);
  return { name: 'bare', origin: `http://127.0.0.1:${info.port}`, child, headers: { 'content-type': 'application/json' } };
}

/** SIGTERM (so a --cpu-prof profile gets written), SIGKILL after 10 s. */
export function stopSystem(system: System): Promise<void> {
  return killed(system.child, 'SIGTERM', 10_000);
}

/** Set by startAll when BENCH_DUMP_DIR is: where the receiver's dumps go. */
let keptDir: string | null = null;

/** With BENCH_DUMP_DIR: writes the phase's deliveries to <kept directory>/<phase>.log. */
export async function dumpPhase(receiver: Receiver, phase: string): Promise<void> {
  if (keptDir) await receiver.dump(phase, join(keptDir, `${phase}.log`));
}

/**
 * The three children and a temporary directory, removed by close(); with BENCH_DUMP_DIR, the
 * directory is made there and kept (Punctual's SQLite file, and the receiver's dumps).
 */
export async function startAll(): Promise<{
  receiver: Receiver;
  bare: System;
  punctual: PunctualSystem;
  /** Starts a CPU meter over this process (the load generator), the three children and the rest of the machine. */
  meter: () => () => CpuUse;
  close: () => Promise<void>;
}> {
  const dumpDir = process.env.BENCH_DUMP_DIR;
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
    const punctual = await startPunctual(dir, receiver.url);
    started.push(() => stopSystem(punctual));
    const bare = await startBare(receiver.url);
    started.push(() => stopSystem(bare));
    const pids = { punctual: punctual.child.pid!, bare: bare.child.pid!, receiver: receiver.child.pid!, loader: process.pid };
    return { receiver, bare, punctual, meter: () => cpuMeter(pids), close };
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

/** Job counts by status and the number of attempts, read from the SQLite file (read-only, beside the server). */
export function storeCounts(dbPath: string): { byStatus: Record<string, number>; attempts: number } {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
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
 * called just before request i is sent; `ok` judges each answer.
 */
export async function load(
  system: System,
  options: { path: string; connections: number; count: number; body: (i: number) => string; ok: (status: number, text: string) => boolean },
): Promise<LoadResult> {
  const pool = new Pool(system.origin, { connections: options.connections, pipelining: 1 });
  let next = 0;
  let failures = 0;
  let firstFailure: string | null = null;
  const firstSentAt = Date.now();
  const client = async () => {
    while (next < options.count) {
      const i = next++;
      try {
        const response = await pool.request({ path: options.path, method: 'POST', headers: system.headers, body: options.body(i) });
        const text = await response.body.text();
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
  await Promise.all(Array.from({ length: options.connections }, client));
  const doneAt = Date.now();
  await pool.close();
  return { firstSentAt, doneAt, requests: options.count, failures, firstFailure };
}

export const created = (status: number) => status === 201;

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
}

/**
 * `jobs` jobs due evenly over `windowMs`, the first `leadMs` after dispatching starts; all are
 * dispatched (64 clients) before the first is due, unless the lead is too short (then it says so).
 */
export async function latenessRun(
  receiver: Receiver,
  system: System,
  options: { phase: string; jobs: number; windowMs: number; leadMs: number; connections: number; filler: string; meter?: () => () => CpuUse },
): Promise<LatenessRun> {
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
  const cpu = stopMeter?.() ?? null;
  const stats = await receiver.stats(options.phase);
  await dumpPhase(receiver, options.phase);
  return {
    cpu,
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

function machineBusyTicks(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  return fields.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + v), 0);
}

function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the file, 12 and 13 after "(comm) ".
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

export interface CpuUse {
  seconds: number;
  /** CPUs' worth used during the interval, by process name, plus `others` (everything else on the machine). */
  cpus: Record<string, number>;
}

/** Starts measuring; the returned function gives the CPU use since. */
export function cpuMeter(processes: Record<string, number>): () => CpuUse {
  const start = { at: performance.now(), machine: machineBusyTicks(), own: Object.fromEntries(Object.entries(processes).map(([n, pid]) => [n, processTicks(pid)])) };
  return () => {
    const seconds = (performance.now() - start.at) / 1000;
    const cpus: Record<string, number> = {};
    let ours = 0;
    for (const [name, pid] of Object.entries(processes)) {
      const ticks = processTicks(pid) - start.own[name]!;
      ours += ticks;
      cpus[name] = ticks / TICKS_PER_SECOND / seconds;
    }
    cpus.others = Math.max(0, machineBusyTicks() - start.machine - ours) / TICKS_PER_SECOND / seconds;
    return { seconds, cpus };
  };
}

export function cpuLine(label: string, use: CpuUse): string {
  const parts = Object.entries(use.cpus).map(([name, cpus]) => `${name} ${cpus.toFixed(2)}`);
  return `CPU ${label} (${use.seconds.toFixed(1)} s, CPUs busy by process): ${parts.join(', ')}`;
}
