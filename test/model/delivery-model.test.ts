import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AttemptRow } from '../../src/store/store.js';
import { eventually } from '../support/eventually.js';
import { OffsetClock } from '../support/offset-clock.js';
import { FAILING_AFTER } from '../../src/store/event-store.js';
import { DeliveryModel, holdSpans, holdViolations, POLICY, PROJECT_SHARE, PROBE_FIRST_MS, probeIntervalOf, probeSucceeded, scheduleViolations, violations, type ModelJob, type ModelProject, type ScheduleJob } from './delivery-model.js';
import { ModelReceiver, type ReceiverMode } from './model-receiver.js';
import { ModelService } from './model-service.js';

/**
 * The delivery rules as a model-based test: fast-check builds sequences of what users and
 * receivers do (dispatch, batch, cancel, reschedule, pause, resume, change concurrency or rate,
 * answer 200 / 500 / 503 with Retry-After / 202 then a report / slowly, time passing, the process
 * killed and restarted, a receiver down long enough to hold its project, holdOnFailure on or off,
 * a held project's next probe, an operator's probe now), runs them against the real service on a
 * real store with a real receiver, and checks every delivery against the reference model
 * (delivery-model.ts). A failing sequence is shrunk and printed with its seed.
 *
 * MODEL_RUNS (default 2; CI sets 1, which keeps it under its 20 minutes) and MODEL_SEED set how many sequences and from which seed; the fixed
 * seed's runs come first, then as many from a random seed, printed. `npm run test:model` runs
 * 100 of them. A failure prints its seed, its path and the commands' replayPath: MODEL_SEED,
 * MODEL_PATH and MODEL_REPLAY run that one sequence again (MODEL_DEBUG=1 prints every delivery).
 * MODEL_NO_SHRINK=1 reports a failure as found, without shrinking it (a long run's quick look).
 */
const RUNS = Number(process.env.MODEL_RUNS ?? 2);
const FIXED_SEED = 20261126;
const RANDOM_SEED = process.env.MODEL_SEED ? Number(process.env.MODEL_SEED) : Math.floor(Math.random() * 2 ** 31);

interface Run {
  service: ModelService;
  receiver: ModelReceiver;
  clock: OffsetClock;
  model: DeliveryModel;
  /** Job ids in creation order, for commands that pick one. */
  jobIds: string[];
  scheduleIds: string[];
  /** When the run stopped watching its schedules (the start of settle). */
  stoppedLooking: number;
  /** Answers that broke the contract outright (a wrong status for a request). */
  errors: string[];
}

type Command = fc.AsyncCommand<DeliveryModel, Run, false>;
const PROJECTS = ['a', 'b'] as const;
type ProjectName = (typeof PROJECTS)[number];
const project = fc.constantFrom<ProjectName>(...PROJECTS);

const iso = (ms: number) => new Date(ms).toISOString();

/** A job's status body, as its project's key reads it (GET /api/jobs/:jobId). */
async function readJob(service: ModelService, p: ModelProject, jobId: string): Promise<Record<string, unknown>> {
  return (await service.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json();
}

async function readCreatedAt(run: Run, p: ModelProject, jobId: string): Promise<number> {
  return Date.parse((await readJob(run.service, p, jobId)).createdAt as string);
}

/** When a job becomes due, in the three kinds a user asks for: now, soon (real time), much later. */
const delay = fc.oneof(
  fc.constant<number | null>(null),
  fc.integer({ min: 30, max: 400 }),
  fc.integer({ min: 60_000, max: 900_000 }),
);

/**
 * Jobs dispatched in one batch, or (`together`) as single dispatches sent all at once, as several
 * clients would: those are answered together, from one commit.
 */
class Dispatch implements Command {
  constructor(
    readonly projectName: ProjectName,
    readonly delays: (number | null)[],
    readonly together = false,
    /** Each job's concurrencyKey (SPEC section 15), or null; none when absent. */
    readonly keys: (string | null)[] = [],
  ) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const now = run.clock.now();
    const items = this.delays.map((d, i) => ({ payload: { i }, ...(d !== null && { scheduledFor: iso(now + d) }), ...(this.keys[i] != null && { concurrencyKey: this.keys[i] }) }));
    const dispatch = (payload: Record<string, unknown>, batch: boolean) =>
      run.service.api(p.key, { method: 'POST', url: batch ? '/api/jobs/dispatch/batch' : '/api/jobs/dispatch', payload });
    const answers: Record<string, unknown>[] = [];
    if (this.together || items.length === 1) {
      for (const res of await Promise.all(items.map((item) => dispatch(item, false)))) {
        if (res.statusCode === 201) answers.push(res.json());
        else run.errors.push(`dispatch answered ${res.statusCode}: ${res.body}`);
      }
    } else {
      const res = await dispatch({ jobs: items }, true);
      if (res.statusCode === 200) answers.push(...(res.json().jobs as Record<string, unknown>[]));
      else run.errors.push(`batch answered ${res.statusCode}: ${res.body}`);
    }
    // Sent together, they are created in whatever order they reach the store: one creation number.
    const together = this.together && items.length > 1 ? model.togetherSeq() : undefined;
    for (const [i, answer] of answers.entries()) {
      const jobId = answer.jobId as string;
      const createdAt = await readCreatedAt(run, p, jobId);
      const asked = this.delays[i] === null ? null : now + this.delays[i]!;
      model.addJob({ id: jobId, project: p.name, createdAt, dues: [{ since: createdAt, dueAt: Math.max(asked ?? createdAt, createdAt) }], maxRetries: 2, key: this.keys[i] ?? null }, together);
      run.jobIds.push(jobId);
      // A job due at once is due at its creation, to the millisecond (SPEC section 2).
      if (asked === null) await new ReadStatus(run.jobIds.length - 1).run(model, run);
    }
  }
  toString = () => `dispatch${this.together ? '-together' : ''}(${this.projectName}, ${JSON.stringify(this.delays)}${this.keys.length > 0 ? `, keys ${JSON.stringify(this.keys)}` : ''})`;
}

