/**
 * The storage contract of a project's overview (the dashboard's first tab), part of Store
 * (store.ts): how its jobs stand now, and how its deliveries went lately.
 *
 * The figures over time are kept as attempts start and finish (0011_project_overview.sql), in
 * rows per project and minute, so that reading them costs at most a day of minutes however many
 * attempts there were: attempts have no index by project or by time, and one would cost every
 * start and finish. Lateness is kept as a histogram (LATENESS_BOUNDS), so its percentiles come
 * from at most an hour of bucket counts, not from sorting an hour of jobs.
 */
import { countsByStatus } from './job-rules.js';
import type { AttemptOutcome } from './attempt-store.js';
import type { JobStatus } from './job-store.js';
import { methodList } from './forward-methods.js';

export const MINUTE_MS = 60_000;
/** Deliveries, failures, the success rate and the last failures cover this many minutes, the current one included (24 hours). */
export const DELIVERY_WINDOW_MINUTES = 1_440;
/** Lateness covers this many minutes, the current one included (an hour). */
export const LATENESS_WINDOW_MINUTES = 60;
/** How many of the latest failed attempts the overview lists. */
export const RECENT_FAILURES_LIMIT = 10;
/**
 * Jobs are counted by status up to this many: a count above it is answered as JOB_COUNT_LIMIT + 1
 * (and shown as "10,000+"). Each count walks the index entries of its status: a count to 100,000
 * took 10 ms on the embedded store and 40 on PostgreSQL (bench:overview), to 10,000 a tenth of
 * that, so a project of millions of jobs does not make the page slow.
 */
export const JOB_COUNT_LIMIT = 10_000;

