/**
 * `npm run bench:rate`: how closely a project's deliveryRatePerSecond (SPEC section 11) holds,
 * beside what a user would run instead: BullMQ's own rate limit (the Worker's `limiter`, which
 * limits a whole queue; a limit per group is in BullMQ's paid edition) on the same receiver.
 *
 * For each rate in BENCH_RATES (10, 100, 1000 per second): BENCH_RATE_SECONDS (10) seconds' worth
 * of jobs, all due at once 3 s after dispatching starts (batch endpoint), to Punctual (embedded
 * store, as bench:lateness starts it, one instance, the project's rate set through the management
 * API) and to BullMQ (a fresh front per rate, its limiter set to the rate). The receiver answers at
 * once. Printed per system and rate: the achieved rate ((n - 1) / (last arrival - first)), its
 * error against the set rate, and the most arrivals in any one second.
 *
 * Goal (issue 16): Punctual's achieved rate within 5% of the set one at every rate. Exits non-zero
 * when not met.
 */
import { randomBytes } from 'node:crypto';
import {
  insertBacklog,
  machineLine,
  payloadFiller,
  positiveNumber,
  sleep,
  startAll,
  startBullmq,
  stopSystem,
  type Receiver,
  type System,
} from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';

const RATES = (process.env.BENCH_RATES ?? '10,100,1000').split(',').map(Number);
const SECONDS = positiveNumber('BENCH_RATE_SECONDS', 10);
const LEAD_MS = 3_000;
const GOAL = 0.05;
const redisUrl = process.env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379';

interface Measured {
  jobs: number;
  achieved: number;
  maxPerSecond: number;
}

async function measure(receiver: Receiver, system: System, phase: string, jobs: number): Promise<Measured> {
  await insertBacklog(system, { phase, jobs, connections: 8, filler: payloadFiller(64), aheadMs: LEAD_MS, chunk: jobs, progress: () => {} });
  const deadline = Date.now() + LEAD_MS + (jobs / Math.min(...RATES)) * 1_000 * 3 + 30_000;
  while ((await receiver.count(phase)).unique < jobs && Date.now() < deadline) await sleep(200);
  const times = Object.values(await receiver.arrivals(phase)).sort((a, b) => a - b);
  if (times.length < jobs) throw new Error(`${system.name} ${phase}: ${times.length} of ${jobs} arrived`);
  let maxPerSecond = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j < times.length && times[j]! < times[i]! + 1_000) j++;
    maxPerSecond = Math.max(maxPerSecond, j - i);
  }
  return { jobs, achieved: (jobs - 1) / ((times[jobs - 1]! - times[0]!) / 1_000), maxPerSecond };
}

async function bullmqAt(receiver: Receiver, rate: number): Promise<{ system: System; close: () => Promise<void> }> {
  const prefix = `punctual-rate-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
  const system = await startBullmq(receiver.url, { redisUrl, prefix, limitPerSecond: rate });
  return { system, close: () => stopSystem(system) };
}

async function main(): Promise<number> {
  if (postgresUrlFromEnv()) throw new Error('bench:rate runs Punctual on the embedded store: unset DATABASE_URL');
  const { receiver, punctual, close } = await startAll();
  try {
    console.log(`rates ${RATES.join(', ')} per second; ${SECONDS} s worth of jobs each, all due at once; the receiver answers at once`);
    console.log(`${machineLine()}; Punctual: SQLite synchronous=${punctual.synchronous}, one instance; BullMQ: Worker concurrency 64, limiter {max: rate, duration: 1000}`);
    console.log('');
    const headers = { authorization: `Bearer ${punctual.adminToken}`, 'content-type': 'application/json' };
    const rows: string[] = [];
    let met = true;
    for (const rate of RATES) {
      const jobs = Math.max(100, Math.round((rate * SECONDS) / 100) * 100);
      const patched = await fetch(`${punctual.origin}/manage/v1/projects/${punctual.projectId}`, {
        method: 'PATCH',
        headers,
        body: JSON.stringify({ deliveryRatePerSecond: rate, deliveryConcurrency: 1_000 }),
      });
      if (patched.status !== 200) throw new Error(`PATCH answered ${patched.status}`);
      const ours = await measure(receiver, punctual, `punctual-${rate}`, jobs);
      const bullmq = await bullmqAt(receiver, rate);
      let theirs: Measured;
      try {
        theirs = await measure(receiver, bullmq.system, `bullmq-${rate}`, jobs);
      } finally {
        await bullmq.close();
      }
      for (const [name, m] of [['punctual', ours], ['bullmq', theirs]] as const) {
        const error = m.achieved / rate - 1;
        rows.push(
          `${name.padEnd(9)}${String(rate).padStart(6)}${String(m.jobs).padStart(8)}${m.achieved.toFixed(1).padStart(11)}${`${(error * 100).toFixed(1)}%`.padStart(9)}${String(m.maxPerSecond).padStart(12)}`,
        );
        if (name === 'punctual' && Math.abs(error) > GOAL) met = false;
      }
    }
    console.log(`${'system'.padEnd(9)}${'rate'.padStart(6)}${'jobs'.padStart(8)}${'achieved/s'.padStart(11)}${'error'.padStart(9)}${'max in 1 s'.padStart(12)}`);
    for (const row of rows) console.log(row);
    console.log('');
    console.log(`goal (Punctual within ${GOAL * 100}% of the set rate at every rate): ${met ? 'met' : 'NOT met'}`);
    return met ? 0 : 1;
  } finally {
    await close();
  }
}

process.exitCode = await main();