/**
 * Jobs dispatched while another dispatch of the project holds its room, reserved to create its
 * jobs started: they are created QUEUED, and a claim may take them and hold them here, waiting
 * for that room. Then the other dispatch creates none started (another job of the project was due
 * first) and gives the room back: the waiting jobs must start then, with no other wake-up to come.
 */
class DispatchBesideReservation implements Command {
  constructor(readonly projectName: ProjectName, readonly delays: (number | null)[], readonly holdMs: number) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const giveBack = await run.service.reserveAsDispatch(p.projectId);
    try {
      // One batch: its jobs are created in its order, which the model's due order rule reads.
      await new Dispatch(this.projectName, this.delays).run(model, run);
      // Time for a claim to take them while the room stays reserved.
      await new Promise((resolve) => setTimeout(resolve, this.holdMs));
    } finally {
      giveBack?.();
    }
  }
  toString = () => `dispatch-beside-reservation(${this.projectName}, ${JSON.stringify(this.delays)}, held ${this.holdMs} ms)`;
}

class Cancel implements Command {
  constructor(readonly pick: number) {}
  check = (model: DeliveryModel) => model.jobs.size > 0;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const job = model.jobs.get(run.jobIds[this.pick % run.jobIds.length]!)!;
    const p = model.projects.get(job.project)!;
    const res = await run.service.api(p.key, { method: 'DELETE', url: `/api/jobs/${job.id}` });
    if (res.statusCode === 200) job.cancelledAt = run.clock.now();
    else if (res.statusCode !== 409) run.errors.push(`cancel of ${job.id} answered ${res.statusCode}: ${res.body}`);
  }
  toString = () => `cancel(#${this.pick})`;
}

class Reschedule implements Command {
  constructor(readonly pick: number, readonly delayMs: number | null) {}
  check = (model: DeliveryModel) => model.jobs.size > 0;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const job = model.jobs.get(run.jobIds[this.pick % run.jobIds.length]!)!;
    const p = model.projects.get(job.project)!;
    const requestedAt = run.clock.now();
    const asked = this.delayMs === null ? null : requestedAt + this.delayMs;
    const res = await run.service.api(p.key, { method: 'PATCH', url: `/api/jobs/${job.id}`, payload: { scheduledFor: asked === null ? null : iso(asked) } });
    if (res.statusCode === 200) {
      // Due at the time asked for, or at once: when it entered QUEUED, its creation or (waiting
      // for a retry) a little after its last attempt ended. From the request on: answered 200, the
      // job was QUEUED when the change committed, so nothing of it started in between, and it may
      // start by the new time before the answer is read.
      const ended = run.receiver.deliveries.filter((d) => d.jobId === job.id).map((d) => d.endedAt ?? d.arrivedAt);
      const queuedAt = ended.length === 0 ? job.createdAt : Math.max(...ended);
      job.dues.push({ since: requestedAt, dueAt: Math.max(asked ?? queuedAt, queuedAt) });
    } else if (res.statusCode !== 409) run.errors.push(`reschedule of ${job.id} answered ${res.statusCode}: ${res.body}`);
  }
  toString = () => `reschedule(#${this.pick}, ${this.delayMs})`;
}

/** A job's status read back: a job not yet tried is due when it was asked to be (SPEC section 2). */
class ReadStatus implements Command {
  constructor(readonly pick: number) {}
  check = (model: DeliveryModel) => model.jobs.size > 0;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const job = model.jobs.get(run.jobIds[this.pick % run.jobIds.length]!)!;
    const p = model.projects.get(job.project)!;
    const body = await readJob(run.service, p, job.id);
    if (body.status !== 'QUEUED' || body.attemptCount !== 0) return;
    const due = model.dueAt(job, run.clock.now());
    if (Date.parse(body.nextAttemptAt as string) !== due) {
      run.errors.push(`${job.id}: QUEUED and never tried, nextAttemptAt ${body.nextAttemptAt as string}, but it was due at ${iso(due)}`);
    }
  }
  toString = () => `read(#${this.pick})`;
}

