/**
 * The webhook receiver of the delivery benchmarks (`bench:e2e`, `bench:lateness`, `bench:backlog`),
 * forked by bench/delivery-harness.ts so that it has an event loop of its own: neither the load
 * generator nor the servers under test delay its clock readings.
 *
 * A node:http server on 127.0.0.1 that answers every POST with 200 as soon as its body is in. Each
 * body is the webhook body of SPEC section 4 (Punctual) or the bare pipe's `{"jobId", "payload"}`;
 * the benchmark's payload carries `k` ("<phase>:<index>", unique per job of a run) and `ref` (ms
 * since the epoch: the moment the dispatch request was sent, or the job's scheduledFor). For each
 * delivery it records arrival − ref, where arrival is the moment the request's headers were
 * parsed, on the wall clock with sub-millisecond resolution: performance.now() plus an anchor
 * measured at start, kept within [Date.now(), Date.now() + 1) read at the same arrival (so the
 * figure never disagrees with the millisecond clock the servers use; an arrival that needed the
 * anchor moved counts in `clockAdjusted`, and the total move is reported).
 *
 * The parent talks to it over the IPC channel: {id, type: 'count' | 'stats' | 'dump' | 'arrivals', phase},
 * answered with {id, ...}; 'dump' writes every delivery of the phase, `jobId key arrival` per line, to
 * `path`; 'arrivals' answers {arrivals: {key: arrival}} with each key's first arrival (bench/compare.ts
 * subtracts the moment its 201 reached the client). Deliveries are grouped by phase (the part of `k`
 * before the colon).
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { percentile } from './percentile.js';
import { wallClock } from './wall-clock.js';

interface Phase {
  deliveries: number;
  keys: Set<string>;
  jobIds: Set<string>;
  duplicateKeys: number;
  duplicateJobIds: number;
  /** arrival − ref of each job's first delivery, ms. */
  values: number[];
  firstArrival: number;
  lastArrival: number;
  /** Every delivery as `jobId key arrival`, for BENCH_DUMP_DIR. */
  log: string[];
}

export interface PhaseStats {
  deliveries: number;
  unique: number;
  duplicateKeys: number;
  duplicateJobIds: number;
  firstArrival: number;
  lastArrival: number;
  p50: number;
  p99: number;
  max: number;
  min: number;
  mean: number;
  /** First deliveries that arrived before their ref (for lateness: before scheduledFor). */
  early: number;
  /** How far the wall-clock anchor moved since start, ms (NTP slewing or a clock step shows here). */
  clockDrift: number;
  /** Arrivals (all phases) at which the anchor had to move to agree with Date.now(). */
  clockAdjusted: number;
}

const clock = wallClock();
const phases = new Map<string, Phase>();
let malformed = 0;

function phaseOf(name: string): Phase {
  let phase = phases.get(name);
  if (!phase) {
    phase = {
      deliveries: 0,
      keys: new Set(),
      jobIds: new Set(),
      duplicateKeys: 0,
      duplicateJobIds: 0,
      values: [],
      firstArrival: Number.POSITIVE_INFINITY,
      lastArrival: 0,
      log: [],
    };
    phases.set(name, phase);
  }
  return phase;
}

function record(arrival: number, text: string): void {
  let body: { jobId?: unknown; scheduledFor?: unknown; payload?: { k?: unknown; ref?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    malformed += 1;
    return;
  }
  let key = body.payload?.k;
  let ref = body.payload?.ref;
  // A schedule's job (bench:schedules): one payload for every fire; each fire is its own key, and
  // its instant (scheduledFor in the body) the reference.
  if (typeof body.scheduledFor === 'string' && typeof key === 'string') {
    key = `${key}@${body.scheduledFor}`;
    ref = Date.parse(body.scheduledFor);
  }
  if (typeof key !== 'string' || typeof ref !== 'number' || typeof body.jobId !== 'string') {
    malformed += 1;
    return;
  }
  const phase = phaseOf(key.slice(0, key.indexOf(':')));
  phase.deliveries += 1;
  phase.log.push(`${body.jobId} ${key} ${arrival.toFixed(3)}`);
  phase.firstArrival = Math.min(phase.firstArrival, arrival);
  phase.lastArrival = Math.max(phase.lastArrival, arrival);
  if (phase.jobIds.has(body.jobId)) phase.duplicateJobIds += 1;
  else phase.jobIds.add(body.jobId);
  if (phase.keys.has(key)) {
    phase.duplicateKeys += 1;
    return;
  }
  phase.keys.add(key);
  phase.values.push(arrival - ref);
}

function stats(name: string): PhaseStats {
  const phase = phaseOf(name);
  const sorted = Float64Array.from(phase.values).sort();
  const values = Array.from(sorted);
  return {
    deliveries: phase.deliveries,
    unique: phase.keys.size,
    duplicateKeys: phase.duplicateKeys,
    duplicateJobIds: phase.duplicateJobIds,
    firstArrival: phase.firstArrival,
    lastArrival: phase.lastArrival,
    p50: percentile(values, 0.5),
    p99: percentile(values, 0.99),
    max: values.length > 0 ? values[values.length - 1]! : Number.NaN,
    min: values.length > 0 ? values[0]! : Number.NaN,
    mean: values.reduce((sum, v) => sum + v, 0) / values.length,
    early: values.filter((v) => v < 0).length,
    clockDrift: clock.drift(),
    clockAdjusted: clock.adjusted(),
  };
}

const server = createServer((request, response) => {
  const arrival = clock.now();
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    response.end('ok');
    record(arrival, Buffer.concat(chunks).toString('utf8'));
  });
});
server.keepAliveTimeout = 60_000;

type Message = { id: number; type: 'count' | 'stats' | 'dump' | 'arrivals'; phase: string; path?: string };

process.on('message', (message: Message) => {
  if (message.type === 'count') {
    const phase = phaseOf(message.phase);
    process.send!({ id: message.id, unique: phase.keys.size, deliveries: phase.deliveries, malformed });
  } else if (message.type === 'arrivals') {
    // From the log rather than a map kept per delivery: only compare.ts asks, once per phase.
    const arrivals: Record<string, number> = {};
    for (const line of phaseOf(message.phase).log) {
      const [, key, arrival] = line.split(' ');
      if (!(key! in arrivals)) arrivals[key!] = Number(arrival);
    }
    process.send!({ id: message.id, arrivals });
  } else if (message.type === 'dump') {
    writeFileSync(message.path!, phaseOf(message.phase).log.join('\n') + '\n');
    process.send!({ id: message.id });
  } else {
    process.send!({ id: message.id, ...stats(message.phase), malformed });
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  process.send!({ id: 0, port: address.port });
});
