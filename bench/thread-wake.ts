/**
 * What handing work to another thread costs the thread that hands it, on this machine: a message
 * to a worker thread that sleeps (it must be woken, as Punctual's writer and webhook threads are
 * between batches) beside the same message to one that is awake and polling (no wake-up), and a
 * write handed to libuv's thread pool (as the log's writes are; the writer's fdatasync was, until
 * it ran on the writer thread itself: BENCHMARKS.md stop 42).
 * The caller's time per call, p50 and p90 of BENCH_WAKES calls (default 400), each after a pause
 * that lets the other thread fall asleep. `npm run bench:wake`.
 */
import { openSync, write } from 'node:fs';
import { MessageChannel, Worker } from 'node:worker_threads';

const calls = Number(process.env.BENCH_WAKES ?? 400);
const pause = () => new Promise((resolve) => setTimeout(resolve, 2));

function percentiles(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(1);
  return `p50 ${at(0.5)} µs, p90 ${at(0.9)} µs`;
}

async function timed(call: () => void): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    await pause();
    const start = process.hrtime.bigint();
    call();
    times.push(Number(process.hrtime.bigint() - start) / 1_000);
  }
  return times;
}

// A sleeping worker: it waits in its event loop for the next message.
const sleeper = new Worker('require("node:worker_threads").parentPort.on("message", () => {});', { eval: true });
// An awake worker: it polls its port in a loop, so a message finds it running.
const { port1: toPoller, port2: pollerPort } = new MessageChannel();
const poller = new Worker(
  `const { workerData, receiveMessageOnPort } = require("node:worker_threads");
   const stopAt = Date.now() + 60_000;
   while (Date.now() < stopAt) { const m = receiveMessageOnPort(workerData.port); if (m && m.message === 'stop') break; }`,
  { eval: true, workerData: { port: pollerPort }, transferList: [pollerPort] },
);
await pause();
const message = { first: 0, requests: [{ name: 'jobCreate', params: { projectId: 'prj_0123456789abcdef', now: Date.now() } }] };
const toSleeper = await timed(() => sleeper.postMessage(message));
const toAwake = await timed(() => toPoller.postMessage(message));
const devNull = openSync('/dev/null', 'w');
const block = 'x'.repeat(4_096);
const toPool = await timed(() => write(devNull, block, () => {}));
toPoller.postMessage('stop');
await Promise.all([sleeper.terminate(), poller.terminate()]);

console.log(`## bench:wake, ${new Date().toISOString()}, ${calls} calls each`);
console.log(`postMessage to a sleeping worker thread (woken): ${percentiles(toSleeper)}`);
console.log(`postMessage to an awake worker thread (baseline, no wake-up): ${percentiles(toAwake)}`);
console.log(`fs.write of 4 KB handed to libuv's thread pool: ${percentiles(toPool)}`);