class ProjectSetting implements Command {
  constructor(
    readonly projectName: ProjectName,
    readonly patch: { paused?: boolean; deliveryConcurrency?: number; deliveryRatePerSecond?: number | null; keyConcurrency?: number; holdOnFailure?: boolean },
  ) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const requestedAt = run.clock.now();
    const res = await run.service.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: this.patch });
    if (res.statusCode !== 200) {
      run.errors.push(`PATCH ${JSON.stringify(this.patch)} answered ${res.statusCode}: ${res.body}`);
      return;
    }
    const at = run.clock.now();
    const open = p.paused.at(-1);
    if (this.patch.paused === true && !(open && open.until === null)) p.paused.push({ from: at, until: null });
    if (this.patch.paused === false && open && open.until === null) open.until = requestedAt;
    if (this.patch.deliveryConcurrency !== undefined) p.concurrency.push({ since: at, value: this.patch.deliveryConcurrency });
    if (this.patch.deliveryRatePerSecond !== undefined) p.rate.push({ since: at, value: this.patch.deliveryRatePerSecond });
    if (this.patch.keyConcurrency !== undefined) p.keyConcurrency.push({ since: at, value: this.patch.keyConcurrency });
    if (this.patch.holdOnFailure !== undefined) p.holdOnFailure.push({ since: at, requestedAt, value: this.patch.holdOnFailure });
  }
  toString = () => `set(${this.projectName}, ${JSON.stringify(this.patch)})`;
}

class ReceiverAnswers implements Command {
  constructor(readonly projectName: ProjectName, readonly mode: ReceiverMode) {}
  // Only an asyncCompletion project takes 202 as "accepted".
  check = (model: DeliveryModel) => this.mode !== 'accept' || model.projects.get(this.projectName)!.asyncCompletion;
  async run(_model: DeliveryModel, run: Run): Promise<void> {
    run.receiver.setMode(this.projectName, this.mode);
  }
  toString = () => `receiver(${this.projectName}, ${this.mode})`;
}

class Wait implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.ms));
  }
  toString = () => `wait(${this.ms})`;
}

/**
 * Time passes faster than it does: the clock jumps, once no attempt is under way (started and not
 * answered). A jump stays under a lease's margin (30 s), so that an attempt that starts right after
 * one keeps its lease across it, as one does across any real wait (clock-jumps.test.ts covers
 * larger jumps).
 */
const MAX_JUMP_MS = 20_000;
/** Until no attempt is under way: none open at the receiver, none started and not yet answered in the service (outcomes may still be being written). */
async function untilNoAttemptUnderWay(run: Run): Promise<void> {
  await eventually(() => run.receiver.openRequests() + run.service.attemptsInFlight, { what: 'no attempt under way', until: (open) => open === 0, withinMs: 5_000 });
}

async function jump(run: Run, ms: number): Promise<void> {
  await untilNoAttemptUnderWay(run);
  run.model.jumps.push({ at: run.clock.now(), ms });
  run.clock.advance(ms);
  run.service.wake();
}

/**
 * The jobs due by now, of the projects whose due jobs must be under way: neither paused nor rated,
 * their receiver answering at once (ok or fail), so that nothing but a Retry-After or a hung
 * attempt's timeout (1 s each here) may keep one waiting.
 */
async function overdueJobs(run: Run): Promise<string[]> {
  const left: string[] = [];
  const now = run.clock.now();
  for (const job of run.model.jobs.values()) {
    const p = run.model.projects.get(job.project)!;
    if (p.paused.at(-1)?.until === null || p.rate.at(-1)?.value != null || !['ok', 'fail'].includes(run.receiver.modeOf(p.name))) continue;
    // A held project's due jobs wait for a probe's success (SPEC section 13).
    if ((await readHealth(run, p)).state === 'held') continue;
    const body = await readJob(run.service, p, job.id);
    // Claimed (DISPATCHED) counts too: a claimed job waits here only for room, which frees at once.
    if (!['QUEUED', 'DISPATCHED'].includes(body.status as string) || Date.parse(body.nextAttemptAt as string) > now) continue;
    // A job claimed by an instance since killed waits for that claim's lease to end.
    if (body.status === 'DISPATCHED' && run.model.maybeRepeated(job.id)) continue;
    // A keyed job waits its key's turn behind a job of its key that a killed instance may still
    // hold, claimed, until that claim's lease ends (SPEC section 15's strict order): not overdue.
    if (job.key !== null && (await heldByKilledClaim(run, job))) continue;
    left.push(`${job.id} ${body.status as string}, due ${body.nextAttemptAt as string}`);
  }
  return left;
}

