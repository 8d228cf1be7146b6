/**
 * The PostgreSQL mode of the benchmarks (`DATABASE_URL=postgres://… npm run bench:ingest`, and the
 * same for bench:e2e and bench:lateness), shared by bench/ingest.ts and bench/delivery-harness.ts.
 *
 *   - a fresh schema per run (`bench_<time>_<random>`), dropped at the end; the servers get
 *     DATABASE_URL with `options=-c search_path=<schema>`, and a PUNCTUAL_SECRET_KEY (required with
 *     PostgreSQL) unless one is set;
 *   - the CPU of the database server's processes, read from /proc every 200 ms: `pg` is the
 *     backends of the connections the Punctual processes hold (matched by the client port in the
 *     backend's process title against the ports of those processes' TCP sockets), `pg-aux` the
 *     server's own processes (WAL writer, checkpointer, background writer, …), `pg-mon` the backend
 *     of this script's monitoring connection. Other sessions' backends stay in `others`;
 *   - per phase, from a monitoring connection: statements Punctual sent (counted in its processes
 *     by bench/pg-query-count.mjs, loaded with node --import), commits of the whole database
 *     (pg_stat_database.xact_commit, every session's), WAL bytes written by the whole server, and a
 *     sample every 100 ms of what Punctual's backends were doing (pg_stat_activity).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { procStat } from './proc-stat.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The node flag that loads the statement counter into a Punctual process. */
export const QUERY_COUNTER_IMPORT = ['--import', pathToFileURL(resolve(here, 'pg-query-count.mjs')).href];

/** DATABASE_URL when it names PostgreSQL; null means the embedded store (the default). */
export function postgresUrlFromEnv(): string | null {
  const url = process.env.DATABASE_URL?.trim();
  return url && /^postgres(ql)?:\/\//.test(url) ? url : null;
}

/** BENCH_INSTANCES: how many Punctual processes share the database (PostgreSQL only; default 1). */
export function instancesFromEnv(postgres: boolean): number {
  const raw = process.env.BENCH_INSTANCES ?? '1';
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_INSTANCES must be an integer >= 1, got "${raw}"`);
  if (n > 1 && !postgres) throw new Error('BENCH_INSTANCES > 1 needs DATABASE_URL=postgres://… (the embedded store is one process per file)');
  return n;
}

export interface BenchSchema {
  name: string;
  /** DATABASE_URL for the servers: the base URL with search_path set to the schema. */
  url: string;
  /** A client on the schema (for checks after the run). */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** Environment for every Punctual process of the run. */
  env: Record<string, string>;
  /** Drops the schema and closes the connections. */
  drop(): Promise<void>;
  /** Closes the connections and keeps the schema (BENCH_DUMP_DIR). */
  keep(): Promise<void>;
}

export async function createSchema(baseUrl: string): Promise<BenchSchema> {
  const name = `bench_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: baseUrl, application_name: 'punctual-bench' });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  // Options already in the URL (e.g. `-c synchronous_commit=off`) are kept, with the search_path added.
  const parsed = new URL(baseUrl);
  parsed.searchParams.set('options', `${parsed.searchParams.get('options') ?? ''} -c search_path=${name}`.trim());
  const url = parsed.toString().replace(/\+/g, '%20');
  let client: pg.Client | null = null;
  return {
    name,
    url,
    env: {
      DATABASE_URL: url,
      PUNCTUAL_SECRET_KEY: process.env.PUNCTUAL_SECRET_KEY ?? randomBytes(32).toString('base64'),
    },
    async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []) {
      if (!client) {
        client = new pg.Client({ connectionString: url, application_name: 'punctual-bench' });
        await client.connect();
      }
      return (await client.query<R>(text, values)).rows;
    },
    async drop() {
      if (client) await (client as pg.Client).end().catch(() => {});
      await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await admin.end();
    },
    async keep() {
      if (client) await (client as pg.Client).end().catch(() => {});
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The database server's processes

const ticksOf = (pid: number): number | null => procStat(pid)?.ticks ?? null;

/** Socket inodes of the processes' open files. */
function socketInodes(pids: number[]): Set<string> {
  const inodes = new Set<string>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1));
      } catch {
        // closed meanwhile
      }
    }
  }
  return inodes;
}

