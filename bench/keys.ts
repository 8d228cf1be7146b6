/**
 * `npm run bench:keys`: what concurrency keys (SPEC section 15) cost.
 *
 * 1. End to end, in one process (the app, its delivery engine and a receiver on loopback, system
 *    clock): BENCH_JOBS (default 5,000) jobs due at once, dispatched in batches of 100, delivered
 *    to a receiver that answers 200 at once. Once without keys, once spread over BENCH_KEYS (1,000)
 *    keys at keyConcurrency 1 (each key's jobs in order, one at a time). Figures: jobs/s delivered
 *    (jobs / (last arrival − first dispatch)) and their ratio, keyed over plain.
 * 2. The claim alone, on the store: one key holding BENCH_KEY_BACKLOG (default 10,000; the issue's
 *    figure is 100,000) waiting jobs, all due, and another project's single due job; 20 claims of
 *    100, timed one by one (median and max), beside the same with no backlog.
 *
 * On a fresh SQLite file; with DATABASE_URL=postgres://…, a fresh schema of that database.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { claimRule } from '../src/delivery/capacity-rules.js';
import { createDeliveryEngine, openRuntime } from '../src/runtime.js';
import { buildServer } from '../src/server.js';
import { openStore } from '../src/store/open-store.js';
import { machineLine, positiveNumber } from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';
import { insertProject, withFreshDatabase } from './store-fixtures.js';

const JOBS = Math.round(positiveNumber('BENCH_JOBS', 5_000) / 100) * 100;
const KEYS = Math.round(positiveNumber('BENCH_KEYS', 1_000));
const BACKLOG = Math.round(positiveNumber('BENCH_KEY_BACKLOG', 10_000) / 1_000) * 1_000;
const CLAIMS = 20;
const SECRET = 'bench-keys-secret-key-0123456789abcdef';

/** Jobs/s delivered end to end, with or without keys. */
async function endToEnd(keyed: boolean): Promise<{ perSecond: number; seconds: number }> {
  return withFreshDatabase('keys', async (url) => {
    let arrived = 0;
    let lastArrival = 0;
    let done: () => void = () => {};
    const all = new Promise<void>((resolve) => (done = resolve));
    const receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.end('ok');
        arrived += 1;
        lastArrival = performance.now();
        if (arrived === JOBS) done();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const config = loadConfig({ DATABASE_URL: url, PUNCTUAL_SECRET_KEY: SECRET, PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true', LOG_LEVEL: 'silent', PUNCTUAL_ADMIN_TOKEN: 'bench-admin-token-0123456789' });
    const clock = systemClock;
    const runtime = await openRuntime(config, clock, { generateAdminToken: false, onBackgroundError: (error) => console.error(error) });
    const app = await buildServer({ config, store: runtime.store, clock, services: runtime.services, metrics: runtime.metrics, tracer: runtime.tracer, logger: false });
    const engine = createDeliveryEngine(runtime, app.log);
    await engine.start();
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const { manage } = runtime.services;
      const team = await manage.createTeam({ name: 'bench', plan: 'unlimited' });
      const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const project = await manage.createProject(team.teamId, { name: 'bench', webhookUrl, deliveryConcurrency: 1_000, keyConcurrency: 1 });
      const { key } = await manage.createKey(project.projectId, { name: 'bench' });
      const started = performance.now();
      for (let from = 0; from < JOBS; from += 100) {
        const jobs = Array.from({ length: 100 }, (_, i) => ({ payload: { n: from + i }, ...(keyed && { concurrencyKey: `key-${(from + i) % KEYS}` }) }));
        const res = await fetch(`${base}/api/jobs/dispatch/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ jobs }),
        });
        if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${await res.text()}`);
      }
      await all;
      const seconds = (lastArrival - started) / 1000;
      return { perSecond: JOBS / seconds, seconds };
    } finally {
      await engine.stop(5_000);
      await app.close();
      await runtime.close();
      receiver.close();
    }
  });
}

const answer = { kind: 'single' as const, statusCode: 201, body: '{}' };

/** Claims of another project's due job beside one key's backlog of `backlog` due jobs: median and max ms. */
async function claimTimes(backlog: number): Promise<{ median: number; max: number; loadS: number }> {
  return withFreshDatabase('keys', async (url) => {
    const store = await openStore(loadConfig({ DATABASE_URL: url, PUNCTUAL_SECRET_KEY: SECRET }).database, {});
    try {
      await store.migrate();
      const past = Date.now() - 3_600_000;
      const big = await insertProject(store, 'prj_big', past);
      const other = await insertProject(store, 'prj_other', past);
      const loadStarted = performance.now();
      // In batches of 100, as the API's batches come (a keyed insert takes its key's turn row by row).
      for (let i = 0; i < backlog; i += 100) {
        const jobs = Array.from({ length: 100 }, (_, j) => ({ id: `job_b${i + j}`, payload: '{}', scheduledFor: null, runAt: past + i + j, maxRetries: 0, concurrencyKey: 'big' }));
        await store.jobCreate({ projectId: big.id, teamId: big.teamId, now: past, jobs, quota: null, idempotency: null, answer });
      }
      const loadS = (performance.now() - loadStarted) / 1000;
      // The key's first job is claimed and held (STARTED elsewhere): every other job of the key waits.
      if (backlog > 0) await store.jobClaimDue({ now: Date.now(), dueBy: Date.now(), limit: 1, workerId: 'wrk_holder', leaseExtraMs: 3_600_000, excludeProjectIds: [other.id], heldByProject: {}, claimRule: claimRule(256) });
      const times: number[] = [];
      for (let i = 0; i < CLAIMS; i += 1) {
        await store.jobCreate({ projectId: other.id, teamId: other.teamId, now: past, jobs: [{ id: `job_o${i}`, payload: '{}', scheduledFor: null, runAt: past, maxRetries: 0 }], quota: null, idempotency: null, answer });
        const now = Date.now();
        const started = performance.now();
        const claimed = await store.jobClaimDue({ now, dueBy: now, limit: 100, workerId: 'wrk_bench', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        times.push(performance.now() - started);
        if (claimed.length !== 1 || claimed[0]!.id !== `job_o${i}`) throw new Error(`claim ${i} took ${claimed.map((job) => job.id).join(', ')}`);
      }
      times.sort((a, b) => a - b);
      return { median: times[Math.floor(CLAIMS / 2)]!, max: times[CLAIMS - 1]!, loadS };
    } finally {
      await store.close();
    }
  });
}

const store = postgresUrlFromEnv() ? 'postgres' : 'sqlite';
console.log(machineLine());
console.log(`store: ${store}; BENCH_JOBS=${JOBS} BENCH_KEYS=${KEYS} BENCH_KEY_BACKLOG=${BACKLOG}`);
// Plain, keyed, plain again: the first run warms the process up, and the two plain runs frame the keyed one.
const plainFirst = await endToEnd(false);
const keyed = await endToEnd(true);
const plainAfter = await endToEnd(false);
console.log(`e2e without keys: ${plainFirst.perSecond.toFixed(0)} then ${plainAfter.perSecond.toFixed(0)} jobs/s`);
console.log(`e2e over ${KEYS} keys at keyConcurrency 1: ${keyed.perSecond.toFixed(0)} jobs/s (${keyed.seconds.toFixed(2)} s)`);
console.log(`ratio keyed/plain (the later plain run): ${(keyed.perSecond / plainAfter.perSecond).toFixed(2)}`);
const none = await claimTimes(0);
console.log(`claim of another project's due job, no backlog: median ${none.median.toFixed(2)} ms, max ${none.max.toFixed(2)} ms`);
const held = await claimTimes(BACKLOG);
console.log(`claim of another project's due job beside one key's ${BACKLOG} waiting jobs: median ${held.median.toFixed(2)} ms, max ${held.max.toFixed(2)} ms (backlog loaded in ${held.loadS.toFixed(1)} s)`);