/** A project's health as GET /manage/v1/projects/:id shows it (SPEC section 13). */
async function readHealth(run: Run, p: ModelProject): Promise<{ state: string; since: number | null; nextProbeAt: number | null; consecutiveFailures: number }> {
  const health = (await run.service.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}` })).json().health as Record<string, string | null>;
  const at = (value: string | null | undefined) => (value ? Date.parse(value) : null);
  return { state: health.state!, since: at(health.since), nextProbeAt: at(health.nextProbeAt), consecutiveFailures: Number(health.consecutiveFailures) };
}

/**
 * A receiver going down: it answers 500, four jobs due now are dispatched, and time passes (in
 * steps of about a retry's backoff) until the project has failed often enough to turn failing, and
 * with holdOnFailure to be held (FAILING_AFTER, 10, in a row), or a dozen steps went by (a paused
 * project, a receiver another command set answering). What was held is learnt from the service.
 */
class ReceiverOutage implements Command {
  constructor(
    readonly projectName: ProjectName,
    /** Probes sent while it stays down, once held: each fails, and the next waits twice as long. */
    readonly failedProbes = 0,
  ) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    // From a healthy start with nothing under way, every delivery from now on fails and counts.
    await untilNoAttemptUnderWay(run);
    const start = await readHealth(run, p);
    const countedFrom = start.state === 'healthy' && start.consecutiveFailures === 0 ? run.receiver.deliveries.length : null;
    run.receiver.setMode(p.name, 'fail');
    // More jobs than the project may run at once: some wait for a slot when the 10th failure is answered.
    await new Dispatch(this.projectName, [null, null, null, null]).run(model, run);
    let health = start;
    for (let step = 0; step < 12; step++) {
      health = await readHealth(run, p);
      if (health.state !== 'healthy' || health.consecutiveFailures >= FAILING_AFTER) break;
      await jump(run, 1_100);
      // The attempts the jump made due start, and are answered, before the next look.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Held at once (SPEC section 13): nothing starts after the failure that holds the project but
    // what was already under way then, at most its other slots' worth.
    if (countedFrom !== null && health.state === 'held') {
      const failed = run.receiver.deliveries.slice(countedFrom).filter((d) => d.project === p.name);
      const slots = Math.min(PROJECT_SHARE, p.concurrency.at(-1)!.value);
      if (failed.length > FAILING_AFTER + slots - 1) {
        run.errors.push(`${p.name}: ${failed.length} deliveries failed before the hold, more than ${FAILING_AFTER} and the ${slots - 1} other slot(s) under way at the 10th`);
      }
    }
    for (let i = 0; i < this.failedProbes; i++) await new NextProbe(this.projectName).run(model, run);
  }
  toString = () => `receiver-outage(${this.projectName}${this.failedProbes > 0 ? `, then ${this.failedProbes} probes` : ''})`;
}

/**
 * A held project's next probe: time passes (in jumps) to when the service says it is due, and it
 * goes out then, answered by the receiver's mode: a success ends the hold, a failure sets the next
 * one (the probe rules are checked at the end, holdViolations). A hold's first probe is due 30 s
 * after it began.
 */
class NextProbe implements Command {
  constructor(readonly projectName: ProjectName) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const health = await readHealth(run, p);
    if (health.state !== 'held' || p.paused.at(-1)?.until === null) return;
    const due = health.nextProbeAt!;
    // The hold's own probes: an operator's keeps nothing of its schedule (SPEC section 13).
    const probed = () => run.receiver.probes.filter((probe) => probe.project === p.name && probe.arrivedAt >= health.since! && !model.askedFor(probe));
    // (Checked while not yet due: one due may be claimed already, on its way.)
    if (probed().length === 0 && run.clock.now() < due && due !== health.since! + PROBE_FIRST_MS) {
      run.errors.push(`${p.name}: held since ${iso(health.since!)}, not yet probed, its first probe due ${iso(due)}, not 30 s after`);
    }
    const before = probed().length;
    while (run.clock.now() < due) await jump(run, Math.min(MAX_JUMP_MS, due - run.clock.now()));
    const after = await eventually(async () => ({ answered: probed().slice(before).some((probe) => probe.endedAt !== null), health: await readHealth(run, p) }), {
      what: `${p.name}'s probe due ${iso(due)} sent and its outcome recorded`,
      until: ({ answered, health: now }) => answered && (now.state !== 'held' || now.nextProbeAt !== due),
      withinMs: 5_000,
      everyMs: 20,
    });
    const probe = probed()[before]!;
    const succeeded = probeSucceeded(probe, p);
    if (succeeded !== (after.health.state !== 'held')) {
      run.errors.push(`${p.name}: probe answered ${probe.status ?? 'nothing'} at ${iso(probe.arrivedAt)}, and the project is ${after.health.state} after it`);
    }
    // A failed probe, claimed between its due time and its arrival, sets the next one the doubled interval after its claim.
    const interval = probeIntervalOf(before + 1);
    const next = after.health.nextProbeAt;
    if (after.health.state === 'held' && (next === null || next < due + interval || next > probe.arrivedAt + interval)) {
      run.errors.push(`${p.name}: probe ${before + 1} (due ${iso(due)}, sent ${iso(probe.arrivedAt)}) failed, and the next is due ${next === null ? 'never' : iso(next)}, not ${interval} ms after it`);
    }
  }
  toString = () => `next-probe(${this.projectName})`;
}

/**
 * An operator's probe now (POST /manage/v1/projects/:id/probe, SPEC section 13): a test delivery
 * at once, answered by the receiver's mode, whether or not the project is held. Its answer says
 * how it went; a success ends a hold at once, a failure changes nothing of it (the hold's own
 * probes keep their schedule: holdViolations checks them without this one).
 */
