/**
 * `npm run bench:soak`: Punctual at a steady rate for a long time, watched from outside. Not in CI.
 *
 * Starts `punctual serve` (dist/, as shipped) on an empty SQLite file (or DATABASE_URL=postgres://…
 * on a fresh schema's worth of tables: give it an empty database), points its project at a
 * receiver in this process, and dispatches SOAK_RATE jobs a second (200), each due one second
 * later, for a SOAK_WARMUP_SECONDS warm-up (450) and then SOAK_SECONDS (600) measured. Every
 * SOAK_REPORT_SECONDS (30) it prints one line: the server's
 * RSS and open file descriptors (from /proc), the store's database and WAL sizes (its /metrics),
 * and the interval's delivery lateness (arrival − scheduledFor) p50 / p99 / max with counts.
 * Retention runs as shipped but short: PUNCTUAL_RETENTION_DAYS=SOAK_RETENTION_DAYS (0.002, about
 * 173 s), so that by the end of the warm-up jobs are deleted as fast as they are created.
 *
 * Pass (exit 0): RSS at the end within 10% of its value after the warm-up, no file descriptor
 * growth (at most 5 more than after warm-up), the database and the WAL at the end within 10% (or
 * 4 MB) of their size after the warm-up, lateness p99 of the last interval no worse than the
 * first after warm-up (within 2× or 10 ms), and every job delivered.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const RATE = Number(process.env.SOAK_RATE ?? 200);
/** Measured, after the warm-up. */
const MEASURED_SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
/**
 * Long enough for SQLite's page cache (cache_size, 64 MB) to fill at 200 jobs/s: until it has,
 * RSS climbs by design (about 6 MB per 30 s in BENCHMARKS.md's runs, flat from about 420 s on).
 */
const WARMUP_SECONDS = Number(process.env.SOAK_WARMUP_SECONDS ?? 450);
const SECONDS = WARMUP_SECONDS + MEASURED_SECONDS;
const REPORT_SECONDS = Number(process.env.SOAK_REPORT_SECONDS ?? 30);
const LEAD_MS = 1_000;
const RETENTION_DAYS = process.env.SOAK_RETENTION_DAYS ?? '0.002';
const CLI = fileURLToPath(new URL('../dist/cli/punctual.js', import.meta.url));

/** Lateness of each arrival in the current interval, in ms. */
let interval: number[] = [];
const arrived = new Set<string>();
const dispatched = new Set<string>();

