import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import type { ClaimedJob, ProjectRow, StartedAttempt, StartedJob } from '../store/store.js';
import type { RateLimiter } from '../rate-limits/token-bucket.js';
import { Capacity } from './capacity.js';
import { claimRule, leaseMs, type ClaimRule } from './capacity-rules.js';
import { deliverAttempt, type DeliveryDeps } from './deliver-attempt.js';
import { RatedStarts } from './delivery-rate.js';
import { LeaseKeeper } from './lease-keeper.js';
import { loadWaiting, StartQueue, type Waiting } from './start-queue.js';
import { AheadTimer } from './ahead-timer.js';
import { HoldTimers } from './hold-timers.js';
import { UnrecordedAttempts } from './unrecorded-attempts.js';

/** After aborting at the shutdown deadline, how long recording those attempts may take. */
const ABORT_RECORD_TIMEOUT_MS = 3_000;

/**
 * Starts the attempts of the jobs this worker holds, as the capacity model (capacity.ts) allows:
 * jobs claimed ahead wait for their time (StartQueue), due ones start in due order per project
 * while the project has a free slot and nothing holds it back (a receiver's Retry-After, the rate's
 * next token). It does not decide what to claim; it tells the claim loop when room frees.
 */
export class AttemptRunner {
  readonly capacity: Capacity;
  private readonly queue = new StartQueue();
  private readonly leases: LeaseKeeper;
  private readonly aheadTimer: AheadTimer;
  private readonly holdTimers: HoldTimers;
  private readonly unrecorded = new UnrecordedAttempts();
  private readonly shutdown = new AbortController();
  /** Starts of rated projects, which wait for their tokens (null without a rate limiter). */
  private readonly rated: RatedStarts | null;
  /** Called when room frees, so a claim loop starved of it claims again. */
  onCapacity: () => void = () => {};
  /**
   * An attempt of a job with a concurrencyKey was recorded: its key's next job may have become
   * claimable (SPEC section 15), which no enqueue announces. The claim loop looks again; settles
   * once a claim begun after the call has handed over what it took (ClaimLoop.lookAgain).
   */
  onKeyTurn: () => Promise<void> = async () => {};

  constructor(
    private readonly deps: DeliveryDeps & {
      globalConcurrency: number;
      signingSecrets: (projectId: string) => Promise<string[]>;
      log: FastifyBaseLogger;
      /** Buckets for projects' deliveryRatePerSecond: in Redis (shared by instances) with REDIS_URL, else in this process. */
      rateLimiter?: RateLimiter;
    },
  ) {
    this.capacity = new Capacity(deps.globalConcurrency);
    this.leases = new LeaseKeeper({ store: deps.store, clock: deps.clock, workerId: deps.workerId, log: deps.log });
    this.aheadTimer = new AheadTimer(this.queue, deps.clock, (projectId) => this.pump(projectId));
    this.holdTimers = new HoldTimers(this.capacity, deps.clock, (projectId) => this.roomFreed(projectId));
    this.rated = deps.rateLimiter
      ? new RatedStarts({
          limiter: deps.rateLimiter,
          clock: deps.clock,
          log: deps.log,
          capacity: this.capacity,
          runNext: (projectId) => this.run(this.queue.take(projectId)!),
          holdUntil: (projectId, until) => this.holdProject(projectId, until),
          done: (projectId) => this.pump(projectId),
        })
      : null;
    // Every attempt in flight listens on the one shutdown signal: hundreds of listeners is expected.
    setMaxListeners(0, this.shutdown.signal);
  }

  /** The numbers a claim applies per project (the capacity model's claim limit). */
  get claimRule(): ClaimRule {
    return claimRule(this.deps.globalConcurrency);
  }

  /** Whether this worker holds the job (waiting, held for its time or in flight). */
  holds(jobId: string): boolean {
    return this.leases.holds(jobId);
  }

  /**
   * Room to start up to `wanted` of the project's jobs as they are created
   * (Capacity.reserveStartAtEnqueue); returns how many. The room is held until `submitStarted`
   * (given the reservation) or `unreserve` gives it back.
   */
  reserveStart(project: ProjectRow, wanted: number, dueNow: number): number {
    return this.capacity.reserveStartAtEnqueue(project, wanted, this.deps.clock.now(), dueNow);
  }

