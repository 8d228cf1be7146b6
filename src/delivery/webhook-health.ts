/**
 * Feeds each project's attempt outcomes that count (receiverDownBy, attempt-result.ts; and successes)
 * to the store's run of failures (webhookHealthRecord): the project's health (project-health.ts), its
 * hold with holdOnFailure (SPEC section 13), and the webhook.failing, webhook.held and
 * webhook.recovered events (SPEC sections 10 and 13).
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
  /** Outcomes not yet written, per project, and what settles once they are (or their write failed). */
  private pending = new Map<string, { outcomes: HealthOutcome[]; written: Promise<void>; settle: () => void }>();
  private flushing: Promise<void> | null = null;
  private flushQueued = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      /** An event may have been recorded: the event delivery looks at once. */
      onEvent: () => void;
      /** The outcomes recorded held the project (holdOnFailure): its waiting jobs leave the claims' index. */
      onHeld?: (projectId: string) => void;
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

  /** Records a failure; settles once it is written, and so once the project is held if it turns failing with holdOnFailure. Never rejects. */
  failure(projectId: string, error: string | null): Promise<void> {
    this.maybeFailing.add(projectId);
    const at = this.deps.clock.now();
    return this.add(projectId, { failed: true, error, at, eventId: newEventId(at), heldEventId: newEventId(at) });
  }

  success(projectId: string): void {
    if (!this.maybeFailing.has(projectId)) return;
    const at = this.deps.clock.now();
    void this.add(projectId, { failed: false, error: null, at, eventId: newEventId(at), heldEventId: newEventId(at) });
  }

  private add(projectId: string, outcome: HealthOutcome): Promise<void> {
    let entry = this.pending.get(projectId);
    if (!entry) {
      let settle!: () => void;
      const written = new Promise<void>((resolve) => (settle = resolve));
      this.pending.set(projectId, (entry = { outcomes: [], written, settle }));
    }
    entry.outcomes.push(outcome);
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => void this.flush());
    }
    return entry.written;
  }

  /** Writes what is pending (after the write under way, so a project's outcomes stay in order). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushQueued = false;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = (async () => {
      for (const [projectId, { outcomes, settle }] of batch) {
        try {
          const { held } = await this.deps.store.webhookHealthRecord({ projectId, outcomes });
          if (!outcomes[outcomes.length - 1]!.failed) this.maybeFailing.delete(projectId);
          this.deps.onEvent();
          if (held) this.deps.onHeld?.(projectId);
        } catch (error) {
          // A lost count of a few outcomes delays or skips an alert; it never touches a job.
          this.deps.onError(error);
        } finally {
          settle();
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
