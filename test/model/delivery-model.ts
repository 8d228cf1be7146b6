/**
 * A reference model of the delivery contract (SPEC sections 2, 3, 4, 10, 11, 13 and 15): what the service
 * was told, and when, and the rules every delivery it made must satisfy. The commands of
 * delivery-model.test.ts record into it as they drive the real service; `violations` checks the
 * receiver's deliveries and the store's attempts against it.
 */
import type { AttemptRow } from '../../src/store/store.js';
import { BUSY_RETRY_AFTER_S, type Delivery, type Probe } from './model-receiver.js';
import { GLOBAL_SLOTS } from './model-service.js';
import { CLAIM_LOOKAHEAD_MS } from '../../src/claims/claim-loop.js';

/** One project never uses more than half of an instance's slots, whatever its concurrency. */
export const PROJECT_SHARE = Math.floor(GLOBAL_SLOTS / 2);

/** The retry policy of every model project: short, so that retries happen within a run. */
export const POLICY = { initialDelayMs: 200, factor: 2, maxDelayMs: 1_000 } as const;
/** Jitter is fixed at its middle (random() = 0.5): a retry waits its base plus 5%. */
export const backoffOf = (retryNumber: number) => {
  const base = Math.min(POLICY.maxDelayMs, POLICY.initialDelayMs * POLICY.factor ** (retryNumber - 1));
  return Math.round(base * 1.05);
};
/** A job claimed ahead of its time starts (STARTED, not sent) this much before it. */
const START_AHEAD_TOLERANCE_MS = 15;
/** How long before a delivery a job must have been known for the order rule to hold it to it. */
const ORDER_SLACK_MS = 150;

export interface ModelJob {
  id: string;
  project: string;
  /** Order of creation answers, across the run (one number for jobs sent together: their order is unknown). */
  seq: number;
  createdAt: number;
  /** The due time, as each change of it took effect: `since` is its creation, or when a reschedule answered 200 was asked for. */
  dues: { since: number; dueAt: number }[];
  maxRetries: number;
  /** When a cancel of it was answered 200. */
  cancelledAt: number | null;
  /** Its concurrencyKey (SPEC section 15), or null. */
  key: string | null;
}

export interface ModelProject {
  name: string;
  projectId: string;
  key: string;
  asyncCompletion: boolean;
  /** Settings as each change took effect (`since`: when it was answered). */
  concurrency: { since: number; value: number }[];
  rate: { since: number; value: number | null }[];
  /** keyConcurrency as each change took effect. */
  keyConcurrency: { since: number; value: number }[];
  /** Paused spans: from the pause's answer to the resume's request (null while still paused). */
  paused: { from: number; until: number | null }[];
  /** holdOnFailure as each change took effect (`since`: its answer; `requestedAt`: its request). */
  holdOnFailure: { since: number; requestedAt: number; value: boolean }[];
}

/**
 * A hold (SPEC section 13) as the service recorded it: from webhook.held (the failure that held
 * it) to webhook.recovered (the probe's success) or to the request that turned holdOnFailure off;
 * null while still held.
 */
export interface HoldSpan {
  project: string;
  from: number;
  until: number | null;
  endedBy: 'probe' | 'setting' | null;
}

/** The probe schedule (src/store/event-store.ts): 30 s after the hold, then doubling, capped at 10 min. */
export const PROBE_FIRST_MS = 30_000;
export const PROBE_MAX_MS = 600_000;
/** The wait before a hold's probe `index` (0: the first, 30 s after the hold). */
export const probeIntervalOf = (index: number) => Math.min(PROBE_FIRST_MS * 2 ** index, PROBE_MAX_MS);
/**
 * A start this soon after the failure that held its project began before that failure's answer:
 * from a counted failure's answer until its health write (which holds the project) has answered,
 * the instance starts nothing more of the project (src/delivery/hold-backs.ts), so a later start is
 * one of a job claimed ahead of its time, STARTED a little before it and counted from its due time.
 */
const HOLD_WRITE_TOLERANCE_MS = START_AHEAD_TOLERANCE_MS;
/** Whether a probe's answer was a success for its project: 200, or 202 where it accepts async completion. */
export const probeSucceeded = (probe: Pick<Probe, 'status'>, project: Pick<ModelProject, 'asyncCompletion'>): boolean =>
  probe.status === 200 || (probe.status === 202 && project.asyncCompletion);
