/**
 * `npm run bench:compare`: Punctual beside what a user would run instead, on the same workloads,
 * each figure the median of BENCH_RUNS runs with its range, its ratio to the bare pipe and to
 * BullMQ, the server's peak RSS and CPU per job; ends with one Markdown table for BENCHMARKS.md.
 *
 * Systems (BENCH_SYSTEMS, default all; each server in its own process, started afresh for every
 * workload and run, so that peak RSS and the stores belong to that run alone):
 *   - bare:     bench/bare-pipe.ts with BARE_ANSWER=at-once: Fastify + undici, stores nothing,
 *               answers 201 at once and forwards at the due time (a timer, or at once);
 *   - bullmq:   bench/bullmq-front.ts: a Fastify front calling BullMQ 5's queue.add / addBulk, and a
 *               BullMQ Worker (concurrency 64) in the same process POSTing to the receiver; Redis
 *               at REDIS_URL (default redis://127.0.0.1:6379), a key prefix of its own per run,
 *               deleted afterwards;
 *   - punctual: `node dist/cli/punctual.js serve` as a user starts it (startPunctual, mode
 *               'user': NODE_ENV=production, default settings and log level, its log read from
 *               pipes and counted), on a fresh SQLite file;
 *   - pg1, pg2: the same on PostgreSQL (DATABASE_URL when it names PostgreSQL, else
 *               postgres://postgres@127.0.0.1:5432/test), a fresh schema per run
 *               (bench/pg-bench.ts), 1 or 2 instances with the load spread round robin.
 * The receiver (bench/receiver.ts) runs in its own process, the load here.
 *
 * Workloads (BENCH_WORKLOADS, default all):
 *   - ingest:   autocannon, BENCH_CONNECTIONS (64) connections, a 1 KB payload due in an hour,
 *               BENCH_WARMUP (2) s then BENCH_DURATION (10) s measured: req/s, p50, p99. Then
 *               Punctual's durability check of bench/ingest.ts (a load cut by SIGKILL, every 201'd
 *               job must be in the SQLite file or the schema), in every run; for BullMQ the same
 *               count of the jobs in Redis after a SIGKILL of the front;
 *   - e2e:      BENCH_E2E_JOBS (20,000) jobs due at once from 64 clients, after 2,000 warm-up jobs:
 *               delivered/s = jobs / (last arrival − first dispatch), lag = arrival − the moment
 *               that job's 201 reached the client, lost and duplicated;
 *   - lateness: BENCH_LATENESS_JOBS (5,000) jobs due evenly over 10 s, the first BENCH_LEAD_MS
 *               (2,000) ms after dispatching starts, after 500 warm-up jobs: arrival − due time;
 *   - backlog:  500 warm-up jobs, then BENCH_BACKLOG_JOBS (1,000,000) jobs due 30 days ahead
 *               through the batch API (100 per request, 16 clients, a 1,024-byte payload, as the issue's disk figure counts), then the
 *               lateness workload again; the disk used BENCH_SETTLE_MS (30 s) after the insert
 *               ended (SQLite file and -wal; PostgreSQL: pg_total_relation_size of the schema's
 *               tables); the backlog must still be waiting and none of it delivered.
 * CPU per job is read from /proc for the server processes and for their store (redis-server when
 * local; PostgreSQL's backends and its own processes); peak RSS is VmHWM of the server processes,
 * and redis-server's RSS sampled every 250 ms (INFO's used_memory_rss when Redis is not local).
 *
 * Runs go workload by workload, and within a run system by system, so that a drift of the machine
 * spreads over every system. Exits non-zero when a job was lost, duplicated or refused, or a
 * durability or backlog check failed.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Result } from 'autocannon';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import {
  compiledBenchServer,
  cpuMeter,
  created,
  insertBacklog,
  killed,
  latenessRun,
  load,
  machineLine,
  memoryOf,
  payloadFiller,
  payloadOf,
  positiveNumber,
  Receiver,
  sleep,
  spawnWithJsonLine,
  startBare,
  startPunctual,
  stopSystem,
  waitForQuietMachine,
  type CpuUse,
  type PunctualSystem,
  type System,
} from './delivery-harness.js';
import { createSchema, PostgresMonitor, postgresUrlFromEnv } from './pg-bench.js';
import { percentile } from './percentile.js';
import { wallClock } from './wall-clock.js';

// ---------------------------------------------------------------------------------------------
// Settings

const SYSTEM_IDS = ['bare', 'bullmq', 'punctual', 'pg1', 'pg2'] as const;
const WORKLOAD_IDS = ['ingest', 'e2e', 'lateness', 'backlog'] as const;
type SystemId = (typeof SYSTEM_IDS)[number];
type WorkloadId = (typeof WORKLOAD_IDS)[number];

const LABELS: Record<SystemId, string> = {
  bare: 'bare pipe',
  bullmq: 'BullMQ + Redis',
  punctual: 'Punctual, SQLite',
  pg1: 'Punctual, PostgreSQL ×1',
  pg2: 'Punctual, PostgreSQL ×2',
};

function listFromEnv<T extends string>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name]?.trim();
  if (!raw) return [...all];
  const picked = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const p of picked) if (!all.includes(p as T)) throw new Error(`${name}: unknown "${p}" (known: ${all.join(', ')})`);
  return all.filter((id) => picked.includes(id));
}

const systems = listFromEnv('BENCH_SYSTEMS', SYSTEM_IDS);
const workloads = listFromEnv('BENCH_WORKLOADS', WORKLOAD_IDS);
const runs = Math.round(positiveNumber('BENCH_RUNS', 3));
const connections = Math.round(positiveNumber('BENCH_CONNECTIONS', 64));
const ingestSeconds = positiveNumber('BENCH_DURATION', 10);
const ingestWarmupSeconds = positiveNumber('BENCH_WARMUP', 2);
const e2eJobs = Math.round(positiveNumber('BENCH_E2E_JOBS', 20_000));
const e2eWarmupJobs = Math.round(positiveNumber('BENCH_E2E_WARMUP_JOBS', 2_000));
const latenessJobs = Math.round(positiveNumber('BENCH_LATENESS_JOBS', 5_000));
const latenessWindowMs = Math.round(positiveNumber('BENCH_WINDOW_MS', 10_000));
const latenessWarmupJobs = Math.round(positiveNumber('BENCH_LATENESS_WARMUP_JOBS', 500));
const leadMs = Math.round(positiveNumber('BENCH_LEAD_MS', 2_000));
const backlogJobs = Math.max(100, Math.round(positiveNumber('BENCH_BACKLOG_JOBS', 1_000_000) / 100) * 100);
const backlogConnections = Math.round(positiveNumber('BENCH_BACKLOG_CONNECTIONS', 16));
const backlogPayloadBytes = Math.round(positiveNumber('BENCH_BACKLOG_PAYLOAD_BYTES', 1024));
const settleMs = Math.round(positiveNumber('BENCH_SETTLE_MS', 30_000));
/**
 * The machine is shared (tests of other work may run beside): a cell during whose measured phases
 * other processes used more than this many CPUs is run again, up to BENCH_RETRIES times, and
 * every cell waits (up to BENCH_QUIET_WAIT_S) for the machine to be that quiet before it starts.
 */
