/**
 * Delivers events (SPEC section 10) to their project's eventsUrl: signed with the Standard Webhooks
 * headers as deliveries are (webhook-id = the event id) but with no Authorization, since an events
 * URL may be a third party's and the secret itself must never reach one; at least once, retried on the project's retry policy. Every
 * instance runs it; a claim in the store (a lease, as jobs have) keeps two from sending one event
 * at once, and an instance that dies lets its claims lapse to the others.
 *
 * Events are few (a failed job, a failing receiver): the loop looks every POLL_MS, and at once when
 * this instance may have recorded one.
 */
import { BackgroundLoop } from '../maintenance/background-loop.js';
import type { Clock } from '../clock.js';
import type { Metrics } from '../metrics.js';
import type { ClaimedEvent, EventAttemptOutcome } from '../store/event-store.js';
import type { ProjectRow, Store } from '../store/store.js';
import { LEASE_MARGIN_MS } from './capacity-rules.js';
import { toAttemptResult } from './attempt-result.js';
import { eventBody } from './event-body.js';
import { nextAfterAttempt, parseRetryAfter } from './retry-policy.js';
import type { WebhookSender } from './webhook-client.js';

const POLL_MS = 1_000;
const CLAIM_LIMIT = 20;

interface EventDeliveryDeps {
  store: Store;
  clock: Clock;
  client: WebhookSender;
  metrics: Metrics;
  workerId: string;
  signingSecrets: (projectId: string) => Promise<string[]>;
  /** The retries an event gets: the project's default retry count, else its plan's cap. */
  maxRetriesFor: (project: ProjectRow) => Promise<number>;
  onError: (error: unknown) => void;
  random?: () => number;
}

/** Where a project's events go, and how: read once per claimed batch. */
interface EventTarget {
  project: ProjectRow;
  secrets: string[];
  maxRetries: number;
}

export class EventDelivery {
  private readonly shutdown = new AbortController();
  private readonly loop: BackgroundLoop<void>;
  private stopped = false;

  constructor(private readonly deps: EventDeliveryDeps) {
    this.loop = new BackgroundLoop({ pass: () => this.runOnce(), sleepMs: () => POLL_MS, onError: deps.onError });
  }

  start(): void {
    this.loop.start();
  }

  /** Looks for due events now (and again after the pass under way, if one is). */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Requests under way are cut short; their claims lapse and another instance (or the next start) sends them.
    this.shutdown.abort();
    await this.loop.stop();
  }

  /** Claims and sends every due event, CLAIM_LIMIT at a time. */
  async runOnce(): Promise<void> {
    for (;;) {
      const claimed = await this.deps.store.eventClaimDue({
        now: this.deps.clock.now(),
        limit: CLAIM_LIMIT,
        workerId: this.deps.workerId,
        leaseExtraMs: LEASE_MARGIN_MS,
      });
      if (claimed.length === 0) return;
      // Each project's row, secrets and retry count once per batch, however many of its events are in it.
      const projects = await this.deps.store.projectGetMany([...new Set(claimed.map((e) => e.projectId))]);
      const targets = new Map(
        await Promise.all(
          projects.map(async (project) => {
            const [secrets, maxRetries] = await Promise.all([this.deps.signingSecrets(project.id), this.deps.maxRetriesFor(project)]);
            return [project.id, { project, secrets, maxRetries }] as const;
          }),
        ),
      );
      await Promise.all(claimed.map((event) => this.send(event, targets.get(event.projectId)!).catch(this.deps.onError)));
      if (claimed.length < CLAIM_LIMIT || this.stopped) return;
    }
  }

  private async send(event: ClaimedEvent, { project, secrets, maxRetries }: EventTarget): Promise<void> {
    const { clock } = this.deps;
    let outcome: EventAttemptOutcome;
    if (!project.eventsUrl || secrets.length === 0) {
      // The URL was removed after the event was recorded: nowhere to send it.
      outcome = { kind: 'failed', error: project.eventsUrl ? 'the project has no active webhook secret' : 'the project has no eventsUrl' };
    } else {
      const sent = await this.deps.client.deliver(
        {
          url: project.eventsUrl,
          webhookId: event.id,
          secrets,
          bearer: false,
          timestampMs: clock.now(),
          body: eventBody(event, project),
          timeoutMs: project.deliveryTimeoutMs,
        },
        this.shutdown.signal,
      );
      if (sent.kind === 'aborted') return;
      const result = toAttemptResult(sent, project.acceptAny2xx);
      const now = clock.now();
      const next = nextAfterAttempt(
        project,
        {
          outcome: result.outcome,
          statusCode: result.statusCode,
          retryAfterMs: sent.kind === 'answered' ? parseRetryAfter(sent.retryAfter, now) : null,
          attemptNumber: event.attemptCount + 1,
          maxRetries,
        },
        now,
        this.deps.random,
      );
      const error = result.error ?? result.outcome;
      outcome = next.kind === 'complete' ? { kind: 'delivered' } : next.kind === 'retry' ? { kind: 'retry', at: next.runAt, error } : { kind: 'failed', error };
    }
    const applied = await this.deps.store.eventFinish({ eventId: event.id, workerId: this.deps.workerId, leaseUntil: event.leaseUntil, now: clock.now(), outcome });
    if (applied) this.deps.metrics.eventAttempts.inc({ type: event.type, result: outcome.kind });
  }
}
