import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { randomBase62 } from '../crypto/random-ids.js';
import type { Metrics } from '../metrics.js';
import { ClaimLoop } from '../claims/claim-loop.js';
import { LeaseRescuer } from '../maintenance/lease-rescuer.js';
import { holdProjectJobs, releaseResumedProjects } from '../maintenance/project-holds.js';
import { BackgroundLoop } from '../maintenance/background-loop.js';
import { PROBE_LOOK_MS, ReceiverProbes } from '../delivery/receiver-probes.js';
import type { ProjectRow, Store } from '../store/store.js';
import { EventDelivery } from '../delivery/event-delivery.js';
import type { RateLimiter } from '../rate-limits/token-bucket.js';
import type { CallbackTokens } from '../crypto/callback-tokens.js';
import { WebhookHealth } from '../delivery/webhook-health.js';
import type { ImmediateDelivery } from '../services/immediate-delivery.js';
import { leaseMs } from '../delivery/capacity-rules.js';
import { backoffMs } from '../delivery/retry-policy.js';
import { AttemptRunner } from '../delivery/attempt-runner.js';
import type { WebhookSender } from '../delivery/webhook-client.js';
import type { Tracer } from '../tracing/tracer.js';

interface DeliveryEngineOptions {
  store: Store;
  clock: Clock;
  metrics: Metrics;
  log: FastifyBaseLogger;
  client: WebhookSender;
  signingSecrets: (projectId: string) => Promise<string[]>;
  /** The retries an event gets (SPEC section 10): the project's default retry count, else its plan's cap. */
  maxRetriesFor: (project: ProjectRow) => Promise<number>;
  globalConcurrency: number;
  /** Buckets for projects' deliveryRatePerSecond (SPEC section 11): Redis with REDIS_URL, else this process's memory. */
  rateLimiter: RateLimiter;
  /** Tokens for deliveries to projects with asyncCompletion (SPEC section 11). */
  callbackTokens: CallbackTokens;
  /** Span export (claims and attempts), when on. */
  tracer: Tracer | null;
  /**
   * Rescue every lease at start, not only expired ones. Right for the embedded store, where one
   * process serves a database file, so any lease found at start belongs to a process that died.
   */
  takeOverLeasesAtStart: boolean;
  random?: () => number;
}

const RELEASE_SWEEP_MS = 30_000;

/** The claim loop, the attempt runner and the lease rescuer of one instance, started and stopped together. */
export class DeliveryEngine {
  readonly workerId = `wrk_${randomBase62(12)}`;
  readonly runner: AttemptRunner;
  readonly claimLoop: ClaimLoop;
  readonly rescuer: LeaseRescuer;
  /** Events to projects' eventsUrl, and the runs of failures some of them tell of (SPEC section 10). */
  readonly events: EventDelivery;
  readonly health: WebhookHealth;
  /** Probes of held projects' receivers (SPEC section 13), one instance each time across all of them. */
  readonly probes: ReceiverProbes;
  private readonly probeLoop: BackgroundLoop<number | null>;

  constructor(private readonly options: DeliveryEngineOptions) {
    const deps = { store: options.store, clock: options.clock, metrics: options.metrics, log: options.log, random: options.random, tracer: options.tracer };
    const onError = (error: unknown) => options.log.error({ err: error }, 'events: a background step failed; it is tried again');
    this.events = new EventDelivery({
      store: options.store,
      clock: options.clock,
      client: options.client,
      metrics: options.metrics,
      workerId: this.workerId,
      signingSecrets: options.signingSecrets,
      maxRetriesFor: options.maxRetriesFor,
      onError,
      ...(options.random && { random: options.random }),
    });
    this.probes = new ReceiverProbes({
      store: options.store,
      clock: options.clock,
      client: options.client,
      signingSecrets: options.signingSecrets,
      onDue: (runAt) => this.claimLoop.notifyDue(runAt),
      onEvent: () => this.events.wake(),
      onError: (error) => options.log.error({ err: error }, 'probing a held receiver failed; the next probe is scheduled'),
    });
    this.probeLoop = new BackgroundLoop({
      pass: () => this.probes.probeDue(),
      // Until the next probe is due, looking again at least every PROBE_LOOK_MS (a hold begun elsewhere).
      sleepMs: (next) => (next === null ? PROBE_LOOK_MS : Math.min(Math.max(next - options.clock.now(), 10), PROBE_LOOK_MS)),
      onError: (error) => options.log.error({ err: error }, 'the probe loop failed; it looks again shortly'),
    });
    this.health = new WebhookHealth({
      store: options.store,
      clock: options.clock,
      onEvent: () => this.events.wake(),
      // Held: its waiting jobs leave the claims' index (the claims step over it already), and its first probe is timed.
      onHeld: (projectId) => {
        holdProjectJobs(options.store, projectId).catch(onError);
        this.probeLoop.wake();
      },
      onError,
    });
    this.runner = new AttemptRunner({
      ...deps,
      client: options.client,
      workerId: this.workerId,
      health: this.health,
      onJobEvent: () => this.events.wake(),
      // Held here at once, and on every instance through the store (claims and starts read it).
      onBackpressure: (projectId, until) => {
        this.runner.holdProject(projectId, until);
        options.store
          .projectBackoff({ projectId, until, now: options.clock.now() })
          .catch((error: unknown) => options.log.warn({ err: error, projectId }, "recording a receiver's Retry-After for other instances failed"));
      },
      rateLimiter: options.rateLimiter,
      callbackTokens: options.callbackTokens,
      onRequeued: (runAt) => this.claimLoop.notifyDue(runAt),
      globalConcurrency: options.globalConcurrency,
      signingSecrets: options.signingSecrets,
    });
    this.claimLoop = new ClaimLoop({ ...deps, runner: this.runner, workerId: this.workerId });
    this.rescuer = new LeaseRescuer({
      ...deps,
      retryDelayMs: (project, attemptNumber) => backoffMs(project, attemptNumber, options.random),
      onRequeued: (runAt) => this.claimLoop.notifyDue(runAt),
    });
  }

