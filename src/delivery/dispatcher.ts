import { setMaxListeners } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { CLAIM_AHEAD_FACTOR, type ClaimedJob, type ProjectRow } from '../store/store.js';
import type { BucketRate, RateLimiter } from '../rate-limits/token-bucket.js';
import { deliverAttempt, LEASE_MARGIN_MS, type DeliveryDeps } from './deliver-attempt.js';

/**
 * A project's delivery rate as a token bucket: refilled at the rate, holding a twentieth of a
 * second's worth (at least one token). The few tokens it can hold make up for timers that fire a
 * little late, which would otherwise add up over a long backlog (each start waiting for the next
 * token); they let a second start at most that many attempts over the rate.
 */
export function deliveryBucket(ratePerSecond: number): BucketRate {
  return { requestsPerSecond: ratePerSecond, burst: Math.max(1, Math.ceil(ratePerSecond / 20)) };
}

/**
 * How many of a project's jobs one instance holds claimed at most: twice its concurrency, so that
 * when a slot frees the next job is already here (no claim's round trip through the store between
 * two requests) while the rest wait QUEUED, cancellable; for a project with a delivery rate no more
 * than a tenth of a second's worth (at least one), so that jobs over the rate wait QUEUED in the
 * store, not claimed here (SPEC section 11). The claim's SQL says the same (CLAIM_LIMIT).
 */
function claimLimit(project: ProjectRow): number {
  const ahead = CLAIM_AHEAD_FACTOR * project.deliveryConcurrency;
  if (project.deliveryRatePerSecond === null) return ahead;
  return Math.min(ahead, Math.max(1, Math.ceil(project.deliveryRatePerSecond / 10)));
}

/** Held leases are renewed this often; far inside the shortest lease (1 s timeout + 30 s margin). */
const LEASE_RENEW_INTERVAL_MS = 10_000;
/**
 * A job claimed ahead of its time starts this long before it: its STARTED commit (about 1 ms on
 * SQLite, a few on a busy PostgreSQL) then happens before the due time instead of delaying the
 * request, which deliverAttempt still sends no earlier than the due time. Below the scheduler's
 * claim lookahead (25 ms), so jobs are claimed early enough for it.
 */
export const START_AHEAD_MS = 10;
/**
 * When held jobs are released, those due within this much after the first go too: their starts
 * share one commit instead of one each (jobs due 2 ms apart), and each still waits for its own time.
 */
const START_BATCH_MS = 5;
/** After aborting at the shutdown deadline, how long recording those attempts may take. */
const ABORT_RECORD_TIMEOUT_MS = 3_000;

interface Waiting {
  job: ClaimedJob;
  project: ProjectRow;
  secrets: string[];
}

/**
 * Runs claimed jobs' attempts within two limits: a global one (PUNCTUAL_DELIVERY_CONCURRENCY) and
 * each project's deliveryConcurrency. A claimed job waits here, DISPATCHED and leased, until its
 * project has a free slot; the scheduler never claims more than the global limit has room for, so
 * nothing waits here for long unless one project is saturated.
 */