class ProbeNow implements Command {
  constructor(readonly projectName: ProjectName) {}
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const before = await readHealth(run, p);
    const from = run.clock.now();
    const res = await run.service.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/probe` });
    model.probesNow.push({ project: p.name, from, until: run.clock.now() });
    if (res.statusCode !== 200) {
      run.errors.push(`${p.name}: POST …/probe answered ${res.statusCode}: ${res.body}`);
      return;
    }
    const answer = res.json() as { outcome: string; statusCode: number | null };
    const after = await readHealth(run, p);
    const succeeded = answer.outcome === 'success';
    if (before.state === 'held' && succeeded && after.state === 'held') {
      run.errors.push(`${p.name}: a probe asked for answered ${answer.statusCode} (success), and the project is still held`);
    }
    // (Unless the hold's own next probe fell due meanwhile and went out beside this one.)
    const ownDueMeanwhile = before.nextProbeAt !== null && before.nextProbeAt <= run.clock.now() + 1_000;
    if (before.state === 'held' && !succeeded && !ownDueMeanwhile && (after.state !== 'held' || after.nextProbeAt !== before.nextProbeAt)) {
      run.errors.push(`${p.name}: a probe asked for failed (${answer.outcome}), and the hold went from next probe ${before.nextProbeAt} to ${after.state}, ${after.nextProbeAt}`);
    }
  }
  toString = () => `probe-now(${this.projectName})`;
}

/** Whether another job of `job`'s key, in flight at a kill, is not yet final. */
async function heldByKilledClaim(run: Run, job: ModelJob): Promise<boolean> {
  const p = run.model.projects.get(job.project)!;
  for (const other of run.model.jobs.values()) {
    if (other === job || other.project !== job.project || other.key !== job.key || !run.model.maybeRepeated(other.id)) continue;
    if (['DISPATCHED', 'STARTED', 'QUEUED'].includes((await readJob(run.service, p, other.id)).status as string)) return true;
  }
  return false;
}

/**
 * Liveness in real time: soon no job of such a project waits past its due time. A loop asleep
 * while due jobs wait (until its 30 s safety wake-up) fails it; nothing legitimate waits 10 s.
 */
async function untilNothingOverdue(run: Run): Promise<void> {
  await eventually(() => overdueJobs(run), { what: 'every due job under way, time passing as it does', until: (left) => left.length === 0, withinMs: 10_000, everyMs: 50 });
}

class NothingOverdue implements Command {
  check = () => true;
  async run(_model: DeliveryModel, run: Run): Promise<void> {
    await untilNothingOverdue(run);
  }
  toString = () => 'nothing-overdue';
}

class TimePasses implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(_model: DeliveryModel, run: Run): Promise<void> {
    await jump(run, this.ms);
  }
  toString = () => `advance(${this.ms})`;
}

/** A schedule firing every second or every other second, as users of the every-second kind do. */
class CreateSchedule implements Command {
  constructor(readonly projectName: ProjectName, readonly everySeconds: 1 | 2, readonly catchUp: 'latest' | 'none' | 'all') {}
  check = (model: DeliveryModel) => model.schedules.size < 3;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const p = model.projects.get(this.projectName)!;
    const cron = this.everySeconds === 1 ? '* * * * * *' : '*/2 * * * * *';
    const res = await run.service.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron, payload: { from: 'schedule' }, catchUp: this.catchUp } });
    if (res.statusCode !== 201) {
      run.errors.push(`schedule creation answered ${res.statusCode}: ${res.body}`);
      return;
    }
    const id = res.json().scheduleId as string;
    model.schedules.set(id, { id, project: p.name, intervalMs: this.everySeconds * 1000, catchUp: this.catchUp, createdAt: Date.parse(res.json().createdAt as string), paused: [] });
    run.scheduleIds.push(id);
  }
  toString = () => `schedule(${this.projectName}, every ${this.everySeconds} s, ${this.catchUp})`;
}

class PauseSchedule implements Command {
  constructor(readonly pick: number, readonly paused: boolean) {}
  check = (model: DeliveryModel) => model.schedules.size > 0;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const schedule = model.schedules.get(run.scheduleIds[this.pick % run.scheduleIds.length]!)!;
    await setSchedulePaused(run, schedule.id, this.paused);
  }
  toString = () => `${this.paused ? 'pause' : 'resume'}-schedule(#${this.pick})`;
}

async function setSchedulePaused(run: Run, scheduleId: string, paused: boolean): Promise<void> {
  const schedule = run.model.schedules.get(scheduleId)!;
  const p = run.model.projects.get(schedule.project)!;
  const requestedAt = run.clock.now();
  const res = await run.service.api(p.key, { method: 'PATCH', url: `/api/schedules/${scheduleId}`, payload: { paused } });
  if (res.statusCode !== 200) {
    run.errors.push(`schedule ${paused ? 'pause' : 'resume'} answered ${res.statusCode}: ${res.body}`);
    return;
  }
  const open = schedule.paused.at(-1);
  if (paused && !(open && open.until === null)) schedule.paused.push({ from: run.clock.now(), until: null });
  if (!paused && open && open.until === null) open.until = requestedAt;
}

class KillAndRestart implements Command {
  check = () => true;
  async run(model: DeliveryModel, run: Run): Promise<void> {
    const inFlight = new Set(run.receiver.deliveries.filter((d) => d.endedAt === null || d.status === 202).map((d) => d.jobId));
    // A job the dying instance had started but not yet sent may go out afterwards too.
    for (const d of run.receiver.deliveries) inFlight.add(d.jobId);
    // A job due by now (or within the claim's lookahead) may be claimed by the dying instance, not
    // yet started: it waits for that claim's lease, and jobs due after it may go first meanwhile.
    const now = run.clock.now();
    for (const job of model.jobs.values()) if (model.dueAt(job, now) <= now + 1_000) inFlight.add(job.id);
    model.kills.push({ at: run.clock.now(), inFlight });
    await run.service.kill();
    run.receiver.generation += 1;
    await run.service.restart();
  }
  toString = () => 'kill-and-restart';
}

const commands = [
  fc.record({ p: project, delays: fc.array(delay, { minLength: 1, maxLength: 6 }) }).map(({ p, delays }) => new Dispatch(p, delays)),
  fc.record({ p: project, delays: fc.array(delay, { minLength: 2, maxLength: 6 }) }).map(({ p, delays }) => new Dispatch(p, delays, true)),
  // Keys (SPEC section 15): jobs of two keys and none, in a batch, their order and per-key limit checked.
  fc
    .record({ p: project, jobs: fc.array(fc.record({ d: delay, key: fc.constantFrom<string | null>('k1', 'k2', null) }), { minLength: 1, maxLength: 6 }) })
    .map(({ p, jobs }) => new Dispatch(p, jobs.map((j) => j.d), false, jobs.map((j) => j.key))),
  fc.record({ p: project, n: fc.integer({ min: 1, max: 2 }) }).map(({ p, n }) => new ProjectSetting(p, { keyConcurrency: n })),
  fc.record({ p: project, delays: fc.array(fc.constantFrom<number | null>(null, 30), { minLength: 1, maxLength: 3 }), holdMs: fc.integer({ min: 20, max: 200 }) }).map(
    ({ p, delays, holdMs }) => new DispatchBesideReservation(p, delays, holdMs),
  ),
  fc.nat().map((pick) => new Cancel(pick)),
  fc.nat().map((pick) => new ReadStatus(pick)),
  fc.record({ pick: fc.nat(), d: delay }).map(({ pick, d }) => new Reschedule(pick, d)),
  fc.record({ p: project, paused: fc.boolean() }).map(({ p, paused }) => new ProjectSetting(p, { paused })),
  fc.record({ p: project, n: fc.integer({ min: 1, max: 4 }) }).map(({ p, n }) => new ProjectSetting(p, { deliveryConcurrency: n })),
  fc.record({ p: project, r: fc.option(fc.integer({ min: 2, max: 20 }), { nil: null }) }).map(({ p, r }) => new ProjectSetting(p, { deliveryRatePerSecond: r })),
  fc.record({ p: project, mode: fc.constantFrom<ReceiverMode>('ok', 'fail', 'busy', 'slow', 'accept', 'hang') }).map(({ p, mode }) => new ReceiverAnswers(p, mode)),
  fc.integer({ min: 10, max: 400 }).map((ms) => new Wait(ms)),
  fc.constant(null).map(() => new NothingOverdue()),
  fc.integer({ min: 1_000, max: MAX_JUMP_MS }).map((ms) => new TimePasses(ms)),
  fc.constant(null).map(() => new KillAndRestart()),
  fc.record({ p: project, every: fc.constantFrom<1 | 2>(1, 2), catchUp: fc.constantFrom<'latest' | 'none' | 'all'>('latest', 'none', 'all') }).map(
    ({ p, every, catchUp }) => new CreateSchedule(p, every, catchUp),
  ),
  fc.record({ pick: fc.nat(), paused: fc.boolean() }).map(({ pick, paused }) => new PauseSchedule(pick, paused)),
  // Receiver health (SPEC section 13): holdOnFailure on or off, a receiver failing, probes.
  fc.record({ p: project, hold: fc.boolean() }).map(({ p, hold }) => new ProjectSetting(p, { holdOnFailure: hold })),
  project.map((p) => new NextProbe(p)),
  project.map((p) => new ProbeNow(p)),
  fc.record({ p: project, probes: fc.integer({ min: 0, max: 3 }) }).map(({ p, probes }) => new ReceiverOutage(p, probes)),
  // Twice as likely as one entry: a hold needs an outage, and project a's holdOnFailure (b's once set).
  fc.record({ probes: fc.integer({ min: 0, max: 3 }) }).map(({ probes }) => new ReceiverOutage('a', probes)),
];

async function setUp(): Promise<Run> {
  const clock = new OffsetClock();
  const receiver = await new ModelReceiver(clock).start();
  const service = await ModelService.open(clock);
  const model = new DeliveryModel();
  const run: Run = { service, receiver, clock, model, jobIds: [], scheduleIds: [], stoppedLooking: 0, errors: [] };
  for (const name of PROJECTS) {
    const asyncCompletion = name === 'b';
    const team = await service.admin({ method: 'POST', url: '/manage/v1/teams', payload: { name: `team ${name}`, plan: 'unlimited' } });
    const created = await service.admin({ method: 'POST', url: `/manage/v1/teams/${team.json().teamId}/projects`, payload: { name, webhookUrl: receiver.urlOf(name) } });
    const projectId = created.json().projectId as string;
    // Project a holds its jobs while its receiver is down (SPEC section 13) from the start; b only once a command says so.
    const holdOnFailure = name === 'a';
    const settings = { holdOnFailure, deliveryConcurrency: 2, deliveryTimeoutMs: 1_000, retryPolicy: { maxRetries: 2, ...POLICY }, asyncCompletion, asyncCompletionTimeoutMs: 5_000 };
    const patched = await service.admin({ method: 'PATCH', url: `/manage/v1/projects/${projectId}`, payload: settings });
    expect(patched.statusCode, patched.body).toBe(200);
    const key = await service.admin({ method: 'POST', url: `/manage/v1/projects/${projectId}/keys`, payload: { name: 'model' } });
    const at = clock.now();
    model.addProject({ name, projectId, key: key.json().key, asyncCompletion, concurrency: [{ since: at, value: 2 }], rate: [{ since: at, value: null }], keyConcurrency: [{ since: at, value: 1 }], paused: [], holdOnFailure: [{ since: at, requestedAt: at, value: holdOnFailure }] });
  }
  // An accepted delivery is reported on a little later, as a receiver finishing the work would.
  receiver.onAccepted = (delivery) => {
    setTimeout(() => {
      void service
        .api(delivery.callbackToken ?? '', { method: 'POST', url: `/api/jobs/${delivery.jobId}/attempts/${delivery.attemptId}/result`, payload: { outcome: 'success' } })
        .catch(() => {});
    }, 50);
  };
  return run;
}

/**
 * The end of a run: every project resumed and answering 200, time moved past every due time,
 * lease and probe, until no job is waiting or in flight and no project held. Then every job the model knows is final, as its
 * history says it must be.
 */
async function settle(run: Run): Promise<string[]> {
  const { model, service, receiver } = run;
  // Schedules stop here: what they made is checked up to this instant.
  run.stoppedLooking = run.clock.now();
  for (const scheduleId of model.schedules.keys()) await setSchedulePaused(run, scheduleId, true);
  for (const p of model.projects.values()) {
    receiver.setMode(p.name, 'ok');
    await new ProjectSetting(p.name as ProjectName, { paused: false, deliveryRatePerSecond: null }).run(model, run);
  }
  const unfinished = async () => {
    const left: string[] = [];
    for (const job of model.jobs.values()) {
      const p = model.projects.get(job.project)!;
      const status = (await readJob(service, p, job.id)).status as string;
      if (!['COMPLETED', 'FAILED', 'CANCELLED'].includes(status)) left.push(`${job.id}:${status}`);
    }
    // A held project's receiver answers 200 now: its next probe (time jumps to it) ends the hold.
    for (const p of model.projects.values()) if ((await readHealth(run, p)).state === 'held') left.push(`${p.name}:held`);
    return left;
  };
  // Liveness first, before time is made to jump (a jump wakes every loop and hides a stall).
  await untilNothingOverdue(run);
  await eventually(
    async () => {
      await jump(run, MAX_JUMP_MS);
      await new Promise((resolve) => setTimeout(resolve, 100));
      return unfinished();
    },
    { what: 'every job final', until: (left) => left.length === 0, withinMs: 120_000, everyMs: 50 },
  );
  const problems: string[] = [];
  for (const job of model.jobs.values()) {
    const p = model.projects.get(job.project)!;
    const body = await readJob(service, p, job.id);
    if (job.cancelledAt !== null && body.status !== 'CANCELLED') problems.push(`${job.id} was cancelled (200) but ended ${body.status as string}`);
    if (body.status === 'CANCELLED' && job.cancelledAt === null) problems.push(`${job.id} ended CANCELLED, but no cancel of it was answered 200`);
    const own = receiver.deliveries.filter((d) => d.jobId === job.id);
    if (body.status === 'COMPLETED' && !own.some((d) => d.status === 200 || d.status === 202)) problems.push(`${job.id} COMPLETED with no successful delivery`);
  }
  return problems;
}

async function scheduleJobsOf(run: Run): Promise<ScheduleJob[]> {
  const jobs: ScheduleJob[] = [];
  for (const schedule of run.model.schedules.values()) {
    const p = run.model.projects.get(schedule.project)!;
    for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
      const page = (await run.service.api(p.key, { method: 'GET', url: `/api/jobs?scheduleId=${schedule.id}&limit=100${cursor ? `&cursor=${cursor}` : ''}` })).json();
      for (const job of page.jobs as Record<string, string>[]) {
        jobs.push({ jobId: job.jobId!, scheduleId: schedule.id, fireAt: Date.parse(job.scheduledFor!), createdAt: Date.parse(job.createdAt!), status: job.status! });
      }
      cursor = page.nextCursor as string | null;
    }
  }
  return jobs;
}