/** A probe claimed just before holdOnFailure was turned off may reach the receiver just after. */
const PROBE_IN_FLIGHT_MS = 1_000;

export interface ModelSchedule {
  id: string;
  project: string;
  /** The gap between instants (the model's crons fire every 1 or 2 seconds, on the second). */
  intervalMs: number;
  catchUp: 'latest' | 'none' | 'all';
  createdAt: number;
  /** Paused spans: from the pause's answer to the resume's request (null while still paused). */
  paused: { from: number; until: number | null }[];
}

/** A job a schedule created, as the store has it. */
export interface ScheduleJob {
  jobId: string;
  scheduleId: string;
  fireAt: number;
  createdAt: number;
  status: string;
}

/** Fires are created this long ahead of their instant (src/maintenance/schedule-firing.ts, FIRE_LEAD_MS). */
const FIRE_LEAD_MS = 2_000;
/** An instant reached later than this is missed (SPEC section 9). */
const missedAfter = (intervalMs: number) => Math.min(5_000, intervalMs / 2);

export class DeliveryModel {
  readonly projects = new Map<string, ModelProject>();
  readonly jobs = new Map<string, ModelJob>();
  readonly schedules = new Map<string, ModelSchedule>();
  /** When the clock jumped, and by how much: instants near a jump may be missed. */
  readonly jumps: { at: number; ms: number }[] = [];
  /** Kills: when, and what was in flight then (those may be delivered twice). */
  readonly kills: { at: number; inFlight: Set<string> }[] = [];
  /** Probes asked for by an operator (POST …/probe), from the request to its answer: not the hold's own. */
  readonly probesNow: { project: string; from: number; until: number }[] = [];
  private nextSeq = 0;

  /** Whether a probe was an operator's (POST …/probe), not one of a hold's own. */
  askedFor(probe: { project: string; arrivedAt: number }): boolean {
    return this.probesNow.some((asked) => asked.project === probe.project && probe.arrivedAt >= asked.from && probe.arrivedAt <= asked.until);
  }

  addProject(project: ModelProject): void {
    this.projects.set(project.name, project);
  }

  /** Jobs sent together (`together`, the same number for each) were created in no order the model knows. */
  addJob(job: Omit<ModelJob, 'seq' | 'cancelledAt' | 'key'> & { key?: string | null }, together?: number): void {
    this.jobs.set(job.id, { ...job, key: job.key ?? null, seq: together ?? this.nextSeq++, cancelledAt: null });
  }

  /** A creation number for jobs sent together, each then added with it. */
  togetherSeq(): number {
    return this.nextSeq++;
  }

  dueAt(job: ModelJob, at: number): number {
    let due = job.dues[0]!.dueAt;
    for (const change of job.dues) if (change.since <= at) due = change.dueAt;
    return due;
  }

  /** Whether the job had been touched (a kill in flight) so that a repeat delivery is allowed. */
  maybeRepeated(jobId: string): boolean {
    return this.kills.some((kill) => kill.inFlight.has(jobId));
  }
}

const valueAt = <T>(changes: { since: number; value: T }[], at: number): T => {
  let value = changes[0]!.value;
  for (const change of changes) if (change.since <= at) value = change.value;
  return value;
};

