/**
 * Feeds each project's attempt outcomes to the store's run of failures (webhookHealthRecord): the
 * project's health (services/project-health.ts), and for one with an eventsUrl the webhook.failing
 * and webhook.recovered events (SPEC section 10).
 *
 * Every failure is recorded; a success only for a project that may have a run of failures: one
 * this instance saw fail, or one the store listed as failing at the last look (another instance's
 * failures), so that healthy projects' deliveries cost nothing more. Outcomes of one event-loop
 * turn go to the store together, in order, one write per project.
 */
import type { Clock } from '../clock.js';
import { newEventId } from '../crypto/random-ids.js';
import type { HealthOutcome } from '../store/event-store.js';
import type { Store } from '../store/store.js';

/** How often the projects failing elsewhere are read again. */
const REFRESH_MS = 5_000;

export class WebhookHealth {
  private readonly maybeFailing = new Set<string>();
  private pending = new Map<string, HealthOutcome[]>();
  private flushing: Promise<void> | null = null;
  private flushQueued = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      /** An event may have been recorded: the event delivery looks at once. */
      onEvent: () => void;
      onError: (error: unknown) => void;
    },
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  failure(projectId: string, error: string | null): void {
    this.maybeFailing.add(projectId);
    this.add(projectId, { failed: true, error, at: this.deps.clock.now(), eventId: newEventId(this.deps.clock.now()) });
  }

  success(projectId: string): void {
    if (!this.maybeFailing.has(projectId)) return;
    this.add(projectId, { failed: false, error: null, at: this.deps.clock.now(), eventId: newEventId(this.deps.clock.now()) });
  }

  private add(projectId: string, outcome: HealthOutcome): void {
    const list = this.pending.get(projectId);
    if (list) list.push(outcome);
    else this.pending.set(projectId, [outcome]);
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => void this.flush());
    }
  }

  /** Writes what is pending (after the write under way, so a project's outcomes stay in order). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushQueued = false;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = (async () => {
      for (const [projectId, outcomes] of batch) {
        try {
          await this.deps.store.webhookHealthRecord({ projectId, outcomes });
          if (!outcomes[outcomes.length - 1]!.failed) this.maybeFailing.delete(projectId);
          this.deps.onEvent();
        } catch (error) {
          // A lost count of a few outcomes delays or skips an alert; it never touches a job.
          this.deps.onError(error);
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  private async refresh(): Promise<void> {
    try {
      for (const projectId of await this.deps.store.webhookHealthListFailing()) this.maybeFailing.add(projectId);
    } catch (error) {
      this.deps.onError(error);
    }
  }
}