export class Dispatcher {
  private inFlight = 0;
  /** Attempts not yet recorded: in flight, or answered and being written. */
  private unrecorded = 0;
  private readonly inFlightByProject = new Map<string, number>();
  private readonly waiting = new Map<string, Waiting[]>();
  private waitingCount = 0;
  /** Jobs claimed ahead of their time, by runAt, each group on one timer. */
  private readonly timed = new Map<number, { entries: Waiting[]; timer: NodeJS.Timeout }>();
  private timedCount = 0;
  /** Every job this worker holds a lease on, with its lease length. */
  private readonly held = new Map<string, number>();
  private readonly idle: (() => void)[] = [];
  /** Jobs this worker holds per project (timed, waiting or in flight), and each project's limit. */
  private readonly claimedByProject = new Map<string, { count: number; limit: number }>();
  /**
   * Jobs claimed, or about to be (room reserved for jobs created already claimed), that submit has
   * not counted above yet: it reads their projects first. Counted as taken meanwhile, so that a
   * dispatch or a claim in that gap does not take the same room again.
   */
  private readonly pendingByProject = new Map<string, { count: number; limit: number }>();
  private pendingCount = 0;
  /**
   * What the scheduler's last claims may have left due in the store: jobs of the projects they left
   * out (saturated or held back) or filled to their room, and of any project while a claim came
   * back full or could not run for want of slots. A dispatch is not delivered ahead of those jobs:
   * it goes to the store and waits its turn, earliest due first.
   */
  private readonly backlogged = new Set<string>();
  private backlogEverywhere = false;
  private readonly shutdown = new AbortController();
  private renewTimer: NodeJS.Timeout | null = null;
  /** Called when a slot frees up, so a scheduler starved of capacity claims again. */
  onCapacity: () => void = () => {};
  /**
   * Projects whose next attempt must wait (SPEC section 11): their rate's next token, or a
   * receiver's 429/503 Retry-After. A timer pumps the project again at the end.
   */
  private readonly projectHolds = new Map<string, { until: number; timer: NodeJS.Timeout }>();
  /** Projects with a take of rate tokens under way (one at a time per project). */
  private readonly takingTokens = new Set<string>();

  constructor(
    private readonly deps: DeliveryDeps & {
      globalConcurrency: number;
      signingSecrets: (projectId: string) => Promise<string[]>;
      log: FastifyBaseLogger;
      /** Buckets for projects' deliveryRatePerSecond: in Redis (shared by instances) with REDIS_URL, else in this process. */
      rateLimiter?: RateLimiter;
    },
  ) {
    // Every attempt in flight listens on the one shutdown signal: hundreds of listeners is expected.
    setMaxListeners(0, this.shutdown.signal);
  }

  freeSlots(): number {
    return this.deps.globalConcurrency - this.inFlight - this.waitingCount - this.timedCount - this.pendingCount;
  }

  /** Whether this worker holds the job (waiting, held for its time or in flight). */
  holds(jobId: string): boolean {
    return this.held.has(jobId);
  }

  get inFlightCount(): number {
    return this.inFlight;
  }

  /**
   * Projects whose jobs claiming more of would only park here: every delivery slot taken by jobs
   * already claimed, or held back (rate, Retry-After). Their jobs stay QUEUED meanwhile.
   */
  saturatedProjects(): string[] {
    const full: string[] = [];
    for (const projectId of new Set([...this.claimedByProject.keys(), ...this.pendingByProject.keys()])) {
      const claimed = this.claimedByProject.get(projectId);
      const pending = this.pendingByProject.get(projectId);
      const limit = Math.min(claimed?.limit ?? Number.POSITIVE_INFINITY, pending?.limit ?? Number.POSITIVE_INFINITY);
      if ((claimed?.count ?? 0) + (pending?.count ?? 0) >= limit) full.push(projectId);
    }
    return this.projectHolds.size === 0 ? full : [...new Set([...full, ...this.projectHolds.keys()])];
  }

  /** How many jobs of each project this worker holds (timed, waiting, in flight, or being handed over). */
  heldByProject(): Record<string, number> {
    const held: Record<string, number> = {};
    for (const [projectId, { count }] of this.claimedByProject) held[projectId] = count;
    for (const [projectId, { count }] of this.pendingByProject) held[projectId] = (held[projectId] ?? 0) + count;
    return held;
  }

  /** How many more of this project's jobs this worker may hold now. */
  projectRoom(project: ProjectRow): number {
    if (this.projectHolds.has(project.id)) return 0;
    const taken = (this.claimedByProject.get(project.id)?.count ?? 0) + (this.pendingByProject.get(project.id)?.count ?? 0);
    return claimLimit(project) - taken;
  }