/** Every rule a run's deliveries broke, each as a sentence naming the job and the times. */
export function violations(model: DeliveryModel, deliveries: Delivery[], attempts: Map<string, AttemptRow[]>): string[] {
  const found: string[] = [];
  // An attempt started before a kill and lost with it ends as lease_expired and is retried after
  // its backoff: such a job may go out again, and later than others due after it.
  const interrupted = (jobId: string) => model.maybeRepeated(jobId) || (attempts.get(jobId) ?? []).some((a) => a.outcome === 'lease_expired');
  const byJob = new Map<string, Delivery[]>();
  for (const d of deliveries) byJob.set(d.jobId, [...(byJob.get(d.jobId) ?? []), d]);

  for (const job of model.jobs.values()) {
    const own = (byJob.get(job.id) ?? []).sort((a, b) => a.arrivedAt - b.arrivedAt);
    // Never early: a first attempt arrives at or after the job's due time as it then stood.
    const first = own.find((d) => d.attemptNumber === 1);
    if (first && first.arrivedAt < model.dueAt(job, first.arrivedAt)) {
      found.push(`${job.id} (${job.project}) first delivered at ${first.arrivedAt}, before its due time ${model.dueAt(job, first.arrivedAt)}`);
    }
    // A retry waits its backoff (or the Retry-After) after the attempt before it ended.
    for (let i = 1; i < own.length; i++) {
      const [before, after] = [own[i - 1]!, own[i]!];
      // A request that timed out ends when the sender gives up, which the receiver sees a moment later.
      if (before.endedAt === null || before.status === null || after.attemptNumber !== before.attemptNumber + 1 || interrupted(job.id)) continue;
      // Rescheduled while it waited for this retry (it was QUEUED): due when the reschedule said.
      const rescheduled = job.dues.filter((c) => c.since >= before.endedAt! && c.since <= after.arrivedAt).at(-1);
      if (rescheduled) {
        if (after.arrivedAt < rescheduled.dueAt) found.push(`${job.id} attempt ${after.attemptNumber} at ${after.arrivedAt}, before ${rescheduled.dueAt}, where a reschedule set it`);
        continue;
      }
      const backoff = backoffOf(before.attemptNumber);
      const wait = before.status === 503 ? Math.min(POLICY.maxDelayMs, Math.max(backoff, BUSY_RETRY_AFTER_S * 1000)) : backoff;
      if (after.arrivedAt < before.endedAt + wait) {
        found.push(`${job.id} attempt ${after.attemptNumber} at ${after.arrivedAt}, under ${wait} ms after attempt ${before.attemptNumber} ended at ${before.endedAt}`);
      }
    }
    // Never after a cancel answer.
    if (job.cancelledAt !== null) {
      const late = own.find((d) => d.arrivedAt > job.cancelledAt!);
      if (late) found.push(`${job.id} delivered at ${late.arrivedAt}, after its cancel was answered at ${job.cancelledAt}`);
    }
    // Each attempt number once, but for attempts in flight at a kill.
    const numbers = own.map((d) => d.attemptNumber);
    if (new Set(numbers).size !== numbers.length && !interrupted(job.id)) {
      found.push(`${job.id} delivered twice as the same attempt: attempts ${numbers.join(', ')}`);
    }
  }

  /** Whether another job of `job`'s key, before it in the key's order, had an attempt open or to come at `at`. */
  const heldByKey = (job: ModelJob, at: number): boolean =>
    [...model.jobs.values()].some((other) => {
      if (other === job || other.project !== job.project || other.key !== job.key) return false;
      const otherDue = model.dueAt(other, at);
      const jobDue = model.dueAt(job, at);
      if (otherDue > jobDue || (otherDue === jobDue && other.seq >= job.seq)) return false;
      if (other.cancelledAt !== null && other.cancelledAt <= at) return false;
      const its = attempts.get(other.id) ?? [];
      const succeeded = its.some((a) => a.finishedAt !== null && a.finishedAt <= at && a.outcome === 'success');
      return !succeeded && (its.length <= other.maxRetries || its.some((a) => a.finishedAt === null || a.finishedAt > at));
    });
  for (const project of model.projects.values()) {
    const own = deliveries.filter((d) => d.project === project.name).sort((a, b) => a.arrivedAt - b.arrivedAt);
    const startOf = (d: Delivery) => (attempts.get(d.jobId) ?? []).find((a) => a.id === d.attemptId)?.startedAt ?? d.arrivedAt;
    // Concurrency: open requests at an arrival never exceed the limit in force (a lowered limit
    // lets attempts already started finish, their requests perhaps arriving after the change's
    // answer: each is judged by the limit at its start, which for a job held ahead of its time
    // is up to START_AHEAD_TOLERANCE_MS before the startedAt recorded, its due time; a killed
    // instance's requests are another instance's).
    for (const d of own) {
      const overlapping = own.filter((o) => o === d || (o.arrivedAt <= d.arrivedAt && (o.endedAt === null || o.endedAt > d.arrivedAt) && o.generation === d.generation));
      const limit = Math.min(PROJECT_SHARE, Math.max(...overlapping.map((o) => valueAt(project.concurrency, Math.min(o.arrivedAt, startOf(o) - START_AHEAD_TOLERANCE_MS)))));
      if (overlapping.length > limit) {
        const requests = overlapping.map((o) => `${o.jobId} started ${startOf(o)} arrived ${o.arrivedAt}`).join('; ');
        const changes = project.concurrency.map((c) => `${c.value} from ${c.since}`).join(', ');
        found.push(`${project.name}: ${overlapping.length} requests open at ${d.arrivedAt}, over its concurrency within its share, ${limit} (${requests}; concurrency ${changes})`);
        break;
      }
    }
    // Rate: no more starts in any second than the rate and its bucket's few tokens allow.
    for (const d of own) {
      const rate = valueAt(project.rate, d.arrivedAt);
      if (rate === null) continue;
      const window = own.filter((o) => o.arrivedAt >= d.arrivedAt && o.arrivedAt < d.arrivedAt + 1_000 && valueAt(project.rate, o.arrivedAt) === rate);
      const allowed = Math.ceil(rate) + Math.max(1, Math.ceil(rate / 20)) + 1;
      if (window.length > allowed) {
        found.push(`${project.name}: ${window.length} deliveries in the second from ${d.arrivedAt}, over its rate ${rate}/s`);
        break;
      }
    }
    // Due order: a first attempt never starts before a job of its project that was due earlier (or
    // as early and created first) and known well before it started. Starts are the store's
    // STARTED instants: a request may reach the receiver a while after (a cold webhook thread).
    const firsts = own.filter((d) => d.attemptNumber === 1 && !interrupted(d.jobId));
    for (const later of firsts) {
      const laterJob = model.jobs.get(later.jobId);
      if (!laterJob) continue;
      const laterStart = startOf(later);
      const laterDue = model.dueAt(laterJob, laterStart);
      for (const earlier of model.jobs.values()) {
        if (earlier.project !== project.name || earlier.id === later.jobId || interrupted(earlier.id)) continue;
        const known = Math.max(earlier.createdAt, ...earlier.dues.map((c) => c.since));
        if (known > laterStart - ORDER_SLACK_MS) continue;
        // Claim-ahead: the later job may have been claimed up to CLAIM_LOOKAHEAD_MS before its due
        // time and held here (for its time, or for a slot), and goes before a job dispatched after
        // that claim (docs/guarantees.md section 5).
        const laterKnown = Math.max(laterJob.createdAt, ...laterJob.dues.map((c) => c.since));
        if (known > laterKnown && known > laterDue - CLAIM_LOOKAHEAD_MS) continue;
        if (earlier.cancelledAt !== null && earlier.cancelledAt <= laterStart) continue;
        const earlierDue = model.dueAt(earlier, laterStart);
        if (earlierDue > laterDue || (earlierDue === laterDue && earlier.seq >= laterJob.seq)) continue;
        // A job waiting for its key's turn (SPEC section 15) is overtaken by design: the keys' own
        // rules check it. So when it waited at the later job's real start, which for a job held ahead
        // of its time is up to START_AHEAD_TOLERANCE_MS before the startedAt recorded, its due time.
        const keyHeld = (at: number) => heldByKey(earlier, at);
        if (earlier.key !== null && earlier.key !== laterJob.key && (keyHeld(laterStart) || keyHeld(laterStart - START_AHEAD_TOLERANCE_MS))) continue;
        const its = (byJob.get(earlier.id) ?? []).find((d) => d.attemptNumber === 1);
        if (!its || startOf(its) > laterStart) {
          found.push(
            `${project.name}: ${later.jobId} (due ${laterDue}) first started at ${laterStart}, before ${earlier.id} (due ${earlierDue}, ` +
              `${its ? `started at ${startOf(its)}` : 'never delivered'})`,
          );
        }
      }
    }
    // Keys (SPEC section 15): at most keyConcurrency requests of one key open at once (of one
    // instance generation; a lowered limit lets requests already out finish).
    for (const d of own) {
      const key = model.jobs.get(d.jobId)?.key ?? null;
      if (key === null || interrupted(d.jobId)) continue;
      const overlapping = own.filter(
        (o) =>
          o === d ||
          (model.jobs.get(o.jobId)?.key === key && o.arrivedAt <= d.arrivedAt && (o.endedAt === null || o.endedAt > d.arrivedAt) && o.generation === d.generation && !interrupted(o.jobId)),
      );
      const limit = Math.max(...overlapping.map((o) => valueAt(project.keyConcurrency, o.arrivedAt)));
      if (overlapping.length > limit) {
        found.push(`${project.name}: ${overlapping.length} requests of key ${key} open at ${d.arrivedAt}, over its keyConcurrency ${limit}`);
        break;
      }
    }
    // Strict order at keyConcurrency 1: a job of a key starts only once every job of its key due
    // before it (and known well before) is final: each of its attempts ended, none after.
    for (const later of firsts) {
      const laterJob = model.jobs.get(later.jobId);
      if (!laterJob || laterJob.key === null) continue;
      const laterStart = startOf(later);
      if (valueAt(project.keyConcurrency, laterStart) !== 1 || project.keyConcurrency.some((c) => c.since > laterStart - ORDER_SLACK_MS && c.since <= laterStart)) continue;
      const laterDue = model.dueAt(laterJob, laterStart);
      for (const earlier of model.jobs.values()) {
        if (earlier.project !== project.name || earlier.key !== laterJob.key || earlier.id === later.jobId || interrupted(earlier.id)) continue;
        const known = Math.max(earlier.createdAt, ...earlier.dues.map((c) => c.since));
        if (known > laterStart - ORDER_SLACK_MS) continue;
        // Claim-ahead: the later job may have been claimed up to CLAIM_LOOKAHEAD_MS before its due
        // time and held here (for its time, or for a slot), and goes before a job dispatched after
        // that claim (docs/guarantees.md section 5).
        const laterKnown = Math.max(laterJob.createdAt, ...laterJob.dues.map((c) => c.since));
        if (known > laterKnown && known > laterDue - CLAIM_LOOKAHEAD_MS) continue;
        if (earlier.cancelledAt !== null && earlier.cancelledAt <= laterStart) continue;
        const earlierDue = model.dueAt(earlier, laterStart);
        if (earlierDue > laterDue || (earlierDue === laterDue && earlier.seq >= laterJob.seq)) continue;
        const its = attempts.get(earlier.id) ?? [];
        const open = its.find((a) => a.finishedAt === null || a.finishedAt > laterStart);
        const finished = its.some((a) => a.finishedAt !== null && a.finishedAt <= laterStart && a.outcome === 'success');
        if (its.length === 0 || open || (!finished && its.length <= earlier.maxRetries)) {
          found.push(
            `${project.name}: ${later.jobId} of key ${laterJob.key} (due ${laterDue}) started at ${laterStart} before ${earlier.id} (due ${earlierDue}) was final ` +
              `(attempts ${its.map((a) => `${a.startedAt}-${a.finishedAt ?? 'open'}:${a.outcome ?? '?'}`).join(', ') || 'none'})`,
          );
        }
      }
    }
    // Pause: no attempt starts between a pause's answer and the resume's request.
    for (const span of project.paused) {
      for (const job of model.jobs.values()) {
        if (job.project !== project.name) continue;
        const started = (attempts.get(job.id) ?? []).find((a) => a.startedAt > span.from + START_AHEAD_TOLERANCE_MS && (span.until === null || a.startedAt < span.until));
        if (started) found.push(`${project.name}: ${job.id} attempt ${started.attemptNumber} started at ${started.startedAt}, while paused from ${span.from}`);
      }
    }
    // Retry-After: after a 503 with Retry-After, no attempt of the project starts until it passes.
    for (const busy of own.filter((d) => d.status === 503 && d.endedAt !== null)) {
      const until = busy.endedAt! + Math.min(BUSY_RETRY_AFTER_S * 1000, POLICY.maxDelayMs);
      for (const job of model.jobs.values()) {
        if (job.project !== project.name || interrupted(job.id)) continue;
        const early = (attempts.get(job.id) ?? []).find((a) => a.startedAt > busy.endedAt! + START_AHEAD_TOLERANCE_MS && a.startedAt < until);
        if (early) found.push(`${project.name}: ${job.id} attempt ${early.attemptNumber} started at ${early.startedAt}, within the Retry-After of a 503 at ${busy.endedAt}`);
      }
    }
  }
  return found;
}

