/** The embedded store's reads for the project overview (../overview-store.ts). */
import {
  RECENT_FAILURES_LIMIT,
  overviewOf,
  overviewWindows,
  type DeliveryMinute,
  type FailedAttempt,
  type ProjectOverview,
  type ProjectOverviewParams,
} from '../overview-store.js';
import type { JobStatus } from '../store.js';
import type { BackgroundConnection } from './background-connection.js';
import { DeliveryMinuteList, FailedAttemptListRecent, JobCountByStatusOfProject, LatenessHistogram } from './queries/overview.js';

/**
 * On the background connection (its thread, not the event loop's), sent together: the counts walk
 * up to JOB_COUNT_LIMIT index entries per status, a few milliseconds each.
 */
export async function readProjectOverview(background: BackgroundConnection, params: ProjectOverviewParams): Promise<ProjectOverview> {
  const { projectId, countLimit, deliveriesFrom, latenessFrom, until } = overviewWindows(params);
  const deliveries = { projectId, from: deliveriesFrom, until };
  const [counts, deliveryMinutes, histogram, recentFailures] = await Promise.all([
    background.all<{ status: JobStatus; n: number }>(JobCountByStatusOfProject, [{ projectId, limit: countLimit + 1 }]),
    background.all<DeliveryMinute>(DeliveryMinuteList, [deliveries]),
    background.all<{ bucket: number; attempts: number }>(LatenessHistogram, [{ projectId, from: latenessFrom, until }]),
    background.all<FailedAttempt>(FailedAttemptListRecent, [{ ...deliveries, limit: RECENT_FAILURES_LIMIT }]),
  ]);
  return overviewOf(counts, deliveryMinutes, histogram, recentFailures);
}
