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
 * The parent talks to it over the IPC channel: {id, type: 'count' | 'stats' | 'dump' | 'arrivals' |
 * 'async' | 'reports', phase}, answered with {id, ...}; 'dump' writes every delivery of the phase,
 * `jobId key arrival` per line, to `path`; 'arrivals' answers {arrivals: {key: arrival}} with each
 * key's first arrival (bench/compare.ts subtracts the moment its 201 reached the client). Deliveries
 * are grouped by phase (the part of `k` before the colon).
 *
 * Async completion (bench/async-completion.ts), off by default: after {type: 'async', phase,
 * callbackBase}, each delivery of that phase is answered 202 instead, and right after answering the
 * receiver POSTs {"outcome":"success"} to report it: to Punctual's
 * `<callbackBase>/api/jobs/:jobId/attempts/:attemptId/result` with `Authorization: Bearer
 * <callbackToken>` when the body carries a callbackToken (SPEC section 11), else to
 * `<callbackBase>/result/<jobId>` (the bare pipe's and the BullMQ front's callback route). The
 * moment each report's 200 came back is kept per key (the first one); any other answer or an error
 * counts as refused. 'reports' answers {reported, refused, firstRefusal, lastReport}; 'count'
 * answers `reported` too.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent, request } from 'undici';
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
  /** Async completion: when each key's report was first answered 200; reports answered otherwise or failed. */
  reported: Map<string, number>;
  refused: number;
  firstRefusal: string | null;
}

/** A parsed delivery, for the report that follows a 202. */
interface Delivery {
  phase: string;
  key: string;
  jobId: string;
  attemptId?: unknown;
  callbackToken?: unknown;
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
      reported: new Map(),
      refused: 0,
      firstRefusal: null,
    };
    phases.set(name, phase);
  }
  return phase;
}

function record(arrival: number, text: string): Delivery | null {
  let body: { jobId?: unknown; attemptId?: unknown; callbackToken?: unknown; scheduledFor?: unknown; payload?: { k?: unknown; ref?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    malformed += 1;
    return null;
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
    return null;
  }
  const name = key.slice(0, key.indexOf(':'));
  const delivery: Delivery = { phase: name, key, jobId: body.jobId, attemptId: body.attemptId, callbackToken: body.callbackToken };
  const phase = phaseOf(name);
  phase.deliveries += 1;
  phase.log.push(`${body.jobId} ${key} ${arrival.toFixed(3)}`);
  phase.firstArrival = Math.min(phase.firstArrival, arrival);
  phase.lastArrival = Math.max(phase.lastArrival, arrival);
  if (phase.jobIds.has(body.jobId)) phase.duplicateJobIds += 1;
  else phase.jobIds.add(body.jobId);
  if (phase.keys.has(key)) {
    phase.duplicateKeys += 1;
    return delivery;
  }
  phase.keys.add(key);
  phase.values.push(arrival - ref);
  return delivery;
}

/** Async completion: the callback base of each phase answered 202 (none by default). */
const callbackBases = new Map<string, string>();
// A pool, as a real receiver keeps: a system that forwards thousands at once (the bare pipe) would
// otherwise get a connection per report.
const reportAgent = new Agent({ keepAliveTimeout: 30_000, connections: 64 });

/** The success report of a delivery answered 202, sent right after the answer. */
async function report(base: string, delivery: Delivery): Promise<void> {
  const phase = phaseOf(delivery.phase);
  const token = typeof delivery.callbackToken === 'string' ? delivery.callbackToken : null;
  const path = token
    ? `/api/jobs/${encodeURIComponent(delivery.jobId)}/attempts/${encodeURIComponent(String(delivery.attemptId))}/result`
    : `/result/${encodeURIComponent(delivery.jobId)}`;
  try {
    const response = await request(`${base}${path}`, {
      method: 'POST',
      dispatcher: reportAgent,
      headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
      body: '{"outcome":"success"}',
    });
    const at = clock.now();
    if (response.statusCode === 200) {
      await response.body.dump();
      if (!phase.reported.has(delivery.key)) phase.reported.set(delivery.key, at);
      return;
    }
    const text = await response.body.text();
    phase.refused += 1;
    phase.firstRefusal ??= `${delivery.jobId}: ${response.statusCode} ${text.slice(0, 300)}`;
  } catch (error) {
    phase.refused += 1;
    phase.firstRefusal ??= `${delivery.jobId}: ${String(error)}`;
  }
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
    const text = Buffer.concat(chunks).toString('utf8');
    // Only with a phase in async mode is the body read before the answer (its status depends on it).
    const early = callbackBases.size > 0;
    const delivery = early ? record(arrival, text) : null;
    const base = delivery ? callbackBases.get(delivery.phase) : undefined;
    response.writeHead(base ? 202 : 200, { 'content-type': 'text/plain', 'content-length': '2' });
    response.end('ok');
    if (!early) record(arrival, text);
    else if (base) void report(base, delivery!);
  });
});
server.keepAliveTimeout = 60_000;

type Message = { id: number; type: 'count' | 'stats' | 'dump' | 'arrivals' | 'async' | 'reports'; phase: string; path?: string; callbackBase?: string };

process.on('message', (message: Message) => {
  if (message.type === 'count') {
    const phase = phaseOf(message.phase);
    process.send!({ id: message.id, unique: phase.keys.size, deliveries: phase.deliveries, malformed, reported: phase.reported.size });
  } else if (message.type === 'async') {
    callbackBases.set(message.phase, message.callbackBase!);
    process.send!({ id: message.id });
  } else if (message.type === 'reports') {
    const phase = phaseOf(message.phase);
    const lastReport = [...phase.reported.values()].reduce((last, at) => Math.max(last, at), Number.NEGATIVE_INFINITY);
    process.send!({ id: message.id, reported: phase.reported.size, refused: phase.refused, firstRefusal: phase.firstRefusal, lastReport });
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