/** The hold spans of the projects, from their webhook.held and webhook.recovered events and holdOnFailure changes. */
export function holdSpans(model: DeliveryModel, events: { project: string; type: string; occurredAt: number; data: Record<string, unknown> }[]): HoldSpan[] {
  const spans: HoldSpan[] = [];
  for (const event of events.filter((e) => e.type === 'webhook.held').sort((a, b) => a.occurredAt - b.occurredAt)) {
    const project = model.projects.get(event.project)!;
    const from = event.occurredAt;
    const recovered = events.find((e) => e.project === event.project && e.type === 'webhook.recovered' && e.data.heldFor != null && e.occurredAt >= from);
    const turnedOff = project.holdOnFailure.find((c) => !c.value && c.requestedAt >= from);
    const byProbe = recovered?.occurredAt ?? Number.POSITIVE_INFINITY;
    const bySetting = turnedOff?.requestedAt ?? Number.POSITIVE_INFINITY;
    const until = Math.min(byProbe, bySetting);
    spans.push({ project: event.project, from, until: Number.isFinite(until) ? until : null, endedBy: !Number.isFinite(until) ? null : byProbe <= bySetting ? 'probe' : 'setting' });
  }
  return spans;
}

/**
 * The hold rules of SPEC section 13: no attempt of a held project starts (attempts in flight at the
 * hold's start finish), probes go out only while held and not paused, 30 s after the hold and then
 * at doubling intervals capped at 10 minutes, and a probe answered by success ends the hold. Resume
 * order is the due-order rule of `violations`, which holds across a hold as across anything.
 */