  /** Gives back room reserved for jobs that were not created after all. */
  unreserve(projectId: string, count: number): void {
    this.capacity.unreserve(projectId, count, this.deps.clock.now());
    this.roomFreed(projectId);
  }

  /**
   * The project may start again (room reserved at enqueue came back, a hold ended): its jobs due
   * here start, and a claim starved of room claims again; nothing else would start them.
   */
  private roomFreed(projectId: string): void {
    this.pump(projectId);
    this.onCapacity();
  }

  /**
   * Starts, in due order, jobs held ahead whose time the clock has passed (it jumped; their timer
   * runs in real time): before a claim reads the time and reserves its starts, so that none it
   * starts at once overtakes them.
   */
  startOverdueHeld(): void {
    for (const projectId of this.queue.releaseAhead(this.deps.clock.now())) this.pump(projectId);
  }

  /** For a claim about to run: what it may start at once (Capacity.reserveClaimStarts), none of a project with a due job waiting here. */
  reserveClaimStarts(): Record<string, number> {
    return this.capacity.reserveClaimStarts(this.deps.clock.now(), (projectId) => this.queue.dueOf(projectId) > 0);
  }

  start(): void {
    this.leases.start();
  }

  async renewLeases(): Promise<void> {
    await this.leases.renew();
  }

  /**
   * Takes a claimed batch: counts it held at once (before anything is awaited, so that no claim or
   * enqueue takes the same room meanwhile), loads each project and its secrets once, then starts
   * what the capacity model allows.
   */
  async submit(jobs: ClaimedJob[]): Promise<void> {
    // Jobs claimed with their attempt STARTED were held by the claim's reservation (reserveClaimStarts).
    for (const job of jobs) if (!job.started) this.capacity.hold(job.projectId, 1);
    const targets = await this.targets(jobs);
    const now = this.deps.clock.now();
    // Jobs held ahead whose time has come (the clock moved on faster than their timer: a jump)
    // join the due queues before these, so that a job due later never starts first.
    const due = this.queue.releaseAhead(now);
    for (const entry of targets) {
      this.leases.hold(entry.job.id, leaseMs(entry.project));
      if (entry.job.started) {
        this.capacity.start(entry.project.id);
        this.run(entry, entry.job.started);
      } else if (!this.queue.add(entry, now)) due.add(entry.project.id);
    }
    for (const projectId of due) this.pump(projectId);
    this.aheadTimer.arm();
  }

  /**
   * Takes jobs created with their first attempt already STARTED under a reservation (reserveStart):
   * their requests go out at once, in the order they were created.
   */
  async submitStarted(started: StartedJob[], reserved: { projectId: string; count: number }): Promise<void> {
    const shortfall = reserved.count - started.length;
    if (shortfall > 0) this.capacity.unreserve(reserved.projectId, shortfall, this.deps.clock.now());
    const attempts = new Map(started.map(({ job, attempt }) => [job.id, attempt]));
    const reservedRoom = (job: ClaimedJob, now: number) => this.capacity.unreserve(job.projectId, 1, now);
    let entries: Waiting[];
    try {
      entries = await this.targets(started.map(({ job }) => job), reservedRoom);
    } catch (error) {
      // Every reserved place came back: a claimed job of the project may be waiting for one.
      this.roomFreed(reserved.projectId);
      throw error;
    }
    for (const entry of entries) {
      this.leases.hold(entry.job.id, leaseMs(entry.project));
      this.capacity.startReserved(entry.project.id);
      this.run(entry, attempts.get(entry.job.id));
    }
    if (shortfall > 0) this.roomFreed(reserved.projectId);
  }

  /**
   * The jobs with their projects and signing secrets (loadWaiting). If that fails, the jobs are
   * still leased in the store (the lease rescue returns them) and their room here is free again
   * (`giveBack`: a claimed job's hold by default).
   */
  private async targets(jobs: ClaimedJob[], giveBack = (job: ClaimedJob, now: number) => this.capacity.release(job.projectId, 1, now)): Promise<Waiting[]> {
    try {
      return await loadWaiting(this.deps, this.capacity, jobs);
    } catch (error) {
      const now = this.deps.clock.now();
      for (const job of jobs) giveBack(job, now);
      throw error;
    }
  }

  /** The project's settings changed here: its waiting jobs start by the new ones (more, or fewer, at once). */
  projectChanged(project: ProjectRow): void {
    this.capacity.settingsChanged(project);
    this.pump(project.id);
    this.onCapacity();
  }