  /**
   * Reserves room for up to `wanted` of the project's jobs about to be created already claimed for
   * this worker; returns how many. The room is taken until `submit` (given the reservation) or
   * `unreserve` gives it back.
   */
  reserve(project: ProjectRow, wanted: number): number {
    if (this.backlogEverywhere || this.backlogged.has(project.id)) return 0;
    const count = Math.max(0, Math.min(wanted, this.freeSlots(), this.projectRoom(project)));
    // The jobs without room wait in the store: later ones must not overtake them.
    if (count < wanted) {
      if (this.freeSlots() <= 0) this.backlogEverywhere = true;
      else this.backlogged.add(project.id);
    }
    if (count === 0) return 0;
    this.countPending(project.id, count, claimLimit(project));
    return count;
  }

  /**
   * The scheduler's claim is done: `complete` when it took every due job it could (fewer than its
   * limit), `leftBehind` the projects whose due jobs it may have left in the store.
   */
  noteClaim(complete: boolean, leftBehind: Iterable<string>): void {
    this.backlogEverywhere = !complete;
    if (complete) this.backlogged.clear();
    for (const projectId of leftBehind) this.backlogged.add(projectId);
  }

  /** Gives back room reserved for jobs that were not claimed after all. */
  unreserve(projectId: string, count: number): void {
    this.countPending(projectId, -count);
  }

  private countPending(projectId: string, delta: number, limit = Number.POSITIVE_INFINITY): void {
    this.pendingCount += delta;
    const current = this.pendingByProject.get(projectId);
    const count = (current?.count ?? 0) + delta;
    if (count <= 0) this.pendingByProject.delete(projectId);
    else this.pendingByProject.set(projectId, { count, limit: Math.min(limit, current?.limit ?? Number.POSITIVE_INFINITY) });
  }

  private countClaimed(project: ProjectRow, delta: number): void {
    const current = this.claimedByProject.get(project.id);
    const count = (current?.count ?? 0) + delta;
    if (count <= 0) this.claimedByProject.delete(project.id);
    else this.claimedByProject.set(project.id, { count, limit: claimLimit(project) });
  }

  /** The project's next attempt waits until `until` (a rate's next token, a receiver's Retry-After); a later hold wins. */
  holdProject(projectId: string, until: number): void {
    const current = this.projectHolds.get(projectId);
    if (current && current.until >= until) return;
    if (current) clearTimeout(current.timer);
    const timer = setTimeout(() => {
      this.projectHolds.delete(projectId);
      this.pump(projectId);
      this.onCapacity();
    }, Math.max(0, until - this.deps.clock.now()));
    this.projectHolds.set(projectId, { until, timer });
  }

  /**
   * Starts up to `wanted` of a rated project's waiting jobs: takes that many tokens from its bucket
   * at once (shared by every instance with REDIS_URL); the refused wait for the next token.
   */
  private takeTokens(project: ProjectRow, wanted: number): void {
    const limiter = this.deps.rateLimiter!;
    const rate = deliveryBucket(project.deliveryRatePerSecond!);
    this.takingTokens.add(project.id);
    const now = this.deps.clock.now();
    void Promise.all(Array.from({ length: wanted }, () => limiter.take(`delivery:${project.id}`, rate, now)))
      .then((decisions) => {
        const granted = decisions.filter((d) => d.allowed).length;
        const queue = this.waiting.get(project.id) ?? [];
        for (const entry of queue.splice(0, granted)) {
          this.waitingCount -= 1;
          this.run(entry);
        }
        if (queue.length === 0) this.waiting.delete(project.id);
        const refused = decisions.find((d) => !d.allowed);
        if (refused) this.holdProject(project.id, this.deps.clock.now() + refused.retryAfterMs);
      })
      .catch((error: unknown) => {
        // The limiter answers from memory when Redis is away; a failure here is unexpected: wait a little.
        this.deps.log.error({ err: error }, 'taking delivery rate tokens failed');
        this.holdProject(project.id, this.deps.clock.now() + 1_000);
      })
      .finally(() => {
        this.takingTokens.delete(project.id);
        this.pump(project.id);
      });
  }