const maxOthers = positiveNumber('BENCH_MAX_OTHERS', 0.3);
const retries = Math.round(Number(process.env.BENCH_RETRIES ?? 2));
const quietWaitS = positiveNumber('BENCH_QUIET_WAIT_S', 300);
const redisUrl = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';
const postgresUrl = postgresUrlFromEnv() ?? 'postgres://postgres@127.0.0.1:5432/test';

const PAYLOAD_BYTES = 1024;
const HOUR_MS = 3_600_000;
const BACKLOG_AHEAD_MS = 30 * 86_400_000;
/** How long into the crash run of ingest the servers are killed, and how long that run lasts (as bench/ingest.ts). */
const CRASH_AFTER_MS = 1000;
const CRASH_RUN_S = 2;
const filler = payloadFiller(PAYLOAD_BYTES);
const backlogFiller = payloadFiller(backlogPayloadBytes);
const wall = wallClock();
const benchStart = Date.now();

const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const clock = () => new Date().toISOString().slice(11, 19);
const elapsed = () => `${((Date.now() - benchStart) / 60_000).toFixed(1)} min`;
const progress = (line: string) => console.log(`[${clock()} +${elapsed()}] ${line}`);

// ---------------------------------------------------------------------------------------------
// Redis: the store of BullMQ, watched from here

class RedisWatch {
  private constructor(
    readonly client: Redis,
    /** redis-server's pid when it runs on this machine (read from /proc), else null (read INFO). */
    readonly pid: number | null,
    readonly version: string,
    /** Redis's timer frequency: a blocked client's timeout (BullMQ's wait for its next delayed job) fires on its ticks. */
    readonly hz: string,
  ) {}

  static async connect(url: string): Promise<RedisWatch> {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await client.connect();
    const server = parseInfo(await client.info('server'));
    const pid = Number(server.process_id);
    const host = new URL(url).hostname;
    const loopback = host === 'localhost' || host.startsWith('127.') || host === '[::1]';
    // Same pid and command name here: the server is this machine's (not another namespace's or host's).
    const local = loopback && Number.isInteger(pid) && memoryOrNull(pid) !== null && commOf(pid) === 'redis-server';
    return new RedisWatch(client, local ? pid : null, server.redis_version ?? '?', server.hz ?? '?');
  }

  async rssMb(): Promise<number> {
    if (this.pid !== null) return memoryOf(this.pid).rssMb;
    return Number(parseInfo(await this.client.info('memory')).used_memory_rss) / 1048576;
  }

  async usedMemoryMb(): Promise<number> {
    return Number(parseInfo(await this.client.info('memory')).used_memory) / 1048576;
  }

  /** Samples the RSS every 250 ms until stopped; stop() gives the largest sample. */
  peakSampler(): () => Promise<number> {
    let peak = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        peak = Math.max(peak, await this.rssMb());
        await sleep(250);
      }
    })();
    return async () => {
      running = false;
      await loop;
      return Math.max(peak, await this.rssMb());
    };
  }

  async persistence(): Promise<string> {
    const [, save] = (await this.client.config('GET', 'save')) as string[];
    const [, appendonly] = (await this.client.config('GET', 'appendonly')) as string[];
    const none = !save && appendonly === 'no';
    return `save "${save ?? ''}", appendonly ${appendonly}${none ? ': no persistence, a restart of Redis loses every queued job' : ''}`;
  }

  /** Deletes every key under `prefix:`; returns how many. */
  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 5000);
      cursor = next;
      if (keys.length > 0) deleted += await this.client.unlink(...keys);
    } while (cursor !== '0');
    // So that the next run's RSS starts from what Redis holds, not from pages it kept.
    await this.client.call('MEMORY', 'PURGE').catch(() => {});
    return deleted;
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => {});
  }
}

function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const at = line.indexOf(':');
    if (at > 0 && !line.startsWith('#')) fields[line.slice(0, at)] = line.slice(at + 1);
  }
  return fields;
}