/** The projects' webhook.held and webhook.recovered events (recorded whether or not a project has an eventsUrl). */
async function healthEventsOf(run: Run): Promise<{ project: string; type: string; occurredAt: number; data: Record<string, unknown> }[]> {
  const events: { project: string; type: string; occurredAt: number; data: Record<string, unknown> }[] = [];
  for (const p of run.model.projects.values()) {
    for (let beforeSeq: number | null = null, more = true; more; ) {
      const page = await run.service.store.eventList({ projectId: p.projectId, beforeSeq, limit: 500 });
      for (const e of page) if (e.type === 'webhook.held' || e.type === 'webhook.recovered') events.push({ project: p.name, type: e.type, occurredAt: e.occurredAt, data: JSON.parse(e.data) as Record<string, unknown> });
      more = page.length === 500;
      beforeSeq = page.at(-1)?.seq ?? null;
    }
  }
  return events;
}

async function attemptsOf(run: Run): Promise<Map<string, AttemptRow[]>> {
  const attempts = new Map<string, AttemptRow[]>();
  for (const jobId of run.model.jobs.keys()) attempts.set(jobId, await run.service.store.attemptListByJob(jobId));
  return attempts;
}

async function runSequence(cmds: Iterable<Command>): Promise<void> {
  const run = await setUp();
  try {
    await fc.asyncModelRun(() => ({ model: run.model, real: run }), cmds);
    const settled = await settle(run);
    const attempts = await attemptsOf(run);
    const broken = [
      ...run.errors,
      ...settled,
      ...violations(run.model, run.receiver.deliveries, attempts),
      ...scheduleViolations(run.model, await scheduleJobsOf(run), run.receiver.deliveries, run.stoppedLooking),
      ...holdViolations(run.model, holdSpans(run.model, await healthEventsOf(run)), run.receiver.probes, attempts),
    ];
    if (process.env.MODEL_DEBUG) console.log('holds', JSON.stringify(holdSpans(run.model, await healthEventsOf(run))), 'probes', JSON.stringify(run.receiver.probes));
    if (broken.length > 0 && process.env.MODEL_DEBUG) {
      for (const job of run.model.jobs.values()) {
        console.log(job.id, job.project, JSON.stringify({ createdAt: job.createdAt, dues: job.dues, cancelledAt: job.cancelledAt }));
        for (const d of run.receiver.deliveries.filter((x) => x.jobId === job.id)) console.log('  delivery', JSON.stringify(d));
        for (const a of attempts.get(job.id) ?? []) console.log('  attempt', JSON.stringify(a));
      }
    }
    expect(broken).toEqual([]);
  } finally {
    await run.service.close();
    await run.receiver.close();
  }
}