  start(): void {
    this.renewTimer = setInterval(() => void this.renewLeases(), LEASE_RENEW_INTERVAL_MS);
    this.renewTimer.unref();
  }

  /**
   * Takes a claimed batch: loads each project and its secrets once, then starts what the limits
   * allow. Returns the projects of the batch that then hold all this worker may hold of them.
   */
  async submit(jobs: ClaimedJob[], reserved?: { projectId: string; count: number }): Promise<string[]> {
    const projectIds = [...new Set(jobs.map((job) => job.projectId))];
    if (!reserved) for (const job of jobs) this.countPending(job.projectId, 1);
    let projects: ProjectRow[];
    let secrets: string[][];
    try {
      [projects, secrets] = await Promise.all([
        this.deps.store.projectGetMany(projectIds),
        Promise.all(projectIds.map((id) => this.deps.signingSecrets(id))),
      ]);
    } finally {
      // Counted below instead, in the same turn; what a reservation held beyond its jobs is freed.
      if (reserved) this.countPending(reserved.projectId, -reserved.count);
      else for (const job of jobs) this.countPending(job.projectId, -1);
    }
    const byId = new Map(projects.map((project) => [project.id, project]));
    const secretsById = new Map(projectIds.map((id, i) => [id, secrets[i]!]));
    const now = this.deps.clock.now();
    const due = new Set<string>();
    for (const job of jobs) {
      const project = byId.get(job.projectId)!;
      this.held.set(job.id, project.deliveryTimeoutMs + LEASE_MARGIN_MS);
      this.countClaimed(project, 1);
      const entry = { job, project, secrets: secretsById.get(project.id)! };
      if (job.runAt > now) this.holdUntilDue(entry, now);
      else {
        this.enqueue(entry);
        due.add(project.id);
      }
    }
    for (const projectId of due) this.pump(projectId);
    return projects.filter((project) => this.projectRoom(project) <= 0).map((project) => project.id);
  }

  private enqueue(entry: Waiting): void {
    const queue = this.waiting.get(entry.project.id) ?? [];
    queue.push(entry);
    this.waiting.set(entry.project.id, queue);
    this.waitingCount += 1;
  }

  /** A job claimed ahead of its time waits here until START_AHEAD_MS before it; it is never sent early. */
  private holdUntilDue(entry: Waiting, now: number): void {
    const runAt = entry.job.runAt;
    this.timedCount += 1;
    const group = this.timed.get(runAt);
    if (group) {
      group.entries.push(entry);
      return;
    }
    this.timed.set(runAt, { entries: [entry], timer: setTimeout(() => this.release(runAt), Math.max(0, runAt - START_AHEAD_MS - now)) });
  }

  private release(runAt: number): void {
    const group = this.timed.get(runAt);
    if (!group) return;
    const now = this.deps.clock.now();
    // Timers run on a monotonic clock and may fire a hair before the wall clock says so.
    if (now < runAt - START_AHEAD_MS) {
      group.timer = setTimeout(() => this.release(runAt), runAt - START_AHEAD_MS - now);
      return;
    }
    const projects = new Set<string>();
    for (const [at, due] of this.timed) {
      if (at > runAt + START_BATCH_MS) continue;
      clearTimeout(due.timer);
      this.timed.delete(at);
      this.timedCount -= due.entries.length;
      for (const entry of due.entries) {
        this.enqueue(entry);
        projects.add(entry.project.id);
      }
    }
    for (const projectId of projects) this.pump(projectId);
  }

