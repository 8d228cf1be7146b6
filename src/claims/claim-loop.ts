import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { LEASE_MARGIN_MS } from '../delivery/capacity-rules.js';
import type { AttemptRunner } from '../delivery/attempt-runner.js';
import { UnavailableError } from '../errors.js';
import type { ClaimedJob, Store } from '../store/store.js';
import { attemptIdPrefix } from '../crypto/random-ids.js';
import type { Tracer } from '../tracing/tracer.js';

/** Claims per transaction. */
const CLAIM_BATCH_SIZE = 100;
/**
 * The longest the loop sleeps without looking: a safety net for jobs written behind its back (the
 * CLI, another instance) and for wall-clock jumps. Not a polling interval: the timer is normally
 * set for the next due job.
 */
export const MAX_SLEEP_MS = 30_000;
/**
 * Jobs are claimed this long before they are due, many per transaction, and held on a timer by
 * the attempt runner until their exact time: the claim's write leaves the critical path. The cost: in
 * the last 25 ms before its time a job is DISPATCHED, so a cancel then answers JOB_NOT_QUEUED.
 */
export const CLAIM_LOOKAHEAD_MS = 25;
/**
 * The loop claims at most this often when it wakes for jobs already in the store: jobs due close
 * together (one every 2 ms) are then claimed several per transaction instead of one each. A job
 * is still claimed at least CLAIM_LOOKAHEAD_MS - CLAIM_MIN_INTERVAL_MS before its time, which is
 * more than START_AHEAD_MS (ahead-timer.ts). A job enqueued due sooner wakes the loop at once.
 */
const CLAIM_MIN_INTERVAL_MS = 10;
/** After a storage error, wait this long before claiming again, instead of spinning. */
const ERROR_BACKOFF_MS = 1_000;

/**
 * The claim loop: sleeps until the earliest QUEUED job is due (read from the partial index, so jobs
 * waiting far ahead cost nothing), claims due jobs in batches, earliest first, and hands them to
 * the attempt runner. A job enqueued or rescheduled earlier than the current wake-up calls notifyDue.
 */