function memoryOrNull(pid: number): number | null {
  try {
    return memoryOf(pid).rssMb;
  } catch {
    return null;
  }
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Systems

/** One system started for one workload of one run. */
interface Running {
  id: SystemId;
  system: System;
  /** The server processes (both instances of pg2; BullMQ's front, which runs its worker too). */
  pids: number[];
  /** Starts a CPU meter: `server`, then `store` (redis-server) or `pg` and `pg-aux` (PostgreSQL), `receiver`, `loader`, `others`. */
  meter: () => () => CpuUse;
  /** Every job the store holds (after a SIGKILL: the durability check); null when it stores nothing. */
  stored: () => Promise<number | null>;
  /** Jobs waiting to be due at least 29 days from now (the backlog); null when it stores nothing. */
  waiting: () => Promise<number | null>;
  /** What the store takes: on disk, or (Redis) its dataset in memory; null when it stores nothing. */
  footprint: () => Promise<{ mb: number; text: string } | null>;
  /** Punctual's log output since it was set up (its processes' stdout and stderr, read from pipes). */
  logs: (() => { lines: number; bytes: number }) | null;
  /** SIGKILL to every server process (the crash of the durability check). */
  crash: () => Promise<void>;
  /** Stops everything this system started and removes what it stored. */
  close: () => Promise<void>;
}

/** The store's CPU by system: redis-server, or PostgreSQL's backends and its own processes. */
const STORE_CPU: Record<SystemId, string[]> = { bare: [], bullmq: ['store'], punctual: [], pg1: ['pg', 'pg-aux'], pg2: ['pg', 'pg-aux'] };

/** Whatever must be undone if the run is interrupted (Ctrl-C): stopped processes, dropped schemas, deleted keys. */
const cleanups = new Set<() => Promise<void>>();

/** Runs `undo` at close, or on SIGINT if that comes first. */
function onClose(undo: () => Promise<void>): () => Promise<void> {
  let done = false;
  const once = async () => {
    if (done) return;
    done = true;
    cleanups.delete(once);
    await undo();
  };
  cleanups.add(once);
  return once;
}

let redis: RedisWatch | null = null;

async function startSystem(id: SystemId, receiver: Receiver): Promise<Running> {
  const others = { receiver: [receiver.child.pid!], loader: [process.pid] };
  if (id === 'bare') {
    const system = await startBare(receiver.url, { answerAtOnce: true, compiled: true });
    const pids = [system.child.pid!];
    return {
      id,
      system,
      pids,
      meter: () => cpuMeter({ server: pids, ...others }),
      stored: async () => null,
      waiting: async () => null,
      footprint: async () => null,
      logs: null,
      crash: () => killed(system.child),
      close: onClose(() => stopSystem(system)),
    };
  }

  if (id === 'bullmq') {
    const watch = redis!;
    const prefix = `punctual-bench-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const keys = `${prefix}:webhooks`;
    const datasetBefore = await watch.usedMemoryMb();
    const drop = onClose(async () => {
      await watch.deletePrefix(prefix);
    });
    let front: Awaited<ReturnType<typeof spawnWithJsonLine<{ port: number }>>>;
    try {
      front = await spawnWithJsonLine<{ port: number }>(compiledBenchServer('bullmq-front.ts'), {
        BULLMQ_RECEIVER_URL: receiver.url,
        REDIS_URL: redisUrl,
        BULLMQ_PREFIX: prefix,
        BULLMQ_QUEUE: 'webhooks',
      });
    } catch (error) {
      await drop();
      throw error;
    }
    const origin = `http://127.0.0.1:${front.info.port}`;
    const system: System = { name: 'bullmq', origin, child: front.child, origins: [origin], children: [front.child], headers: { 'content-type': 'application/json' } };
    const pids = [front.child.pid!];
    const stop = onClose(() => stopSystem(system));
    // Every state a job can be in (completed and failed ones are trimmed to 1,000 and 5,000).
    const count = async () => {
      const pipeline = watch.client.pipeline();
      for (const list of ['wait', 'paused', 'active']) pipeline.llen(`${keys}:${list}`);
      for (const set of ['delayed', 'prioritized', 'waiting-children', 'completed', 'failed']) pipeline.zcard(`${keys}:${set}`);
      return ((await pipeline.exec()) ?? []).reduce((sum, [error, n]) => {
        if (error) throw error;
        return sum + Number(n);
      }, 0);
    };
    return {
      id,
      system,
      pids,
      meter: () => cpuMeter({ server: pids, ...(watch.pid !== null ? { store: [watch.pid] } : {}), ...others }),
      stored: count,
      // A delayed job's score is its due time × 4096 plus a counter.
      waiting: () => watch.client.zcount(`${keys}:delayed`, (Date.now() + 29 * 86_400_000) * 4096, '+inf'),
      footprint: async () => {
        const mb = (await watch.usedMemoryMb()) - datasetBefore;
        return { mb, text: `Redis dataset +${mb.toFixed(0)} MB in memory (no disk)` };
      },
      logs: null,
      crash: () => killed(front.child),
      close: async () => {
        await stop();
        await drop();
      },
    };
  }

  // Punctual: SQLite, or one or two instances on a fresh PostgreSQL schema.
  const dir = mkdtempSync(join(tmpdir(), 'punctual-compare-'));
  const removeDir = onClose(async () => rmSync(dir, { recursive: true, force: true }));
  if (id === 'punctual') {
    let punctual: PunctualSystem;
    try {
      punctual = await startPunctual(dir, receiver.url, null, 'user');
    } catch (error) {
      await removeDir();
      throw error;
    }
    const stop = onClose(() => stopSystem(punctual));
    const dbPath = punctual.dbPath!;
    const query = <T>(sql: string, ...values: unknown[]): T => {
      const db = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        return db.prepare(sql).get(...values) as T;
      } finally {
        db.close();
      }
    };
    const pids = [punctual.child.pid!];
    return {
      id,
      system: punctual,
      pids,
      meter: () => cpuMeter({ server: pids, ...others }),
      stored: async () => query<{ n: number }>('SELECT count(*) AS n FROM jobs').n,
      waiting: async () => query<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE status = 'QUEUED' AND run_at >= ?`, Date.now() + 29 * 86_400_000).n,
      footprint: async () => {
        const size = (suffix: string) => {
          try {
            return statSync(`${dbPath}${suffix}`).size / 1048576;
          } catch {
            return 0;
          }
        };
        const [db, wal] = [size(''), size('-wal')];
        return { mb: db + wal, text: `SQLite file ${db.toFixed(0)} MB + WAL ${wal.toFixed(0)} MB` };
      },
      logs: punctual.logs,
      crash: async () => {
        await killed(punctual.child);
      },
      close: async () => {
        await stop();
        await removeDir();
      },
    };
  }

  const schema = await createSchema(postgresUrl);
  const dropSchema = onClose(() => schema.drop());
  const owners: number[] = [];
  let monitor: PostgresMonitor | null = null;
  let punctual: PunctualSystem;
  try {
    monitor = await PostgresMonitor.start(postgresUrl, () => owners);
    // Registered as soon as spawned, so that the connections each opens at start count as Punctual's.
    const onSpawn = (child: { pid?: number }) => owners.push(child.pid!);
    punctual = await startPunctual(dir, receiver.url, { schema, instances: id === 'pg2' ? 2 : 1, onLine: () => false, onSpawn }, 'user');
  } catch (error) {
    await monitor?.stop();
    await dropSchema();
    await removeDir();
    throw error;
  }
  const pgMonitor = monitor;
  const stop = onClose(async () => {
    await stopSystem(punctual);
    await pgMonitor.stop();
  });
  const pids = punctual.children.map((c) => c.pid!);
  const count = async (sql: string, values: unknown[] = []) => (await schema.query<{ n: number }>(sql, values))[0]!.n;
  return {
    id,
    system: punctual,
    pids,
    meter: () => cpuMeter({ server: pids, ...others }, () => pgMonitor.cpu.start()),
    stored: () => count('SELECT count(*)::int AS n FROM jobs'),
    waiting: () => count(`SELECT count(*)::int AS n FROM jobs WHERE status = 'QUEUED' AND run_at >= $1`, [Date.now() + 29 * 86_400_000]),
    footprint: async () => {
      const [row] = await schema.query<{ bytes: string }>(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema.name],
      );
      const mb = Number(row!.bytes) / 1048576;
      return { mb, text: `PostgreSQL tables with their indexes and TOAST ${mb.toFixed(0)} MB` };
    },
    logs: punctual.logs,
    crash: async () => {
      await Promise.all(punctual.children.map((child) => killed(child)));
    },
    close: async () => {
      await stop();
      await dropSchema();
      await removeDir();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Workloads: each gives one cell (one system, one run) of figures

interface Cell {
  figures: Record<string, number>;
  /** Summed over the runs in the table's check row: lost, dup, early, refused, and failed checks. */
  counts: Record<string, number>;
  /** Printed under the cell's progress line. */
  notes: string[];
  /** The most CPUs other processes used during one of the cell's measured phases. */
  others: number;
}

const serverPeakMb = (r: Running) => r.pids.reduce((sum, pid) => sum + memoryOf(pid).peakMb, 0);

/** CPU µs per job: the server's processes and their store together, and the store alone. */
function cpuFigures(r: Running, cpu: CpuUse, jobs: number): { cpu: number; storeCpu?: number } {
  const us = (names: string[]) => (names.reduce((sum, name) => sum + (cpu.cpus[name] ?? 0), 0) * cpu.seconds * 1e6) / jobs;
  const store = STORE_CPU[r.id];
  if (r.id === 'bullmq' && redis?.pid === null) return { cpu: Number.NaN }; // a Redis elsewhere: its CPU is not ours to read
  return { cpu: us(['server', ...store]), ...(store.length > 0 ? { storeCpu: us(store) } : {}) };
}

function cpuNote(label: string, cpu: CpuUse): string {
  const parts = Object.entries(cpu.cpus).map(([name, cpus]) => `${name} ${cpus.toFixed(2)}${cpu.split[name] ? ` (${cpu.split[name].map((c) => c.toFixed(2)).join(' + ')})` : ''}`);
  return `CPUs busy during ${label} (${cpu.seconds.toFixed(1)} s): ${parts.join(', ')}`;
}

function logNote(r: Running, before: { lines: number; bytes: number } | undefined, jobs: number): string[] {
  if (!r.logs || !before) return [];
  const after = r.logs();
  const lines = after.lines - before.lines;
  const bytes = after.bytes - before.bytes;
  return [`its log: ${int(lines)} lines, ${int(bytes / 1024)} KB read from its pipes (${(lines / jobs).toFixed(2)} lines, ${int(bytes / jobs)} bytes per job)`];
}

async function ingestCell(r: Running): Promise<Cell> {
  const body = `{"payload":${payloadOf('ingest:0', Date.now() + HOUR_MS, filler)},"scheduledFor":"${new Date(Date.now() + HOUR_MS).toISOString()}"}`;
  const urls = r.system.origins.map((origin) => `${origin}/api/jobs/dispatch`);
  // Several servers: autocannon gives connection i the URL i mod N.
  const run = (seconds: number) =>
    autocannon({ url: urls.length === 1 ? urls[0]! : urls, method: 'POST', connections, duration: seconds, headers: r.system.headers, body });
  const warm = await run(ingestWarmupSeconds);
  const logsBefore = r.logs?.();
  const stopMeter = r.meter();
  const result = await run(ingestSeconds);
  const cpu = stopMeter();
  const answered = result['2xx'];
  const notFine = (res: Result) => res.non2xx + res.errors + res.timeouts;
  const cell: Cell = {
    figures: { rate: answered / result.duration, p50: result.latency.p50, p99: result.latency.p99, ...cpuFigures(r, cpu, answered), rss: serverPeakMb(r) },
    counts: { refused: notFine(warm) + notFine(result) },
    notes: [cpuNote('the measured run', cpu), ...logNote(r, logsBefore, answered)],
    others: cpu.cpus.others ?? 0,
  };
  if (notFine(result) > 0) cell.notes.push(`FAIL: ${notFine(result)} answers not 2xx or failed: ${JSON.stringify(result.statusCodeStats)}`);

  // The durability check of bench/ingest.ts: SIGKILL under load, then every 201 must be stored.
  if (r.id !== 'bare') {
    const crashing = run(CRASH_RUN_S);
    await sleep(CRASH_AFTER_MS);
    await r.crash();
    const crash = await crashing;
    const acked = warm['2xx'] + answered + crash['2xx'];
    const stored = (await r.stored())!;
    const ok = stored >= acked;
    cell.counts.durabilityRuns = 1;
    cell.counts.durabilityFailed = ok ? 0 : 1;
    const where = r.id === 'bullmq' ? 'in Redis after SIGKILL of the front (Redis itself keeps them in memory only)' : 'stored after SIGKILL';
    cell.notes.push(`durability: ${int(acked)} jobs answered 201 (${int(crash['2xx'])} in the run cut after ${CRASH_AFTER_MS} ms), ${int(stored)} ${where}: ${ok ? 'ok' : 'FAIL'}`);
  }
  return cell;
}

async function e2eCell(r: Running, receiver: Receiver): Promise<Cell> {
  const send = (phase: string, count: number, onAnswer?: (i: number) => void) =>
    load(r.system, { path: '/api/jobs/dispatch', connections, count, body: (i) => `{"payload":${payloadOf(`${phase}:${i}`, Date.now(), filler)}}`, ok: created, onAnswer });
  const warm = await send('warm', e2eWarmupJobs);
  await receiver.waitFor('warm', e2eWarmupJobs, { idleMs: 15_000 });
  const answeredAt = new Float64Array(e2eJobs).fill(Number.NaN);
  const logsBefore = r.logs?.();
  const stopMeter = r.meter();
  const result = await send('e2e', e2eJobs, (i) => {
    answeredAt[i] = wall.now();
  });
  const unique = await receiver.waitFor('e2e', e2eJobs, { idleMs: 15_000 });
  const cpu = stopMeter();
  const stats = await receiver.stats('e2e');
  const lags: number[] = [];
  for (const [key, arrival] of Object.entries(await receiver.arrivals('e2e'))) {
    const sent = answeredAt[Number(key.slice(key.indexOf(':') + 1))]!;
    if (Number.isFinite(sent)) lags.push(arrival - sent);
  }
  lags.sort((a, b) => a - b);
  const deliveredS = (stats.lastArrival - result.firstSentAt) / 1000;
  return {
    figures: {
      rate: e2eJobs / deliveredS,
      lagP50: percentile(lags, 0.5),
      lagP99: percentile(lags, 0.99),
      ...cpuFigures(r, cpu, e2eJobs),
      rss: serverPeakMb(r),
    },
    counts: { lost: e2eJobs - unique, dup: Math.max(stats.duplicateKeys, stats.duplicateJobIds), refused: warm.failures + result.failures },
    notes: [
      `dispatching took ${fixed((result.doneAt - result.firstSentAt) / 1000, 2)} s, the last delivery ${fixed(deliveredS, 2)} s after the first dispatch; ` +
        `lag after the request was sent p50 ${fixed(stats.p50, 1)} / p99 ${fixed(stats.p99, 1)} / max ${fixed(stats.max, 1)} ms; ` +
        `after the 201 min ${fixed(lags[0] ?? Number.NaN, 1)} / max ${fixed(lags[lags.length - 1] ?? Number.NaN, 1)} ms`,
      cpuNote('dispatch to last delivery', cpu),
      ...logNote(r, logsBefore, e2eJobs),
      ...(result.failures > 0 ? [`FAIL: ${result.failures} dispatches failed, first: ${result.firstFailure}`] : []),
    ],
    others: cpu.cpus.others ?? 0,
  };
}

const latenessCommon = (r: Running) => ({ connections, filler, leadMs, meter: r.meter });

async function latenessCell(r: Running, receiver: Receiver): Promise<Cell> {
  await latenessRun(receiver, r.system, { ...latenessCommon(r), phase: 'warm', jobs: latenessWarmupJobs, windowMs: 1_000 });
  const logsBefore = r.logs?.();
  const run = await latenessRun(receiver, r.system, { ...latenessCommon(r), phase: 'late', jobs: latenessJobs, windowMs: latenessWindowMs });
  return latenessFigures(r, run, logsBefore);
}

function latenessFigures(r: Running, run: Awaited<ReturnType<typeof latenessRun>>, logsBefore?: { lines: number; bytes: number }): Cell {
  const s = run.stats;
  return {
    figures: { p50: s.p50, p99: s.p99, max: s.max, ...cpuFigures(r, run.cpu!, run.jobs), rss: serverPeakMb(r) },
    counts: { early: s.early, lost: run.lost, dup: Math.max(s.duplicateKeys, s.duplicateJobIds), refused: run.load.failures },
    notes: [
      `dispatching took ${int(run.dispatchMs)} ms (lead ${int(run.leadMs)} ms${run.dispatchMs > run.leadMs ? ': LONGER than the lead, the first jobs measure ingest too' : ''}); min ${fixed(s.min, 1)} ms`,
      cpuNote('dispatch to last delivery', run.cpu!),
      ...logNote(r, logsBefore, run.jobs),
      ...(run.load.failures > 0 ? [`FAIL: ${run.load.failures} dispatches failed, first: ${run.load.firstFailure}`] : []),
    ],
    others: run.cpu!.cpus.others ?? 0,
  };
}

async function backlogCell(r: Running, receiver: Receiver): Promise<Cell> {
  await latenessRun(receiver, r.system, { ...latenessCommon(r), phase: 'warm', jobs: latenessWarmupJobs, windowMs: 1_000 });
  const stopMeter = r.meter();
  const insertRate = await insertBacklog(r.system, {
    phase: 'backlog',
    jobs: backlogJobs,
    connections: backlogConnections,
    filler: backlogFiller,
    aheadMs: BACKLOG_AHEAD_MS,
    chunk: Math.max(100, Math.min(250_000, Math.round(backlogJobs / 4 / 100) * 100)),
    progress: (done, seconds) => {
      const rss = r.pids.map((pid) => memoryOf(pid).rssMb.toFixed(0)).join(' + ');
      console.log(`    ${LABELS[r.id]}: ${int(done)} backlog jobs in ${seconds.toFixed(1)} s (${int(done / seconds)} jobs/s), server RSS ${rss} MB`);
    },
  });
  const insertCpu = stopMeter();
  const insertedAt = Date.now();
  const run = await latenessRun(receiver, r.system, { ...latenessCommon(r), phase: 'late', jobs: latenessJobs, windowMs: latenessWindowMs });
  // SQLite's WAL is checkpointed in the background after a load: its size is read once that settled.
  if (r.id === 'punctual') await sleep(Math.max(0, insertedAt + settleMs - Date.now()));
  const footprint = await r.footprint();
  const waiting = await r.waiting();
  const delivered = (await receiver.count('backlog')).deliveries;
  const cell = latenessFigures(r, run);
  const insertFigures = cpuFigures(r, insertCpu, backlogJobs);
  cell.figures = {
    insertRate,
    p50: cell.figures.p50!,
    p99: cell.figures.p99!,
    max: cell.figures.max!,
    ...(footprint ? { size: footprint.mb } : {}),
    cpu: insertFigures.cpu,
    ...(insertFigures.storeCpu !== undefined ? { storeCpu: insertFigures.storeCpu } : {}),
    rss: serverPeakMb(r),
  };
  cell.others = Math.max(cell.others, insertCpu.cpus.others ?? 0);
  const intact = waiting === null || waiting === backlogJobs;
  cell.counts.backlogDelivered = delivered;
  cell.counts.backlogChecks = waiting === null ? 0 : 1;
  cell.counts.backlogFailed = intact ? 0 : 1;
  cell.notes.unshift(
    `backlog: ${int(insertRate)} jobs/s inserted; ${delivered} of it delivered; ` +
      (waiting === null ? 'held in memory (timers)' : `${int(waiting)} of ${int(backlogJobs)} still waiting: ${intact ? 'ok' : 'FAIL'}`) +
      (footprint ? `; ${footprint.text}` : ''),
    cpuNote('the backlog insert', insertCpu),
  );
  return cell;
}

const WORKLOADS: Record<WorkloadId, (r: Running, receiver: Receiver) => Promise<Cell>> = {
  ingest: ingestCell,
  e2e: e2eCell,
  lateness: latenessCell,
  backlog: backlogCell,
};

// ---------------------------------------------------------------------------------------------
// One cell, and the table of all

/** A fresh receiver and system for the cell, stopped (and their stores removed) afterwards. */
async function runCell(workload: WorkloadId, id: SystemId): Promise<Cell> {
  const receiver = await Receiver.start();
  const stopReceiver = onClose(() => receiver.stop());
  let running: Running | null = null;
  let stopSampler: (() => Promise<number>) | null = null;
  try {
    running = await startSystem(id, receiver);
    const redisAtStart = id === 'bullmq' ? await redis!.rssMb() : 0;
    stopSampler = id === 'bullmq' ? redis!.peakSampler() : null;
    const cell = await WORKLOADS[workload](running, receiver);
    if (stopSampler) {
      cell.figures.redisRss = await stopSampler();
      stopSampler = null;
      cell.notes.push(`redis-server RSS ${redisAtStart.toFixed(0)} MB at the start, peak ${cell.figures.redisRss.toFixed(0)} MB`);
    }
    return cell;
  } finally {
    await stopSampler?.();
    await running?.close();
    await stopReceiver();
  }
}

/** Waits for a quiet machine, runs the cell, and runs it again while others used too much CPU during it. */
async function measureCell(workload: WorkloadId, id: SystemId): Promise<Cell> {
  for (let attempt = 0; ; attempt += 1) {
    await waitForQuietMachine(maxOthers, quietWaitS);
    const cell = await runCell(workload, id);
    if (cell.others <= maxOthers) return cell;
    if (attempt >= retries) {
      cell.notes.push(`NOTE: other processes used ${cell.others.toFixed(2)} CPUs during this cell, above ${maxOthers}, after ${retries} retries`);
      return cell;
    }
    console.log(`  other processes used ${cell.others.toFixed(2)} CPUs during this cell (at most ${maxOthers}): running it again (${cellLine(workload, cell)})`);
  }
}

interface Row {
  key: string;
  label: string;
  digits: number;
  /** Ratios to the bare pipe and BullMQ make sense (not for a part of a figure, nor Redis alone). */
  ratios: boolean;
}

const CPU_ROWS = (per: string): Row[] => [
  { key: 'cpu', label: `CPU µs per ${per}, server + store`, digits: 0, ratios: true },
  { key: 'storeCpu', label: '… of which Redis or PostgreSQL', digits: 0, ratios: false },
  { key: 'rss', label: 'peak RSS MB, server process(es)', digits: 0, ratios: true },
  { key: 'redisRss', label: 'peak RSS MB, redis-server', digits: 0, ratios: false },
];

const ROWS: Record<WorkloadId, Row[]> = {
  ingest: [
    { key: 'rate', label: 'req/s (201s)', digits: 0, ratios: true },
    { key: 'p50', label: 'latency p50 ms', digits: 1, ratios: true },
    { key: 'p99', label: 'latency p99 ms', digits: 1, ratios: true },
    ...CPU_ROWS('request'),
  ],
  e2e: [
    { key: 'rate', label: 'delivered/s', digits: 0, ratios: true },
    { key: 'lagP50', label: 'lag 201 → webhook p50 ms', digits: 1, ratios: true },
    { key: 'lagP99', label: 'lag 201 → webhook p99 ms', digits: 1, ratios: true },
    ...CPU_ROWS('job'),
  ],
  lateness: [
    { key: 'p50', label: 'lateness p50 ms', digits: 1, ratios: true },
    { key: 'p99', label: 'lateness p99 ms', digits: 1, ratios: true },
    { key: 'max', label: 'lateness max ms', digits: 1, ratios: true },
    ...CPU_ROWS('job'),
  ],
  backlog: [
    { key: 'insertRate', label: 'insert jobs/s (batches of 100)', digits: 0, ratios: true },
    { key: 'p99', label: 'lateness p99 ms, backlog waiting', digits: 1, ratios: true },
    { key: 'max', label: 'lateness max ms, backlog waiting', digits: 1, ratios: true },
    { key: 'size', label: 'store MB (disk; Redis: dataset in memory)', digits: 0, ratios: true },
    ...CPU_ROWS('job inserted'),
  ],
};

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const format = (value: number, digits: number) => (digits === 0 ? int(value) : fixed(value, digits));
const ratio = (a: number, b: number) => {
  if (!(a > 0 && b > 0)) return '–';
  const r = a / b;
  return `×${r >= 10 ? r.toFixed(0) : r.toFixed(2)}`;
};

type Results = Map<string, Cell[]>;
const keyOf = (workload: WorkloadId, id: SystemId) => `${workload}/${id}`;

function figureOf(results: Results, workload: WorkloadId, id: SystemId, key: string): number[] {
  return (results.get(keyOf(workload, id)) ?? []).map((c) => c.figures[key]).filter((v): v is number => v !== undefined);
}

function cellText(results: Results, workload: WorkloadId, id: SystemId, row: Row): string {
  const values = figureOf(results, workload, id, row.key).filter(Number.isFinite);
  if (values.length === 0) return '–';
  const m = median(values);
  let text = `${format(m, row.digits)}`;
  if (values.length > 1) text += ` (${format(Math.min(...values), row.digits)}–${format(Math.max(...values), row.digits)})`;
  if (row.ratios) {
    const against = (ref: SystemId, name: string) => {
      const base = median(figureOf(results, workload, ref, row.key));
      // None for the pipe itself (BullMQ's column has the inverse), nor to a system not run or without this figure.
      return id === 'bare' || id === ref || !Number.isFinite(base) ? null : `${ratio(m, base)} ${name}`;
    };
    const ratios = [against('bare', 'pipe'), against('bullmq', 'BullMQ')].filter((r): r is string => r !== null);
    if (ratios.length > 0) text += ` · ${ratios.join(' · ')}`;
  }
  return text;
}

function sumOf(cells: Cell[], key: string): number {
  return cells.reduce((sum, c) => sum + (c.counts[key] ?? 0), 0);
}

function checksText(results: Results, workload: WorkloadId, id: SystemId): string {
  const cells = results.get(keyOf(workload, id)) ?? [];
  if (cells.length === 0) return '–';
  const n = (key: string) => sumOf(cells, key);
  if (workload === 'ingest') {
    const durability = n('durabilityRuns') > 0 ? `; kill -9: ${n('durabilityRuns') - n('durabilityFailed')}/${n('durabilityRuns')} ok` : '; stores nothing';
    return `${n('refused')} refused${durability}`;
  }
  if (workload === 'e2e') return `${n('lost')} / ${n('dup')} / ${n('refused')}`;
  if (workload === 'lateness') return `${n('early')} / ${n('lost')} / ${n('dup')}`;
  const intact = n('backlogChecks') > 0 ? `; intact ${n('backlogChecks') - n('backlogFailed')}/${n('backlogChecks')}` : '; in memory';
  return `${n('early')} / ${n('lost')} / ${n('dup')}; ${n('backlogDelivered')} delivered early${intact}`;
}

const CHECK_LABELS: Record<WorkloadId, string> = {
  ingest: 'checks (all runs)',
  e2e: 'lost / duplicated / refused (all runs)',
  lateness: 'early / lost / duplicated (all runs)',
  backlog: 'early / lost / duplicated; backlog checks',
};

function markdownTable(results: Results): string[] {
  const header = `| workload | figure | ${systems.map((id) => LABELS[id]).join(' | ')} |`;
  const lines = [header, `|---|---|${systems.map(() => '---:|').join('')}`];
  for (const workload of workloads) {
    for (const row of ROWS[workload]) {
      const cells = systems.map((id) => cellText(results, workload, id, row));
      if (cells.every((c) => c === '–')) continue;
      lines.push(`| ${workload} | ${row.label} | ${cells.join(' | ')} |`);
    }
    lines.push(`| ${workload} | ${CHECK_LABELS[workload]} | ${systems.map((id) => checksText(results, workload, id)).join(' | ')} |`);
  }
  return lines;
}

/** The cell's figures on one line, in the table's order. */
function cellLine(workload: WorkloadId, cell: Cell): string {
  return ROWS[workload]
    .filter((row) => cell.figures[row.key] !== undefined)
    .map((row) => `${row.label} ${format(cell.figures[row.key]!, row.digits)}`)
    .join(', ');
}

function cellFailed(cell: Cell): boolean {
  const c = cell.counts;
  return (c.lost ?? 0) + (c.dup ?? 0) + (c.refused ?? 0) + (c.durabilityFailed ?? 0) + (c.backlogFailed ?? 0) + (c.backlogDelivered ?? 0) > 0;
}

// ---------------------------------------------------------------------------------------------
// Main

/** The commit measured, and whether src/ differs from it (dist/ is built from the work tree). */
function commitLine(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: new URL('..', import.meta.url), encoding: 'utf8' }).trim();
  try {
    const dirty = git('status', '--porcelain', '--', 'src').length > 0;
    return `commit ${git('rev-parse', '--short', 'HEAD')}${dirty ? ' with uncommitted changes in src/' : ', src/ as committed'}`;
  } catch {
    return 'commit unknown (not a git work tree)';
  }
}

function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

async function systemLines(): Promise<string[]> {
  const bullmqVersion = (JSON.parse(readFileSync(new URL('../node_modules/bullmq/package.json', import.meta.url), 'utf8')) as { version: string }).version;
  const lines: Record<SystemId, () => Promise<string>> = {
    bare: async () =>
      'bench/bare-pipe.ts with BARE_ANSWER=at-once: Fastify + undici (keep-alive Agent), the same body schema and validation as Punctual, ' +
      'stores nothing; 201 at once, then an in-memory timer until the due time (or at once) and a POST of {jobId, payload}; ' +
      'run as plain JavaScript (transpiled at start), as Punctual runs from dist/',
    bullmq: async () =>
      `bench/bullmq-front.ts: BullMQ ${bullmqVersion} behind a Fastify front (same body schema and validation), queue.add / addBulk with ` +
      'delay, attempts 4, exponential backoff from 30 s, removeOnComplete 1000 / removeOnFail 5000; a Worker in the same process, ' +
      'concurrency 64, POSTs {jobId, payload} with undici and throws on a non-2xx; plain JavaScript as the bare pipe. ' +
      `Redis ${redis!.version} at ${withoutPassword(redisUrl)}` +
      `${redis!.pid !== null ? ` (local, pid ${redis!.pid})` : ' (not local: RSS from INFO, no CPU figure)'}, hz ${redis!.hz}, ${await redis!.persistence()}`,
    punctual: async () =>
      'node dist/cli/punctual.js serve, NODE_ENV=production, every default (SQLite synchronous=FULL, log level info: one JSON line per ' +
      'request, read from its stdout pipe and counted; project deliveryConcurrency 100), PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true, a fresh ' +
      'SQLite file; webhookUrl set through PATCH /manage/v1/projects/:id',
    pg1: async () => `the same on a fresh schema of ${withoutPassword(postgresUrl)} (with PUNCTUAL_SECRET_KEY, which PostgreSQL requires), 1 instance`,
    pg2: async () => 'the same, 2 instances on one schema, the load spread over them round robin',
  };
  const out: string[] = [];
  for (const id of systems) out.push(`  ${LABELS[id]}: ${await lines[id]()}`);
  return out;
}

async function main(): Promise<number> {
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    console.error('interrupted: stopping the servers and removing what they stored');
    void (async () => {
      for (const undo of [...cleanups].reverse()) await undo().catch(() => {});
      await redis?.close();
      process.exit(130);
    })();
  });
  if (systems.includes('bullmq')) redis = await RedisWatch.connect(redisUrl);
  try {
    console.log(`bench:compare: systems ${systems.join(', ')}; workloads ${workloads.join(', ')}; ${runs} run${runs > 1 ? 's' : ''} each`);
    console.log(`${machineLine()}; ${commitLine()}`);
    for (const line of await systemLines()) console.log(line);
    console.log('  The receiver (bench/receiver.ts) runs in its own process, the load generator in this one; every server is started afresh for each workload and run.');
    console.log(
      `workloads: ingest ${connections} connections, ${ingestWarmupSeconds} s warm-up + ${ingestSeconds} s, payload ${PAYLOAD_BYTES} B due in 1 h; ` +
        `e2e ${int(e2eJobs)} jobs due at once (after ${int(e2eWarmupJobs)}), ${connections} clients; ` +
        `lateness ${int(latenessJobs)} jobs over ${latenessWindowMs} ms, first due ${leadMs} ms after dispatching starts (after ${latenessWarmupJobs}); ` +
        `backlog ${int(backlogJobs)} jobs due in 30 days, ${backlogConnections} clients, payload ${backlogPayloadBytes} B, then the lateness workload`,
    );
    console.log('');

    const results: Results = new Map();
    let failed = false;
    for (const workload of workloads) {
      for (let run = 1; run <= runs; run += 1) {
        for (const id of systems) {
          if (interrupted) return 130;
          progress(`${workload} run ${run}/${runs}: ${LABELS[id]} …`);
          let cell: Cell;
          try {
            cell = await measureCell(workload, id);
          } catch (error) {
            failed = true;
            console.log(`  FAIL: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
            continue;
          }
          if (!results.has(keyOf(workload, id))) results.set(keyOf(workload, id), []);
          results.get(keyOf(workload, id))!.push(cell);
          console.log(`  ${cellLine(workload, cell)}`);
          for (const note of cell.notes) console.log(`    ${note}`);
          if (cellFailed(cell)) {
            failed = true;
            console.log(`  FAIL: ${JSON.stringify(cell.counts)}`);
          }
        }
      }
    }

    console.log('');
    console.log(`## bench:compare, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${commitLine()}, ${runs} run${runs > 1 ? 's' : ''} (${elapsed()})`);
    console.log('');
    console.log(
      `Each cell: the median of ${runs} run${runs > 1 ? 's' : ''}${runs > 1 ? ' (min–max)' : ''}, then the median's ratio to the bare pipe's and to BullMQ's ` +
        '(×2.00 pipe: twice the pipe\'s figure; for times, sizes and CPU, more is worse). CPU per job: the server processes plus their store (redis-server; PostgreSQL\'s ' +
        'backends and its own processes), from /proc. Peak RSS: VmHWM of the server processes (the sum of both for ×2); redis-server\'s sampled every 250 ms.',
    );
    console.log('');
    for (const line of markdownTable(results)) console.log(line);
    console.log('');
    const allCells = [...results.values()].flat();
    console.log(
      `Other processes on the machine used at most ${Math.max(0, ...allCells.map((c) => c.others)).toFixed(2)} CPUs during a measured phase ` +
        `(cells above ${maxOthers} were run again, up to ${retries} times).`,
    );
    if (systems.includes('bullmq')) console.log(`Redis: ${await redis!.persistence()}.`);
    console.log(failed ? 'Some check FAILED: see FAIL above.' : 'Every check passed: nothing lost, duplicated, refused, delivered early or missing after a kill.');
    return failed ? 1 : 0;
  } finally {
    for (const undo of [...cleanups].reverse()) await undo().catch(() => {});
    await redis?.close();
  }
}

process.exitCode = await main();