/**
 * The most a property may take, shrinking included: a failure found late shrinks for minutes, and
 * CI has 20. Past it fast-check stops and reports the smallest failing sequence found so far.
 */
const TIME_LIMIT_MS = Number(process.env.MODEL_TIME_LIMIT_MS ?? RUNS * 45_000 + 60_000);

/**
 * Sequences once found broken, shrunk, run as they are on every run: each failed before its fix
 * (the first two every time, the third about one run in two); the seed named where a random one
 * found it.
 */
const ONCE_BROKEN: [what: string, commands: () => Command[]][] = [
  [
    // Found by a test under load (98259ca), not by the model, until the model had the command: a
    // claimed job waited here for room a dispatch had reserved; the dispatch gave it back unused and
    // nothing started the waiting job until its lease ran out.
    'a claimed job waiting for room a dispatch reserved starts once that room comes back unused',
    () => [new DispatchBesideReservation('a', [null, null], 100), new NothingOverdue()],
  ],
  [
    // MODEL_SEED=1610412308: the key's next job, released when the first one's outcome was recorded,
    // was overtaken by a later-due job of another key held claimed ahead, which took the slot the
    // answer freed before a claim could see the key's turn. The seed's run had a slow answer by
    // chance (a busy machine); here the receiver is slow on purpose, so that the job of k1 is
    // claimed ahead while the first of k2 runs.
    "a key's next job is not overtaken by a job held ahead when the key's first one is answered",
    () => [
      new ReceiverAnswers('a', 'slow'),
      new Dispatch('a', [30, 30, 319_859, 124_689, 100], false, ['k2', 'k2', 'k2', 'k2', 'k1']),
      new ProjectSetting('a', { deliveryConcurrency: 1 }),
    ],
  ],
  [
    // MODEL_SEED=1234856035 (about one run in two fails without the fix): a rated project's due job,
    // held here until its next token, was overtaken by later jobs a claim started at once once the
    // rate was gone (the settle removes it) and the clock had passed the token's time.
    "a due job waiting here for its project's token is not overtaken by jobs a claim starts at once",
    () => [
      new ProjectSetting('a', { deliveryRatePerSecond: 13 }),
      new ReceiverOutage('b', 1),
      new Dispatch('a', [116, null, 468_137, null], true),
      new Dispatch('a', [102, 69, 833_582], false, [null, 'k1', null]),
    ],
  ],
  [
    // Not found by the model until ReceiverOutage counted the deliveries before the hold: the answer
    // of the 10th failure freed its slot and the project's next waiting job started before the
    // failure's health write (which holds the project) committed, spending an attempt.
    'a project with holdOnFailure is held at once: nothing starts after the 10th failure but what was under way',
    () => [new ReceiverOutage('a')],
  ],
];

describe('the delivery rules against a model (fast-check)', () => {
  for (const [what, commandsOf] of ONCE_BROKEN) {
    it(`holds for a sequence once broken: ${what}`, () => runSequence(commandsOf()), 60_000);
  }
  for (const [name, seed] of [
    ['a fixed seed', FIXED_SEED],
    [`a random seed (${RANDOM_SEED}; MODEL_SEED=${RANDOM_SEED} repeats it)`, RANDOM_SEED],
  ] as const) {
    it(`holds for every command sequence from ${name}`, async () => {
      await fc.assert(fc.asyncProperty(fc.commands(commands, { maxCommands: 25, ...(process.env.MODEL_REPLAY && { replayPath: process.env.MODEL_REPLAY }) }), runSequence), { numRuns: RUNS, seed, verbose: 1, interruptAfterTimeLimit: TIME_LIMIT_MS, endOnFailure: process.env.MODEL_NO_SHRINK === '1', ...(process.env.MODEL_PATH && { path: process.env.MODEL_PATH, endOnFailure: true }) });
    }, TIME_LIMIT_MS + 60_000);
  }
});