  /** The project's next attempt waits until `until` (a rate's next token, a receiver's Retry-After); a later hold wins. */
  holdProject(projectId: string, until: number): void {
    this.holdTimers.hold(projectId, until);
  }

  /** Starts the project's due jobs, in due order, while the capacity model allows. */
  private pump(projectId: string): void {
    for (let next = this.queue.peek(projectId); next; next = this.queue.peek(projectId)) {
      if (this.rated?.taking(projectId) || !this.capacity.mayStart(next.project, this.deps.clock.now())) return;
      if (next.project.deliveryRatePerSecond !== null && this.rated) {
        this.rated.start(next.project, this.queue.dueOf(projectId));
        return;
      }
      this.capacity.start(projectId);
      this.run(this.queue.take(projectId)!);
    }
  }

  /** Runs an attempt whose start the capacity model has counted; `started` when its STARTED is recorded already. */
  private run({ job, project, secrets }: Waiting, started?: StartedAttempt): void {
    this.unrecorded.add();
    this.deps.metrics.inFlight.inc();
    // The slot is the receiver's: it frees as soon as the answer is in, while the outcome is still
    // being written, so the project's next job goes out meanwhile (unless the answer may hold the
    // project, below). The lease is held (and renewed) until the outcome is recorded.
    let slotFreed = false;
    // A keyed job's answer begins a key turn (key-turns.ts): the project's next start
    // waits for the outcome to be recorded and for a claim to look for the key's next job.
    const keyed = job.concurrencyKey !== null;
    // A failure that may hold the project (SPEC section 13: at once) holds its starts back here
    // until its health write has answered, which deliverAttempt then waits for.
    let heldBackForHealth = false;
    const freeSlot = (receiverDown = false): boolean => {
      if (slotFreed) return false;
      slotFreed = true;
      this.deps.metrics.inFlight.dec();
      if (keyed) this.capacity.keyTurnBegan(project.id);
      heldBackForHealth = receiverDown && this.capacity.holdBackForHealthWrite(project);
      this.capacity.finish(project.id, this.deps.clock.now());
      this.pump(project.id);
      this.onCapacity();
      return heldBackForHealth;
    };
    deliverAttempt(this.deps, job, project, secrets, this.shutdown.signal, freeSlot, started)
      .catch((error: unknown) => {
        // The lease stays; the rescuer retries the job once it expires.
        this.deps.log.error({ err: error, jobId: job.id }, 'delivery attempt could not be recorded');
      })
      .finally(() => {
        try {
          freeSlot();
          this.leases.drop(job.id);
          this.unrecorded.recorded();
        } finally {
          if (heldBackForHealth) {
            this.capacity.healthWriteEnded(project.id, this.deps.clock.now());
            this.roomFreed(project.id);
          }
          if (keyed) this.lookForKeysNext(project.id);
        }
      });
  }

  /** A keyed job's outcome is recorded: once a claim has looked for its key's next job, the project's starts go on. */
  private lookForKeysNext(projectId: string): void {
    this.capacity.keyTurnRecorded(projectId);
    this.onKeyTurn()
      .catch((error: unknown) => this.deps.log.error({ err: error, projectId }, "looking for a key's next job failed"))
      .finally(() => {
        this.capacity.keyTurnLooked(projectId, this.deps.clock.now());
        this.pump(projectId);
      });
  }

  /** Stops every timer; what is held but not started is forgotten (the store releases or rescues it). */
  private stopTimers(): void {
    this.aheadTimer.stop();
    this.holdTimers.stop();
    this.leases.stop();
    for (const { job } of this.queue.clear()) this.leases.drop(job.id);
    this.capacity.releaseAllHeld();
  }

  /**
   * For shutdown: forget jobs not yet started (the store releases them), give in-flight attempts
   * up to `timeoutMs` to finish, then abort the rest, which are recorded and queued again at once
   * without spending their retry budget. Resolves true when everything finished by itself.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    this.stopTimers();
    if (await this.unrecorded.none(timeoutMs)) return true;
    this.shutdown.abort();
    await this.unrecorded.none(ABORT_RECORD_TIMEOUT_MS);
    return false;
  }

  /**
   * A crash: every timer stopped, nothing released, aborted or recorded (the lease rescue finds the
   * jobs; the caller closes the sender and the store under what was in flight).
   */
  halt(): void {
    this.stopTimers();
  }
}