  private pump(projectId: string): void {
    const queue = this.waiting.get(projectId);
    while (queue && queue.length > 0) {
      if (this.projectHolds.has(projectId) || this.takingTokens.has(projectId)) return;
      const project = queue[0]!.project;
      const room = project.deliveryConcurrency - (this.inFlightByProject.get(projectId) ?? 0);
      if (room <= 0) return;
      if (project.deliveryRatePerSecond !== null && this.deps.rateLimiter) {
        this.takeTokens(project, Math.min(room, queue.length));
        return;
      }
      const next = queue.shift()!;
      this.waitingCount -= 1;
      this.run(next);
    }
    if (queue) this.waiting.delete(projectId);
  }

  private run({ job, project, secrets }: Waiting): void {
    this.inFlight += 1;
    this.unrecorded += 1;
    this.inFlightByProject.set(project.id, (this.inFlightByProject.get(project.id) ?? 0) + 1);
    this.deps.metrics.inFlight.inc();
    // The slot is the receiver's: it frees as soon as the answer is in, while the outcome is still
    // being written, so the project's next job goes out meanwhile. The lease is held (and renewed)
    // until the outcome is recorded.
    let slotFreed = false;
    const freeSlot = () => {
      if (slotFreed) return;
      slotFreed = true;
      this.inFlight -= 1;
      this.deps.metrics.inFlight.dec();
      const left = (this.inFlightByProject.get(project.id) ?? 1) - 1;
      if (left === 0) this.inFlightByProject.delete(project.id);
      else this.inFlightByProject.set(project.id, left);
      this.countClaimed(project, -1);
      this.pump(project.id);
      this.onCapacity();
    };
    deliverAttempt(this.deps, job, project, secrets, this.shutdown.signal, freeSlot)
      .catch((error: unknown) => {
        // The lease stays; the rescuer retries the job once it expires.
        this.deps.log.error({ err: error, jobId: job.id }, 'delivery attempt could not be recorded');
      })
      .finally(() => {
        freeSlot();
        this.unrecorded -= 1;
        this.held.delete(job.id);
        if (this.unrecorded === 0) for (const resolve of this.idle.splice(0)) resolve();
      });
  }

  async renewLeases(): Promise<void> {
    if (this.held.size === 0) return;
    const now = this.deps.clock.now();
    const leases = [...this.held].map(([jobId, leaseMs]) => ({ jobId, leaseExpiresAt: now + leaseMs }));
    try {
      await this.deps.store.jobLeaseRenew({ workerId: this.deps.workerId, leases });
    } catch (error) {
      this.deps.log.warn({ err: error }, 'lease renewal failed; will retry');
    }
  }

  /**
   * For shutdown: forget jobs not yet started (the store releases them), give in-flight attempts
   * up to `timeoutMs` to finish, then abort the rest, which are recorded and queued again at once
   * without spending their retry budget. Resolves true when everything finished by itself.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    for (const queue of this.waiting.values()) for (const { job } of queue) this.held.delete(job.id);
    this.waiting.clear();
    this.waitingCount = 0;
    for (const group of this.timed.values()) {
      clearTimeout(group.timer);
      for (const { job } of group.entries) this.held.delete(job.id);
    }
    this.timed.clear();
    this.timedCount = 0;
    this.claimedByProject.clear();
    for (const hold of this.projectHolds.values()) clearTimeout(hold.timer);
    this.projectHolds.clear();
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (await this.whenIdle(timeoutMs)) return true;
    this.shutdown.abort();
    await this.whenIdle(ABORT_RECORD_TIMEOUT_MS);
    return false;
  }

  /** A crash: every timer stopped, nothing released or recorded (the lease rescue will find them). */
  halt(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    for (const group of this.timed.values()) clearTimeout(group.timer);
    for (const hold of this.projectHolds.values()) clearTimeout(hold.timer);
    this.timed.clear();
    this.waiting.clear();
    this.projectHolds.clear();
    this.shutdown.abort();
  }

  private whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.unrecorded === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