/**
 * For each group of pids, the local ports of its TCP sockets connected to `remotePort`. Reading
 * /proc/net/tcp takes about 5 ms here (the kernel walks every socket), so this runs only when a
 * backend appears whose client is not known yet.
 */
function clientPorts(groups: number[][], remotePort: number, tables: string[]): Set<number>[] {
  const inodes = groups.map(socketInodes);
  const ports = groups.map(() => new Set<number>());
  for (const table of tables) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || parseInt(f[2]!.split(':')[1]!, 16) !== remotePort) continue;
      const group = inodes.findIndex((set) => set.has(f[9]!));
      if (group >= 0) ports[group]!.add(parseInt(f[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

type PgClass = 'pg' | 'pg-aux' | 'pg-mon' | 'other';

/**
 * Samples the postgres processes every 200 ms, so that the CPU of a backend that exits during a
 * phase still counts up to its last sample. `owners()` gives the pids of the Punctual processes,
 * `monitors()` those whose connections are the benchmark's own. A process is classified once, from
 * its title: a backend's title holds its client's address and port (`127.0.0.1(54321)`), the
 * server's own processes have a title without one; a process that still has the postmaster's
 * command line (a backend being forked, or the postmaster) is looked at again next time. In the
 * steady state a sample reads only the `stat` of each postgres process (well under a millisecond).
 */
export class PostgresCpu {
  private readonly known = new Map<number, { cls: PgClass; ticks: number; final: boolean; port: number | null }>();
  private readonly notPostgres = new Set<number>();
  private readonly timer: NodeJS.Timeout;
  private readonly tables: string[];

  constructor(
    private readonly owners: () => number[],
    private readonly monitors: () => number[],
    private readonly port: number,
    host: string,
  ) {
    this.tables = /^\d+\.\d+\.\d+\.\d+$/.test(host) ? ['/proc/net/tcp'] : ['/proc/net/tcp', '/proc/net/tcp6'];
    this.sample();
    this.timer = setInterval(() => this.sample(), 200);
    this.timer.unref();
  }

  private sample(): void {
    let ports: Set<number>[] | null = null;
    for (const entry of readdirSync('/proc')) {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || this.notPostgres.has(pid)) continue;
      const previous = this.known.get(pid);
      if (previous?.final) {
        const ticks = ticksOf(pid);
        if (ticks !== null) previous.ticks = ticks;
        continue;
      }
      let title: string;
      try {
        if (!previous && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') {
          this.notPostgres.add(pid);
          continue;
        }
        title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue;
      }
      const ticks = ticksOf(pid);
      if (ticks === null) continue;
      const clientPort = /\((\d+)\)/.exec(title)?.[1];
      if (clientPort === undefined) {
        // "postgres: 15/main: walwriter" and the like; the postmaster's own command line starts with "/".
        this.known.set(pid, { cls: 'pg-aux', ticks, final: title.startsWith('postgres: '), port: null });
        continue;
      }
      ports ??= clientPorts([this.owners(), this.monitors()], this.port, this.tables);
      const port = Number(clientPort);
      const cls: PgClass = ports[0]!.has(port) ? 'pg' : ports[1]!.has(port) ? 'pg-mon' : 'other';
      this.known.set(pid, { cls, ticks, final: true, port });
    }
  }

  /** Client ports of Punctual's backends (for pg_stat_activity). */
  ourPorts(): Set<number> {
    return new Set([...this.known.values()].filter((k) => k.cls === 'pg' && k.port !== null).map((k) => k.port!));
  }

  /** Starts a phase; the returned function gives the ticks used since, by class (`other` left out). */
  start(): () => Record<string, number> {
    this.sample();
    const mark = new Map([...this.known].map(([pid, { ticks }]) => [pid, ticks]));
    return () => {
      this.sample();
      const used: Record<string, number> = { pg: 0, 'pg-aux': 0, 'pg-mon': 0 };
      for (const [pid, { cls, ticks }] of this.known) {
        if (cls === 'other') continue;
        used[cls]! += ticks - (mark.get(pid) ?? 0);
      }
      return used;
    };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Statements, commits, WAL and backend states per phase

export interface QueryCounts {
  total: number;
  byText: Record<string, number>;
}

/** Reads the counters bench/pg-query-count.mjs keeps in each Punctual process (SIGUSR2, one line back). */
export class QueryCounter {
  private readonly waiting = new Map<ChildProcess, ((counts: QueryCounts) => void)[]>();

  /** A Punctual process loaded with the counter (QUERY_COUNTER_IMPORT). */
  register(child: ChildProcess): void {
    this.waiting.set(child, []);
  }

  /** Feed every line of a registered child's stdout here: true when it was the counter's answer. */
  handle(child: ChildProcess, line: string): boolean {
    if (!line.startsWith('BENCH_PG_QUERIES ')) return false;
    this.waiting.get(child)?.shift()?.(JSON.parse(line.slice(17)) as QueryCounts);
    return true;
  }

  async snapshot(): Promise<QueryCounts> {
    const all = await Promise.all(
      [...this.waiting].map(
        ([child, queue]) =>
          new Promise<QueryCounts>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done({ total: 0, byText: {} });
            queue.push(done);
            child.kill('SIGUSR2');
          }),
      ),
    );
    const byText: Record<string, number> = {};
    for (const counts of all) for (const [text, n] of Object.entries(counts.byText)) byText[text] = (byText[text] ?? 0) + n;
    return { total: all.reduce((sum, c) => sum + c.total, 0), byText };
  }
}

export interface PgPhase {
  /** Statements sent by the Punctual processes (each a round trip), in total and by statement. */
  statements: number;
  byStatement: [string, number][];
  /** Commits of the whole database (every session, others' included). */
  commits: number;
  /** WAL written by the whole server, bytes. */
  walBytes: number;
  /** Samples of Punctual's backends: state and wait event, as shares of all samples. */
  states: [string, number][];
  samples: number;
}

/** Names of the store's statements, to print instead of their text. */
async function statementNames(): Promise<Map<string, string>> {
  // One module per noun (src/store/postgres/queries/).
  const dir = resolve(here, '../dist/store/postgres/queries');
  const modules = await Promise.all(
    readdirSync(dir)
      .filter((file) => file.endsWith('.js'))
      .map(async (file) => (await import(pathToFileURL(resolve(dir, file)).href)) as Record<string, unknown>),
  );
  const q = Object.assign({}, ...modules) as Record<string, unknown>;
  return new Map(Object.entries(q).filter((e): e is [string, string] => typeof e[1] === 'string').map(([name, text]) => [text, name]));
}

/** The monitoring connection and the statement counter of one run. */
export class PostgresMonitor {
  readonly counter = new QueryCounter();
  readonly cpu: PostgresCpu;
  private constructor(
    private readonly client: pg.Client,
    private readonly names: Map<string, string>,
    owners: () => number[],
    url: URL,
  ) {
    this.cpu = new PostgresCpu(owners, () => [process.pid], Number(url.port || 5432), url.hostname);
  }

  /** `owners()` gives the pids of the Punctual processes (read at every sample, so it may grow). */
  static async start(baseUrl: string, owners: () => number[]): Promise<PostgresMonitor> {
    const client = new pg.Client({ connectionString: baseUrl, application_name: 'punctual-bench-monitor' });
    await client.connect();
    return new PostgresMonitor(client, await statementNames(), owners, new URL(baseUrl));
  }

  private async counters(): Promise<{ commits: number; lsn: string }> {
    const row = (await this.client.query<{ commits: string; lsn: string }>(
      "SELECT xact_commit AS commits, pg_current_wal_lsn()::text AS lsn FROM pg_stat_database WHERE datname = current_database()",
    )).rows[0]!;
    return { commits: Number(row.commits), lsn: row.lsn };
  }

  /** Starts a phase; the returned function ends it. */
  async phase(): Promise<() => Promise<PgPhase>> {
    const [queries, counters] = await Promise.all([this.counter.snapshot(), this.counters()]);
    const states = new Map<string, number>();
    let samples = 0;
    let running = true;
    const sampling = (async () => {
      while (running) {
        const ports = this.cpu.ourPorts();
        const rows = (await this.client.query<{ port: number; state: string | null; type: string | null; event: string | null }>(
          "SELECT client_port AS port, state, wait_event_type AS type, wait_event AS event FROM pg_stat_activity WHERE backend_type = 'client backend'",
        )).rows;
        for (const row of rows) {
          if (!ports.has(row.port)) continue;
          const key = row.state === 'active' ? `active${row.type ? ` (${row.type}: ${row.event})` : ' (CPU)'}` : (row.state ?? 'unknown');
          states.set(key, (states.get(key) ?? 0) + 1);
        }
        samples += 1;
        await new Promise((done) => setTimeout(done, 100));
      }
    })();
    return async () => {
      running = false;
      await sampling;
      const [queriesAfter, countersAfter] = await Promise.all([this.counter.snapshot(), this.counters()]);
      const wal = (await this.client.query<{ bytes: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS bytes', [countersAfter.lsn, counters.lsn])).rows[0]!;
      const byStatement = new Map<string, number>();
      for (const [text, n] of Object.entries(queriesAfter.byText)) {
        const delta = n - (queries.byText[text] ?? 0);
        if (delta === 0) continue;
        const name = this.names.get(text) ?? text.replace(/\s+/g, ' ').slice(0, 40);
        byStatement.set(name, (byStatement.get(name) ?? 0) + delta);
      }
      const total = [...states.values()].reduce((a, b) => a + b, 0);
      return {
        statements: queriesAfter.total - queries.total,
        byStatement: [...byStatement].sort((a, b) => b[1] - a[1]),
        commits: countersAfter.commits - counters.commits,
        walBytes: Number(wal.bytes),
        states: [...states].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, n / Math.max(1, total)]),
        samples,
      };
    };
  }

  async stop(): Promise<void> {
    this.cpu.stop();
    await this.client.end().catch(() => {});
  }
}

/** Lines describing a phase's database work, per job. */
export function pgPhaseLines(label: string, phase: PgPhase, jobs: number, cpu: { seconds: number; cpus: Record<string, number> }): string[] {
  const perJob = (n: number) => (n / jobs).toFixed(2);
  const cpuUs = (name: string) => (((cpu.cpus[name] ?? 0) * cpu.seconds * 1e6) / jobs).toFixed(0);
  const top = phase.byStatement
    .slice(0, 8)
    .map(([name, n]) => `${name} ${perJob(n)}`)
    .join(', ');
  const states = phase.states
    .slice(0, 6)
    .map(([state, share]) => `${state} ${(share * 100).toFixed(0)}%`)
    .join(', ');
  return [
    `postgres ${label}: per job ${perJob(phase.statements)} statements from Punctual (${top}); ` +
      `${perJob(phase.commits)} commits in the whole database; ${(phase.walBytes / jobs / 1024).toFixed(1)} KB of WAL (whole server)`,
    `postgres ${label}: CPU µs per job: Punctual's processes ${cpuUs('punctual')}, their backends ${cpuUs('pg')}, ` +
      `the server's own processes ${cpuUs('pg-aux')}; ` +
      `Punctual's backends sampled ${phase.samples} times: ${states}`,
  ];
}