export class ClaimLoop {
  private timer: NodeJS.Timeout | null = null;
  private wakeAt = Number.POSITIVE_INFINITY;
  private running = false;
  private ticking: Promise<void> | null = null;
  private again = false;
  /** True when due jobs were left unclaimed for want of delivery slots. */
  private starved = false;
  /** True when the last claim skipped saturated projects: a freed slot may let their jobs through. */
  private skippedProjects = false;
  /** True while the claim under way is cut short by room (fewer free slots than a batch): a slot freed meanwhile is worth another pass. */
  private limitedByRoom = false;
  /**
   * True after a claim failed for want of the database: it may have committed before the answer
   * was lost, leaving jobs claimed by this worker that it never received (on PostgreSQL, a
   * connection cut mid-claim). They would wait for their lease to expire; the next pass takes them.
   */
  private claimUncertain = false;
  /** The last pass ended in a storage error: the next waits for the backoff (ERROR_BACKOFF_MS). */
  private lastPassFailed = false;
  /** Claims begun so far, and those waiting for one begun after them (lookAgain). */
  private claimsBegun = 0;
  private lookers: { after: number; looked: () => void }[] = [];

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      runner: AttemptRunner;
      workerId: string;
      log: FastifyBaseLogger;
      /** Span export, when on: a claim span per claimed job that has a trace. */
      tracer?: Tracer | null;
    },
  ) {
    deps.runner.onKeyTurn = () => this.lookAgain();
    deps.runner.onCapacity = () => {
      // During a pass too, when room cut its claim short: it may have counted the freed slot as
      // taken. Not otherwise: with room to spare, every delivery's end would start another claim.
      if (this.starved || this.skippedProjects || (this.ticking && this.limitedByRoom)) this.notifyDue(this.deps.clock.now());
    };
  }

  start(): void {
    this.running = true;
    void this.tick();
  }

  /**
   * Settles once a claim begun after this call has handed over what it took and came back with
   * fewer than its limit (or the next claims of its pass did), or once the loop cannot claim
   * (stopped, no free slot, the store away): whatever a write just made claimable has then been
   * looked for. Not the whole pass, which goes round again while jobs keep coming.
   */
  lookAgain(): Promise<void> {
    if (!this.running) return Promise.resolve();
    const looked = new Promise<void>((resolve) => this.lookers.push({ after: this.claimsBegun, looked: resolve }));
    this.notifyDue(this.deps.clock.now());
    return looked;
  }

  /** Lets go of the lookers waiting for a claim numbered `upTo` or before (all of them by default). */
  private looked(upTo = Number.POSITIVE_INFINITY): void {
    if (this.lookers.length === 0) return;
    const still = this.lookers.filter((looker) => looker.after >= upTo);
    for (const looker of this.lookers) if (looker.after < upTo) looker.looked();
    this.lookers = still;
  }

  async stop(): Promise<void> {
    this.running = false;
    this.looked();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
  }

  /** When the loop will next look for due jobs (application time); infinite while a pass runs. */
  get wakesAt(): number {
    return this.wakeAt;
  }

  /**
   * A job became due at `runAt`: wake sooner if that is before the current wake-up, or at once if
   * the clock has passed the current wake-up (it jumped: the timer, set in real time, would still wait).
   */
  notifyDue(runAt: number): void {
    if (!this.running) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (runAt < this.wakeAt) this.sleepUntil(runAt);
    else if (this.wakeAt <= this.deps.clock.now()) this.sleepUntil(this.deps.clock.now());
  }

  private sleepUntil(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.wakeAt = at;
    const delay = Math.min(Math.max(0, at - CLAIM_LOOKAHEAD_MS - this.deps.clock.now()), MAX_SLEEP_MS);
    this.timer = setTimeout(() => void this.tick(), delay);
  }

  /** One pass: claim everything due that there is room for, then sleep until the next due job. */
  tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.wakeAt = Number.POSITIVE_INFINITY;
    this.ticking = this.claimAll().finally(() => {
      this.ticking = null;
      // A wake-up (notifyDue, lookAgain) that came after the pass's last look at `again`, in the
      // microtasks before this: it would wait for the next timer, up to MAX_SLEEP_MS away. Not after
      // a failed pass, which waits for its backoff.
      if (this.again && this.running && !this.lastPassFailed) void this.tick();
    });
    return this.ticking;
  }

  private async claimAll(): Promise<void> {
    const { store, clock, runner } = this.deps;
    this.lastPassFailed = false;
    try {
      if (this.claimUncertain) {
        const orphans = (await store.jobListDispatchedTo({ workerId: this.deps.workerId })).filter((job) => !runner.holds(job.id));
        this.claimUncertain = false;
        if (orphans.length > 0) {
          this.deps.log.warn({ count: orphans.length }, 'taking jobs claimed by a claim whose answer was lost');
          await runner.submit(orphans);
        }
      }
      for (;;) {
        // The horizon of the last claim: every job due by then that could be claimed now was.
        let claimedUpTo = 0;
        do {
          this.again = false;
          const limit = Math.min(CLAIM_BATCH_SIZE, runner.capacity.freeSlots());
          this.starved = limit <= 0;
          if (this.starved) {
            // Due jobs may be waiting in the store: none is overtaken by a newly enqueued job meanwhile.
            runner.capacity.noteClaim(false, []);
            this.looked();
            return; // onCapacity wakes us
          }
          runner.startOverdueHeld();
          const now = clock.now();
          const excludeProjectIds = runner.capacity.projectsWithoutRoom(now);
          this.skippedProjects = excludeProjectIds.length > 0;
          this.limitedByRoom = this.skippedProjects || limit < CLAIM_BATCH_SIZE;
          claimedUpTo = now + CLAIM_LOOKAHEAD_MS;
          const claimNumber = ++this.claimsBegun;
          const claimSpans = this.deps.tracer?.startClaim();
          // Taken before the claim's starts are reserved: the store starts no more than a project's
          // slots less these (JobClaimParams.startable).
          const heldByProject = runner.capacity.heldByProject();
          // Of the jobs due now, those the worker has free slots for are claimed STARTED at once.
          const startable = runner.reserveClaimStarts();
          // Marks of the store backlog made from here on are for jobs this claim does not see.
          const sentAt = runner.capacity.backlogMarks;
          let claimed: ClaimedJob[] = [];
          try {
            claimed = await store.jobClaimDue({
              excludeProjectIds,
              heldByProject,
              now,
              dueBy: claimedUpTo,
              limit,
              workerId: this.deps.workerId,
              leaseExtraMs: LEASE_MARGIN_MS,
              claimRule: runner.claimRule,
              startable: { byProject: startable, attemptPrefix: attemptIdPrefix(now) },
            });
          } finally {
            const started = new Map<string, number>();
            for (const job of claimed) if (job.started) started.set(job.projectId, (started.get(job.projectId) ?? 0) + 1);
            runner.capacity.settleClaimStarts(startable, started, clock.now());
          }
          if (claimSpans && claimed.length > 0) claimSpans.end(claimed, { workerId: this.deps.workerId, atEnqueue: false });
          if (claimed.length > 0) await runner.submit(claimed);
          // A full claim may have left a job a looker waits for (a key's next) behind others due
          // earlier: the next claim of this pass, which goes on while claims come back full, settles it.
          if (claimed.length < limit) this.looked(claimNumber);
          const byProject = new Map<string, number>();
          for (const job of claimed) byProject.set(job.projectId, (byProject.get(job.projectId) ?? 0) + 1);
          const cutShort = runner.capacity.cutShortBy(byProject, heldByProject);
          runner.capacity.noteClaim(claimed.length < limit, [...excludeProjectIds, ...cutShort], sentAt);
          // A project's room may have cut its share of the batch short, its other due jobs left in
          // the store: claim again, which leaves it out while it has no room (and a freed slot
          // then wakes the loop) or takes its next ones if room freed meanwhile.
          if (claimed.length === limit || cutShort.length > 0) this.again = true;
        } while (this.again && this.running);
        if (!this.running) return;
        // The next job beyond the claim's horizon, not the earliest QUEUED one: that may belong to a
        // project whose slots are all taken, and sleeping until a time already past would spin on
        // empty claims until a slot frees (onCapacity wakes us for those).
        const next = await store.jobNextDueAt({ after: claimedUpTo });
        // A job that became due while we looked may be missing from `next`: look again.
        if (this.again) continue;
        this.sleepUntil(next === null ? clock.now() + MAX_SLEEP_MS : Math.max(next, clock.now() + CLAIM_LOOKAHEAD_MS + CLAIM_MIN_INTERVAL_MS));
        return;
      }
    } catch (error) {
      this.lastPassFailed = true;
      this.looked();
      if (error instanceof UnavailableError) this.claimUncertain = true;
      this.deps.log.error({ err: error }, 'claiming due jobs failed; retrying shortly');
      if (this.running) this.sleepUntil(clock.now() + ERROR_BACKOFF_MS);
    }
  }
}