const receiver = createServer((req, res) => {
  const at = Date.now();
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    try {
      const parsed = JSON.parse(body) as { jobId: string; payload: { due: number } };
      if (!arrived.has(parsed.jobId)) interval.push(at - parsed.payload.due);
      arrived.add(parsed.jobId);
    } catch {
      // not a delivery
    }
    res.end('ok');
  });
});

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The store's size as its /metrics reports it (SQLite: the database and the WAL; PostgreSQL: no WAL), in MB. */
async function storeSizes(base: string): Promise<{ databaseMb: number; walMb: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const bytes = (file: string) => Number(new RegExp(`^punctual_store_size_bytes\\{file="${file}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { databaseMb: bytes('database') / 1024 / 1024, walMb: bytes('wal') / 1024 / 1024 };
}

function processFacts(pid: number): { rssMb: number; fds: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return { rssMb: rssKb / 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

async function main(): Promise<number> {
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dir = mkdtempSync(join(tmpdir(), 'punctual-soak-'));
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: process.env.DATABASE_URL ?? `sqlite:${join(dir, 'soak.db')}`,
      PUNCTUAL_SECRET_KEY: process.env.PUNCTUAL_SECRET_KEY ?? 'soak-secret-key-0123456789abcdef0123456',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PUNCTUAL_RETENTION_DAYS: RETENTION_DAYS,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  const base = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 30_000;
    while (!/Project\s+prj_/.test(output) || (await fetch(`${base}/readyz`).then((r) => r.status, () => 0)) !== 200) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`punctual serve did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const key = /API key\s+(pk_[A-Za-z0-9]+)/.exec(output)![1]!;
    const adminToken = /Admin token\s+(adm_[A-Za-z0-9]+)/.exec(output)![1]!;
    const projectId = /Project\s+(prj_[A-Za-z0-9]+)/.exec(output)![1]!;
    const patched = await fetch(`${base}/manage/v1/projects/${projectId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ webhookUrl: receiverUrl, deliveryConcurrency: 1000 }),
    });
    if (patched.status !== 200) throw new Error(`PATCH project: ${patched.status} ${await patched.text()}`);

    console.log(`soak: ${RATE} jobs/s for ${SECONDS} s (warm-up ${WARMUP_SECONDS} s, then ${MEASURED_SECONDS} s measured), each due ${LEAD_MS} ms after dispatch; report every ${REPORT_SECONDS} s`);
    console.log(`store: ${process.env.DATABASE_URL?.startsWith('postgres') ? 'PostgreSQL' : 'SQLite'}; server pid ${child.pid}; PUNCTUAL_RETENTION_DAYS=${RETENTION_DAYS}`);
    console.log('t(s)   rss(MB)  fds   db(MB)  wal(MB)   delivered   lateness p50 / p99 / max (ms)');

    const started = Date.now();
    let dispatchErrors = 0;
    // One batch of requests every 50 ms: a steady rate, not bursts of a second's worth.
    const perTick = RATE / 20;
    let owed = 0;
    const timer = setInterval(() => {
      owed += perTick;
      for (; owed >= 1; owed--) {
        const due = Date.now() + LEAD_MS;
        void fetch(`${base}/api/jobs/dispatch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ payload: { due, filler: 'x'.repeat(200) }, scheduledFor: new Date(due).toISOString() }),
        }).then(
          async (res) => {
            if (res.status === 201) dispatched.add(((await res.json()) as { jobId: string }).jobId);
            else dispatchErrors += 1;
          },
          () => (dispatchErrors += 1),
        );
      }
    }, 50);

    const reports: { t: number; rssMb: number; fds: number; databaseMb: number; walMb: number; p99: number }[] = [];
    for (let t = REPORT_SECONDS; t <= SECONDS; t += REPORT_SECONDS) {
      await new Promise((r) => setTimeout(r, started + t * 1000 - Date.now()));
      const sorted = interval.sort((a, b) => a - b);
      interval = [];
      const facts = processFacts(child.pid!);
      const sizes = await storeSizes(base);
      reports.push({ t, ...facts, ...sizes, p99: percentile(sorted, 99) });
      console.log(
        `${String(t).padStart(4)}   ${facts.rssMb.toFixed(1).padStart(7)}  ${String(facts.fds).padStart(4)}   ` +
          `${sizes.databaseMb.toFixed(1).padStart(6)}  ${sizes.walMb.toFixed(1).padStart(7)}   ${String(sorted.length).padStart(9)}   ` +
          `${percentile(sorted, 50)} / ${percentile(sorted, 99)} / ${sorted.at(-1) ?? Number.NaN}`,
      );
    }
    clearInterval(timer);
    const drainDeadline = Date.now() + 10_000;
    while ([...dispatched].some((id) => !arrived.has(id)) && Date.now() < drainDeadline) await new Promise((r) => setTimeout(r, 100));

    const afterWarmup = reports.find((r) => r.t >= WARMUP_SECONDS) ?? reports[0]!;
    const last = reports.at(-1)!;
    const rssGrowth = last.rssMb / afterWarmup.rssMb - 1;
    const missing = [...dispatched].filter((id) => !arrived.has(id)).length;
    const rssOk = rssGrowth <= 0.1;
    const fdsOk = last.fds <= afterWarmup.fds + 5;
    const p99Ok = last.p99 <= Math.max(afterWarmup.p99 * 2, afterWarmup.p99 + 10);
    const flat = (end: number, start: number) => end <= Math.max(start * 1.1, start + 4);
    const databaseOk = flat(last.databaseMb, afterWarmup.databaseMb);
    const walOk = flat(last.walMb, afterWarmup.walMb);
    console.log('');
    console.log(`RSS after warm-up ${afterWarmup.rssMb.toFixed(1)} MB, at the end ${last.rssMb.toFixed(1)} MB: ${(rssGrowth * 100).toFixed(1)}% (goal ≤ 10%) ${rssOk ? 'ok' : 'FAIL'}`);
    console.log(`open fds after warm-up ${afterWarmup.fds}, at the end ${last.fds} ${fdsOk ? 'ok' : 'FAIL'}`);
    console.log(`lateness p99 after warm-up ${afterWarmup.p99} ms, at the end ${last.p99} ms ${p99Ok ? 'ok' : 'FAIL'}`);
    console.log(
      `store after warm-up: database ${afterWarmup.databaseMb.toFixed(1)} MB, WAL ${afterWarmup.walMb.toFixed(1)} MB; at the end ` +
        `${last.databaseMb.toFixed(1)} MB, ${last.walMb.toFixed(1)} MB (goal: within 10% or 4 MB) ${databaseOk && walOk ? 'ok' : 'FAIL'}`,
    );
    console.log(`dispatched ${dispatched.size}, refused or failed ${dispatchErrors}, not delivered ${missing}`);
    return rssOk && fdsOk && p99Ok && databaseOk && walOk && missing === 0 ? 0 : 1;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