/** The start (epoch ms) of the minute holding `at`. */
export const minuteOf = (at: number): number => at - (((at % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);

/** The first minute of a window of `minutes` minutes ending with the one holding `now`. */
export const windowStart = (now: number, minutes: number): number => minuteOf(now) - (minutes - 1) * MINUTE_MS;

/**
 * The lower bounds (ms) of the lateness buckets: a lateness falls in the bucket numbered by how many
 * bounds are at or below it (PostgreSQL's width_bucket): 0 for on time or early (under 1 ms), then
 * buckets about a fifth wider each (2^(1/4)), whole milliseconds, up to 2^32 ms (about 50 days),
 * beyond which everything is the last bucket: 124 bounds, 125 buckets.
 */
export const LATENESS_BOUNDS: readonly number[] = (() => {
  const bounds: number[] = [];
  for (let k = 0; k <= 128; k += 1) {
    const bound = Math.ceil(2 ** (k / 4));
    if (bound !== bounds[bounds.length - 1]) bounds.push(bound);
  }
  return bounds;
})();

/** The bucket of a lateness in ms: how many LATENESS_BOUNDS are at or below it. */
export function latenessBucket(latenessMs: number): number {
  let low = 0;
  let high = LATENESS_BOUNDS.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (LATENESS_BOUNDS[middle]! <= latenessMs) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The largest lateness a bucket holds, in whole ms (0 for the first: on time or early); for the
 * last, open-ended bucket, its lower bound.
 */
export function latenessBucketTop(bucket: number): number {
  if (bucket <= 0) return 0;
  if (bucket >= LATENESS_BOUNDS.length) return LATENESS_BOUNDS[LATENESS_BOUNDS.length - 1]!;
  return LATENESS_BOUNDS[bucket]! - 1;
}

/**
 * The q-th quantile (0 < q ≤ 1) of a histogram, by nearest rank: the top of the bucket that holds
 * the ceil(q × n)-th smallest lateness. An upper bound of the true value, above it by less than a
 * bucket's width (at most a fifth). Null for an empty histogram.
 */
export function latenessQuantile(histogram: readonly { bucket: number; attempts: number }[], q: number): number | null {
  const sorted = [...histogram].filter((h) => h.attempts > 0).sort((a, b) => a.bucket - b.bucket);
  const total = sorted.reduce((sum, h) => sum + h.attempts, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const h of sorted) {
    seen += h.attempts;
    if (seen >= rank) return latenessBucketTop(h.bucket);
  }
  return latenessBucketTop(sorted[sorted.length - 1]!.bucket);
}

/** Both stores answer the lateness figures from their histogram rows (summed per bucket) with this. */
export function latenessSummary(histogram: readonly { bucket: number; attempts: number }[]): LatenessSummary {
  return {
    firstAttempts: histogram.reduce((sum, h) => sum + h.attempts, 0),
    p50Ms: latenessQuantile(histogram, 0.5),
    p99Ms: latenessQuantile(histogram, 0.99),
  };
}

export interface DeliveryMinute {
  /** The minute's start, epoch ms. */
  minute: number;
  /** Attempts that finished in it, whatever their outcome. */
  attempts: number;
  /** Those whose outcome was not success. */
  failedAttempts: number;
}

export interface LatenessSummary {
  /** First attempts (attempt number 1) that started in the window. */
  firstAttempts: number;
  /** Upper bounds (ms) of the median and the 99th percentile of their lateness; null without any. */
  p50Ms: number | null;
  p99Ms: number | null;
}

/** A failed attempt as the overview lists it. */
export interface FailedAttempt {
  jobId: string;
  attemptId: string;
  attemptNumber: number;
  finishedAt: number;
  outcome: Exclude<AttemptOutcome, 'success'>;
  statusCode: number | null;
  error: string | null;
}

export interface ProjectOverview {
  /** The project's jobs by status now, each counted up to the limit + 1 (ProjectOverviewParams). */
  jobsByStatus: Record<JobStatus, number>;
  /** The minutes of the delivery window in which attempts finished, oldest first (others had none). */
  deliveryMinutes: DeliveryMinute[];
  /** First attempts started in the lateness window: how many, and how late. */
  lateness: LatenessSummary;
  /** The latest attempts that failed in the delivery window, newest first, at most RECENT_FAILURES_LIMIT. */
  recentFailures: FailedAttempt[];
}

export interface ProjectOverviewParams {
  projectId: string;
  now: number;
  /** Jobs are counted by status up to this many (JOB_COUNT_LIMIT by default); a count above it is answered as the limit + 1. */
  jobCountLimit?: number;
}

export interface OverviewStore {
  /**
   * A project's overview at `now`: its jobs by status, then over the windows ending with the
   * minute of `now` its attempts finished per minute, its first attempts' lateness and its latest
   * failed attempts. Lateness is each first attempt's start minus the job's due time then (its
   * runAt: the time asked for, or when it entered QUEUED if later), counted at the start.
   */
  projectOverview(params: ProjectOverviewParams): Promise<ProjectOverview>;
  /**
   * Folds the rows over which a store spreads one minute's figures as they are written (PostgreSQL's
   * shards) into one, for minutes before `before`, up to `limit` rows at a time; how many rows were
   * folded away. No figure changes; reads then sum a row per minute, not up to 16. A store that
   * writes one row per minute (SQLite) has nothing to fold: 0.
   */
  overviewCompact(params: { before: number; limit: number }): Promise<number>;
  /** Deletes up to `limit` of the overview's rows (every project's) of minutes before `before`; how many. */
  overviewPrune(params: { before: number; limit: number }): Promise<number>;
}

/** OverviewStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const OVERVIEW_STORE_METHODS = methodList<OverviewStore>()(['projectOverview', 'overviewCompact', 'overviewPrune'] as const);

/** What both stores read for an overview at `params.now`: the project, the count limit and each window's bounds. */
export function overviewWindows(params: ProjectOverviewParams): {
  projectId: string;
  countLimit: number;
  deliveriesFrom: number;
  latenessFrom: number;
  /** The end (exclusive) of every window: the end of the current minute. */
  until: number;
} {
  return {
    projectId: params.projectId,
    countLimit: params.jobCountLimit ?? JOB_COUNT_LIMIT,
    deliveriesFrom: windowStart(params.now, DELIVERY_WINDOW_MINUTES),
    latenessFrom: windowStart(params.now, LATENESS_WINDOW_MINUTES),
    until: minuteOf(params.now) + MINUTE_MS,
  };
}

/** The overview from a store's four reads. */
export function overviewOf(
  counts: { status: JobStatus; n: number }[],
  deliveryMinutes: DeliveryMinute[],
  histogram: { bucket: number; attempts: number }[],
  recentFailures: FailedAttempt[],
): ProjectOverview {
  return { jobsByStatus: countsByStatus(counts), deliveryMinutes, lateness: latenessSummary(histogram), recentFailures };
}
