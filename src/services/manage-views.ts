/** What the management API (and the dashboard) shows of teams, projects and keys. */
import type { ApiKeyRow, ProjectRow, TeamRow } from '../store/store.js';
import { formatNullableTimestamp, formatTimestamp } from '../timestamp.js';

export function teamView(team: TeamRow) {
  return { teamId: team.id, name: team.name, plan: team.plan, createdAt: formatTimestamp(team.createdAt) };
}

export function projectView(project: ProjectRow) {
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
    },
    deliveryTimeoutMs: project.deliveryTimeoutMs,
    deliveryConcurrency: project.deliveryConcurrency,
    acceptAny2xx: project.acceptAny2xx,
    paused: project.paused,
    eventsUrl: project.eventsUrl,
    eventsFormat: project.eventsFormat,
    retentionDays: project.retentionDays,
    createdAt: formatTimestamp(project.createdAt),
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