export function holdViolations(model: DeliveryModel, spans: HoldSpan[], allProbes: Probe[], attempts: Map<string, AttemptRow[]>): string[] {
  const found: string[] = [];
  const inside = (span: HoldSpan, at: number, after = 0) => at >= span.from && (span.until === null || at <= span.until + after);
  // An operator's probe goes out when asked, held or not, and keeps nothing of the hold's schedule;
  // its success ends a hold as the hold's own probe's does.
  const probes = allProbes.filter((probe) => !model.askedFor(probe));
  // A probe whose answer came as the instance was killed may not have been recorded.
  const killedDuring = (probe: Probe) => model.kills.some((k) => k.at >= probe.arrivedAt && k.at <= (probe.endedAt ?? probe.arrivedAt) + 1_000);
  for (const probe of allProbes.filter((probe) => model.askedFor(probe))) {
    const succeeded = probeSucceeded(probe, model.projects.get(probe.project)!);
    const held = spans.find((span) => span.project === probe.project && inside(span, probe.arrivedAt));
    if (succeeded && probe.endedAt !== null && held && !killedDuring(probe) && (held.until === null || held.until > probe.endedAt + 1_000)) {
      found.push(`${probe.project}: probe asked for answered ${probe.status} at ${probe.endedAt}, but the hold from ${held.from} lasted until ${held.until ?? 'the end'}`);
    }
  }
  // When no start begun before the hold can still be counted: HOLD_WRITE_TOLERANCE_MS after the
  // failure, later by every jump of the clock taken meanwhile (ReceiverOutage jumps right after the
  // failure). A jump taken after that window moves nothing.
  const heldBy = (from: number) => {
    let by = from + HOLD_WRITE_TOLERANCE_MS;
    for (const jump of model.jumps) if (jump.at >= from && jump.at <= by) by += jump.ms;
    return by;
  };
  for (const span of spans) {
    const from = heldBy(span.from);
    for (const job of model.jobs.values()) {
      if (job.project !== span.project) continue;
      const started = (attempts.get(job.id) ?? []).find((a) => a.startedAt > from && (span.until === null || a.startedAt < span.until));
      if (started) found.push(`${span.project}: ${job.id} attempt ${started.attemptNumber} started at ${started.startedAt}, while held from ${span.from} to ${span.until ?? 'the end'}`);
    }
    const project = model.projects.get(span.project)!;
    const own = probes.filter((p) => p.project === span.project && inside(span, p.arrivedAt, span.endedBy === 'setting' ? PROBE_IN_FLIGHT_MS : 0)).sort((a, b) => a.arrivedAt - b.arrivedAt);
    for (const [i, probe] of own.entries()) {
      // Each probe is claimed at or after the time the claim before set (its own time plus the doubled
      // interval), so never before the schedule's sum: 30 s, then 60 s more, and so on. NextProbe
      // checks each next time the service sets against the probe that set it.
      const earliest = span.from + Array.from({ length: i + 1 }, (_, k) => probeIntervalOf(k)).reduce((a, b) => a + b, 0);
      if (probe.arrivedAt < earliest) {
        found.push(`${span.project}: probe ${i + 1} of the hold from ${span.from} at ${probe.arrivedAt}, before ${earliest} (probes at 30 s, then doubling to 10 min)`);
      }
      const paused = project.paused.find((p) => probe.arrivedAt > p.from + PROBE_IN_FLIGHT_MS && (p.until === null || probe.arrivedAt < p.until));
      if (paused) found.push(`${span.project}: probe at ${probe.arrivedAt} while paused from ${paused.from}`);
      const succeeded = probeSucceeded(probe, project);
      if (succeeded && probe.endedAt !== null && !killedDuring(probe) && (span.until === null || span.until > probe.endedAt + 1_000)) {
        found.push(`${span.project}: probe answered ${probe.status} at ${probe.endedAt}, but the hold from ${span.from} lasted until ${span.until ?? 'the end'}`);
      }
    }
  }
  for (const probe of probes) {
    if (!spans.some((span) => span.project === probe.project && inside(span, probe.arrivedAt, span.endedBy === 'setting' ? PROBE_IN_FLIGHT_MS : 0))) {
      found.push(`${probe.project}: probe at ${probe.arrivedAt}, while not held`);
    }
  }
  return found;
}

