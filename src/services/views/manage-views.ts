/** What the management API (and the dashboard) shows of teams, projects and keys. */
import type { ApiKeyRow, ProjectRow, TeamRow } from '../../store/store.js';
import { DEFAULT_EVENT_TYPES, type EventRow } from '../../store/event-store.js';
import type { ProjectHealth } from '../project-health.js';
import {
  DELIVERY_WINDOW_MINUTES,
  JOB_COUNT_LIMIT,
  LATENESS_WINDOW_MINUTES,
  MINUTE_MS,
  minuteOf,
  windowStart,
  type ProjectOverview,
} from '../../store/overview-store.js';
import { formatNullableTimestamp, formatTimestamp } from '../../timestamp.js';

export function teamView(team: TeamRow) {
  return { teamId: team.id, name: team.name, plan: team.plan, createdAt: formatTimestamp(team.createdAt) };
}

/** A project's health as the API shows it (SPEC section 13): timestamps, no last error (the dashboard shows it). */
export function healthView(health: ProjectHealth) {
  return {
    state: health.state,
    since: formatNullableTimestamp(health.since),
    consecutiveFailures: health.consecutiveFailures,
    nextProbeAt: formatNullableTimestamp(health.nextProbeAt),
  };
}

export function projectView(project: ProjectRow, health: ProjectHealth) {
  return {
    projectId: project.id,
    teamId: project.teamId,
    name: project.name,
    webhookUrl: project.webhookUrl,
    retryPolicy: {
      maxRetries: project.retryMaxRetries,
      initialDelayMs: project.retryInitialDelayMs,
      factor: project.retryFactor,
      maxDelayMs: project.retryMaxDelayMs,
      stopOn: project.retryStopOn,
    },
    deliveryTimeoutMs: project.deliveryTimeoutMs,
    deliveryConcurrency: project.deliveryConcurrency,
    acceptAny2xx: project.acceptAny2xx,
    paused: project.paused,
    deliveryRatePerSecond: project.deliveryRatePerSecond,
    asyncCompletion: project.asyncCompletion,
    asyncCompletionTimeoutMs: project.asyncCompletionTimeoutMs,
    keyConcurrency: project.keyConcurrency,
    eventsUrl: project.eventsUrl,
    eventsFormat: project.eventsFormat,
    retentionDays: project.retentionDays,
    holdOnFailure: project.holdOnFailure,
    eventTypes: project.eventTypes ?? [...DEFAULT_EVENT_TYPES],
    health: healthView(health),
    createdAt: formatTimestamp(project.createdAt),
  };
}

/** An event as listed (SPEC section 10): what was sent, and how its delivery stands. */
export function eventView(event: EventRow) {
  return {
    eventId: event.id,
    type: event.type,
    occurredAt: formatTimestamp(event.occurredAt),
    projectId: event.projectId,
    data: JSON.parse(event.data) as Record<string, unknown>,
    status: event.status,
    attemptCount: event.attemptCount,
    nextAttemptAt: event.status === 'PENDING' ? formatNullableTimestamp(event.nextAttemptAt) : null,
    lastError: event.lastError,
    deliveredAt: formatNullableTimestamp(event.deliveredAt),
  };
}

export function apiKeyView(key: ApiKeyRow) {
  return {
    keyId: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: formatTimestamp(key.createdAt),
    lastUsedAt: formatNullableTimestamp(key.lastUsedAt),
    revokedAt: formatNullableTimestamp(key.revokedAt),
  };
}

/** A project's overview (GET /manage/v1/projects/:projectId/overview): the dashboard's figures, with their windows. */
export function overviewView(overview: ProjectOverview & { at: number }, health: ProjectHealth) {
  const windowEnd = formatTimestamp(minuteOf(overview.at) + MINUTE_MS);
  const deliveryStart = formatTimestamp(windowStart(overview.at, DELIVERY_WINDOW_MINUTES));
  return {
    at: formatTimestamp(overview.at),
    health: healthView(health),
    jobsByStatus: overview.jobsByStatus,
    jobCountLimit: JOB_COUNT_LIMIT,
    deliveries: {
      windowStart: deliveryStart,
      windowEnd,
      attempts: overview.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0),
      failedAttempts: overview.deliveryMinutes.reduce((sum, m) => sum + m.failedAttempts, 0),
      perMinute: overview.deliveryMinutes.map((m) => ({ minute: formatTimestamp(m.minute), attempts: m.attempts, failedAttempts: m.failedAttempts })),
    },
    lateness: { windowStart: formatTimestamp(windowStart(overview.at, LATENESS_WINDOW_MINUTES)), windowEnd, ...overview.lateness },
    recentFailures: overview.recentFailures.map((f) => ({ ...f, finishedAt: formatTimestamp(f.finishedAt) })),
  };
}
