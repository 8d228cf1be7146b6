/**
 * Bulk actions (SPEC section 14): cancel, reschedule or retry every job of a filter, the one
 * mechanism behind `POST /api/jobs/bulk`, bulk replay (`POST /api/jobs/retry`, SPEC section 2),
 * the dashboard's "… all that match" and the CLI's `punctual jobs cancel|reschedule|retry`.
 *
 * An action runs in transactions of BULK_CHUNK jobs, each followed by a pause twice as long as it
 * took: claims, starts and dispatches go on between them (on SQLite they share one writer; on
 * PostgreSQL each chunk locks only its own rows), so a 10,000-job action delays no delivery by
 * more than one chunk's time and takes at most a third of the writer's (bench/bulk.ts measures
 * it). Each job is decided in its chunk against a concurrent claim, so once the answer is sent no
 * cancelled job is ever started.
 */
import type { Clock } from '../clock.js';
import type { Metrics } from '../metrics.js';
import { bulkActionStatus, type JobBulkCursor, type JobBulkFilter, type Store } from '../store/store.js';
import { readBulkRequest, readReplayRequest, type BulkFilter, type BulkRequest } from './input/bulk-input.js';
import type { JobRequestContext } from './jobs-service.js';

/**
 * Jobs one transaction reads and changes at most. An attempt's start waits for the writer and is
 * made START_AHEAD_MS (10 ms) before its due time (src/delivery/ahead-timer.ts): a chunk must
 * hold the writer well under that. Each job is a row rewritten and four or five index entries, so
 * 100 take about a millisecond or two on the embedded store.
 */
export const BULK_CHUNK = 100;
/**
 * After each chunk, a pause of this many times the chunk's duration (at least MIN_PAUSE_MS): the
 * action takes at most a third of the writer's time, so starts and claims find it free most of
 * the time, and its WAL grows slowly enough for the background checkpoint. Retention's pass
 * measured what no pause costs (bench:retention: batches of 200 with a fixed 2 ms pause moved
 * lateness p99 from 4.2 to 16.1 ms); a bulk action is bounded (10,000 jobs) and a client waits for
 * its answer, so it takes a larger share than retention's tenth.
 */
const PAUSE_FACTOR = 2;
const MIN_PAUSE_MS = 1;

/** What a bulk action answers (SPEC section 14). */
export interface BulkResult {
  /** Jobs the filter matched in the action's state (at most the limit); with dryRun, how many it would act on. */
  matched: number;
  /** Jobs changed; matched ones that left the state meanwhile (claimed for delivery, say) are not. */
  changed: number;
  /** More jobs match beyond the limit: the same request again goes on with them. */
  hasMore: boolean;
}

interface JobBulkActionsDeps {
  store: Store;
  clock: Clock;
  metrics: Metrics;
  /** Tells the claim loop a job is due at this instant (after a reschedule or a retry). */
  onJobDue: (runAt: number) => void;
}

export class JobBulkActions {
  constructor(private readonly deps: JobBulkActionsDeps) {}

  /** `POST /api/jobs/bulk`. */
  bulk(ctx: JobRequestContext, body: unknown): Promise<BulkResult> {
    return this.act(ctx.project.id, readBulkRequest(body, ctx.receivedAt));
  }

  /** `POST /api/jobs/retry` (SPEC section 2): the bulk retry of a failure window, oldest failure first. */
  async retryFailed(ctx: JobRequestContext, body: unknown): Promise<{ retried: number; hasMore: boolean }> {
    const { changed, hasMore } = await this.act(ctx.project.id, readReplayRequest(body));
    return { retried: changed, hasMore };
  }

  /**
   * Runs (or with dryRun, counts) one bulk action on a project's jobs. A filter's status other
   * than the action's state matches nothing (cancel acts on QUEUED jobs only, whatever it says).
   */
  async act(projectId: string, request: BulkRequest): Promise<BulkResult> {
    const { action, limit } = request;
    const { status, ...rest } = request.filter;
    if (status !== null && status !== bulkActionStatus(action)) return { matched: 0, changed: 0, hasMore: false };
    const filter: JobBulkFilter = { projectId, ...rest };
    const { store, clock } = this.deps;
    if (request.dryRun) {
      const n = await store.jobBulkCount({ filter, action, limit: limit + 1, after: null });
      return { matched: Math.min(n, limit), changed: 0, hasMore: n > limit };
    }
    let matched = 0;
    let changed = 0;
    let after: JobBulkCursor | null = null;
    let exhausted = false;
    let pauseMs = 0;
    while (matched < limit) {
      if (after !== null) await pause(pauseMs);
      const take = Math.min(BULK_CHUNK, limit - matched);
      const started = performance.now();
      const chunk = await store.jobBulkAct({ filter, action, limit: take, now: clock.now(), after });
      pauseMs = Math.max(MIN_PAUSE_MS, (performance.now() - started) * PAUSE_FACTOR);
      matched += chunk.matched;
      changed += chunk.changed;
      if (chunk.earliestRunAt !== null) this.deps.onJobDue(chunk.earliestRunAt);
      // A job changed may have had a concurrencyKey: its key's next job may go now (SPEC section 15).
      if (chunk.changed > 0) this.deps.onJobDue(clock.now());
      if (chunk.matched < take) {
        exhausted = true;
        break;
      }
      after = chunk.next;
    }
    if (action.kind === 'cancel' && changed > 0) this.deps.metrics.jobsCancelled.inc(changed);
    const hasMore = !exhausted && (await store.jobBulkCount({ filter, action, limit: 1, after })) > 0;
    return { matched, changed, hasMore };
  }
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export type { BulkFilter, BulkRequest };
