import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { JOB_STATUSES, type Store } from './store/store.js';

/** Queue depth is counted in the database at most this often, however often /metrics is scraped. */
const DEPTH_CACHE_MS = 5_000;

/**
 * Prometheus metrics, on a registry of their own (not prom-client's global one) so that several
 * apps in one test process do not collide.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly jobsCreated = new Counter({ name: 'punctual_jobs_created_total', help: 'Jobs created', registers: [this.registry] });
  readonly jobsCompleted = new Counter({ name: 'punctual_jobs_completed_total', help: 'Jobs completed', registers: [this.registry] });
  readonly jobsFailed = new Counter({ name: 'punctual_jobs_failed_total', help: 'Jobs failed after their last attempt', registers: [this.registry] });
  readonly jobsCancelled = new Counter({ name: 'punctual_jobs_cancelled_total', help: 'Jobs cancelled', registers: [this.registry] });
  readonly attempts = new Counter({
    name: 'punctual_attempts_total',
    help: 'Delivery attempts by outcome',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly eventAttempts = new Counter({
    name: 'punctual_event_attempts_total',
    help: "Attempts to send an event to a project's eventsUrl, by what became of the event",
    labelNames: ['type', 'result'] as const,
    registers: [this.registry],
  });
  readonly lateResultsIgnored = new Counter({
    name: 'punctual_attempt_results_ignored_total',
    help: 'Attempt results not recorded because their worker had lost the lease (the rescuer counted the attempt as lease_expired)',
    registers: [this.registry],
  });
  readonly deliveryDuration = new Histogram({
    name: 'punctual_delivery_duration_seconds',
    help: 'Duration of a delivery attempt, request sent to answer read',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly deliveryLateness = new Histogram({
    name: 'punctual_delivery_lateness_seconds',
    help: 'When an attempt started minus when it was due',
    buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({ name: 'punctual_requests_rate_limited_total', help: 'Requests refused with RATE_LIMITED', registers: [this.registry] });
  readonly quotaRejections = new Counter({ name: 'punctual_quota_rejections_total', help: 'Jobs refused with QUOTA_EXCEEDED', registers: [this.registry] });
  readonly rateLimitStoreErrors = new Counter({
    name: 'punctual_rate_limit_redis_errors_total',
    help: 'Rate-limit checks Redis could not answer (the instance then limits alone)',
    registers: [this.registry],
  });
  readonly rateLimitStoreCalls = new Counter({
    name: 'punctual_rate_limit_redis_calls_total',
    help: 'Rate-limit script calls sent to Redis (one per request at low rates; under load one per team per event-loop turn)',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({ name: 'punctual_attempts_in_flight', help: 'Delivery attempts under way', registers: [this.registry] });
  readonly rowsPruned = new Counter({
    name: 'punctual_rows_pruned_total',
    help: 'Rows deleted by retention (SPEC section 12), by table',
    labelNames: ['table'],
    registers: [this.registry],
  });

  constructor(store: Pick<Store, 'jobCountByStatus' | 'jobCountKeysWaiting' | 'storeSize' | 'webhookHealthCounts'>) {
    new Gauge({
      name: 'punctual_store_size_bytes',
      help: "Bytes the store occupies: its database and, for the embedded store, its write-ahead log (PostgreSQL: this schema's tables and indexes)",
      labelNames: ['file'],
      registers: [this.registry],
      async collect() {
        const size = await store.storeSize();
        this.set({ file: 'database' }, size.databaseBytes);
        if (size.walBytes !== null) this.set({ file: 'wal' }, size.walBytes);
      },
    });
    new Gauge({
      name: 'punctual_projects_unhealthy',
      help: 'Projects whose receiver is failing (10 attempts in a row failed) or held for it (holdOnFailure), by state (SPEC section 13)',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const counts = await store.webhookHealthCounts();
        this.set({ state: 'failing' }, counts.failing);
        this.set({ state: 'held' }, counts.held);
      },
    });
    collectDefaultMetrics({ register: this.registry, prefix: 'punctual_' });
    const countByStatusCached = recentOf(() => store.jobCountByStatus(), DEPTH_CACHE_MS);
    const keysWaitingCached = recentOf(() => store.jobCountKeysWaiting(), DEPTH_CACHE_MS);
    new Gauge({
      name: 'punctual_jobs',
      help: 'Jobs by state (counted at most every 5 s)',
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const counts = await countByStatusCached();
        for (const state of JOB_STATUSES) this.set({ state }, counts[state]);
      },
    });
    new Gauge({
      name: 'punctual_keys_waiting',
      help: 'Concurrency keys with a job waiting for its turn (counted at most every 5 s)',
      registers: [this.registry],
      async collect() {
        this.set(await keysWaitingCached());
      },
    });
  }
}

/**
 * A count read at most every `maxAgeMs`, shared: scrapes that arrive while one runs wait for it
 * instead of starting another. A failed count is not kept: the next scrape tries again.
 */
function recentOf<T>(read: () => Promise<T>, maxAgeMs: number): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | null = null;
  return () => {
    if (!cached || Date.now() - cached.at > maxAgeMs) {
      const value = read();
      cached = { at: Date.now(), value };
      value.catch(() => {
        if (cached?.value === value) cached = null;
      });
    }
    return cached.value;
  };
}