/**
 * The schedule rules of SPEC section 9 against the jobs the schedules made: one job per instant
 * (a cancelled one may be followed by another after a resume), nothing of a paused schedule for an
 * instant after its pause answer but what its resume creates, catchUp "latest" and "none" creating
 * at most one and no job for instants missed at once, and no instant missing in a quiet stretch
 * (no jump, kill, pause or resume near it). `until` is when the run stopped looking.
 */
export function scheduleViolations(model: DeliveryModel, jobs: ScheduleJob[], deliveries: Delivery[], until: number): string[] {
  const found: string[] = [];
  const delivered = new Set(deliveries.map((d) => d.jobId));
  for (const schedule of model.schedules.values()) {
    const own = jobs.filter((j) => j.scheduleId === schedule.id);
    const byInstant = new Map<number, ScheduleJob[]>();
    for (const job of own) byInstant.set(job.fireAt, [...(byInstant.get(job.fireAt) ?? []), job]);
    for (const [fireAt, same] of byInstant) {
      if (same.filter((j) => j.status !== 'CANCELLED').length > 1) found.push(`${schedule.id}: ${same.length} jobs for the instant ${fireAt}`);
    }
    for (const job of own) {
      const span = schedule.paused.find((p) => job.fireAt > p.from && (p.until === null || job.fireAt < p.until));
      if (span && delivered.has(job.jobId) && (span.until === null || job.createdAt < span.until)) {
        found.push(`${schedule.id}: ${job.jobId} for ${job.fireAt}, an instant after its pause answered at ${span.from}, was delivered`);
      }
    }
    // Jobs made at once for instants already missed when made.
    const passes = new Map<number, ScheduleJob[]>();
    for (const job of own) if (job.createdAt - job.fireAt > missedAfter(schedule.intervalMs)) passes.set(job.createdAt, [...(passes.get(job.createdAt) ?? []), job]);
    for (const [createdAt, missed] of passes) {
      const allowed = schedule.catchUp === 'all' ? Number.POSITIVE_INFINITY : schedule.catchUp === 'latest' ? 1 : 0;
      if (missed.length > allowed) {
        found.push(`${schedule.id} (catchUp ${schedule.catchUp}): ${missed.length} jobs made at ${createdAt} for missed instants ${missed.map((j) => j.fireAt).join(', ')}`);
      }
    }
    // Every quiet instant has its job. An instant the clock jumped over is missed, not quiet: the
    // whole span of a jump disturbs, not only its two ends.
    const jumpedOver = (instant: number) => model.jumps.some((j) => instant > j.at - FIRE_LEAD_MS - 1_000 && instant < j.at + j.ms + 1_000);
    const disturbances = [
      ...model.kills.map((k) => k.at),
      ...schedule.paused.flatMap((p) => (p.until === null ? [p.from] : [p.from, p.until])),
    ];
    const first = Math.ceil((schedule.createdAt + FIRE_LEAD_MS + 1_000) / schedule.intervalMs) * schedule.intervalMs;
    for (let instant = first; instant < until - 1_000; instant += schedule.intervalMs) {
      if (schedule.paused.some((p) => instant > p.from && (p.until === null || instant < p.until))) continue;
      if (jumpedOver(instant) || disturbances.some((at) => at > instant - FIRE_LEAD_MS - 1_000 && at < instant + 1_000)) continue;
      if (!byInstant.has(instant)) found.push(`${schedule.id}: no job for the instant ${instant}, in a quiet stretch`);
    }
  }
  return found;
}