  private running = false;
  private releaseTimer: NodeJS.Timeout | null = null;

  async start(): Promise<void> {
    this.running = true;
    this.options.client.prepare();
    // Jobs other instances enqueue wake this one too (a hint: the next-due timer stays behind it).
    await this.options.store.listenJobDue?.((runAt) => this.claimLoop.notifyDue(runAt));
    if (this.options.takeOverLeasesAtStart) {
      await this.rescuer.tick(Number.MAX_SAFE_INTEGER);
      await this.options.store.eventReleaseClaims({ now: this.options.clock.now() });
    }
    else await this.rescuer.tick().catch((error: unknown) => this.options.log.error({ err: error }, 'lease rescue failed'));
    this.rescuer.start();
    this.runner.start();
    this.claimLoop.start();
    // A resume cut short (the process that answered it stopped) is finished here, at start and every 30 s.
    const releaseResumed = () =>
      releaseResumedProjects(this.options.store, () => this.claimLoop.notifyDue(this.options.clock.now())).catch((error: unknown) =>
        this.options.log.error({ err: error }, 'releasing the jobs of a resumed project failed; tried again shortly'),
      );
    await releaseResumed();
    this.releaseTimer = setInterval(() => void releaseResumed(), RELEASE_SWEEP_MS);
    this.releaseTimer.unref();
    await this.health.start();
    this.events.start();
    this.probeLoop.start();
  }

  /**
   * Jobs due at once, created with their first attempt already STARTED for this instance when it
   * has room to start them (the job service asks before inserting), go straight to their requests:
   * no claim, no separate start, no claim loop wake-up.
   */
  immediateDelivery(): ImmediateDelivery {
    return {
      reserve: (project, wanted, dueNow) => {
        // A paused project's jobs wait QUEUED (SPEC section 10).
        if (!this.running || project.paused) return null;
        const limit = this.runner.reserveStart(project, wanted, dueNow);
        if (limit <= 0) return null;
        return { projectId: project.id, workerId: this.workerId, leaseExpiresAt: this.options.clock.now() + leaseMs(project), limit };
      },
      submit: (reservation, jobs) => {
        const reserved = { projectId: reservation.projectId, count: reservation.limit };
        if (jobs.length === 0) return this.runner.unreserve(reserved.projectId, reserved.count);
        // Already STARTED in the database: if this fails they are rescued when their lease expires.
        this.runner
          .submitStarted(jobs, reserved)
          .catch((error: unknown) => this.options.log.error({ err: error }, 'handing started jobs to the attempt runner failed'));
      },
    };
  }

  /** Attempts started and not yet answered (those a long pause of this process would lose leases of). */
  get attemptsInFlight(): number {
    return this.runner.capacity.running;
  }

  /** A project's settings changed through this instance (its concurrency, say): what it holds starts by them. */
  projectChanged(project: ProjectRow): void {
    this.runner.projectChanged(project);
  }

  /** A job is due at `runAt` (enqueued, rescheduled, retried). */
  notifyDue(runAt: number): void {
    this.claimLoop.notifyDue(runAt);
  }

  /**
   * Stops every loop and timer at once and releases nothing, as a crash would leave things (the
   * recovery tests kill an instance this way, then close its store under it).
   */
  halt(): void {
    this.running = false;
    if (this.releaseTimer) clearInterval(this.releaseTimer);
    void this.claimLoop.stop();
    this.rescuer.stop();
    this.runner.halt();
    void this.health.stop().catch(() => {});
    void this.events.stop().catch(() => {});
    void this.probeLoop.stop();
  }

  /** Stops claiming, lets in-flight attempts finish within `deadlineMs`, and returns unsent jobs to the queue. */
  async stop(deadlineMs: number): Promise<{ drained: boolean; released: number }> {
    this.running = false;
    if (this.releaseTimer) clearInterval(this.releaseTimer);
    await this.claimLoop.stop();
    this.rescuer.stop();
    const drained = await this.runner.drain(deadlineMs);
    const released = await this.options.store.jobReleaseDispatched({ workerId: this.workerId, now: this.options.clock.now() });
    await this.probeLoop.stop();
    await this.health.stop();
    await this.events.stop();
    return { drained, released };
  }
}
