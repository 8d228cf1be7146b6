/** The embedded store's reads for the project overview (../overview-store.ts). */
import {
  DELIVERY_WINDOW_MINUTES,
  JOB_COUNT_LIMIT,
  LATENESS_WINDOW_MINUTES,
  MINUTE_MS,
  RECENT_FAILURES_LIMIT,
  latenessSummary,
  minuteOf,
  windowStart,
  type DeliveryMinute,
  type FailedAttempt,
  type ProjectOverview,
  type ProjectOverviewParams,
} from '../overview-store.js';
import { countsByStatus } from '../job-rules.js';
import type { JobStatus } from '../store.js';
import type { BackgroundConnection } from './background-connection.js';
import * as q from './queries.js';

/**
 * On the background connection (its thread, not the event loop's), sent together: the counts walk
 * up to JOB_COUNT_LIMIT index entries per status, a few milliseconds each.
 */
export async function readProjectOverview(background: BackgroundConnection, params: ProjectOverviewParams): Promise<ProjectOverview> {
  const { projectId, now } = params;
  const countLimit = params.jobCountLimit ?? JOB_COUNT_LIMIT;
  const until = minuteOf(now) + MINUTE_MS;
  const deliveries = { projectId, from: windowStart(now, DELIVERY_WINDOW_MINUTES), until };
  const [counts, deliveryMinutes, histogram, recentFailures] = await Promise.all([
    background.all<{ status: JobStatus; n: number }>(q.JobCountByStatusOfProject, [{ projectId, limit: countLimit + 1 }]),
    background.all<DeliveryMinute>(q.DeliveryMinuteList, [deliveries]),
    background.all<{ bucket: number; attempts: number }>(q.LatenessHistogram, [{ projectId, from: windowStart(now, LATENESS_WINDOW_MINUTES), until }]),
    background.all<FailedAttempt>(q.FailedAttemptListRecent, [{ ...deliveries, limit: RECENT_FAILURES_LIMIT }]),
  ]);
  return { jobsByStatus: countsByStatus(counts), deliveryMinutes, lateness: latenessSummary(histogram), recentFailures };
}
