import type { ApiKeyPrincipal } from './auth-store.js';
import type { EventsFormat } from './tenancy-store.js';

/**
 * The flat row of ApiKeyFindByHash (the same column aliases in both dialects) as a principal.
 * Flags come back as 0/1 from SQLite and as a boolean from PostgreSQL; lists as JSON from SQLite and
 * as arrays from PostgreSQL.
 */
export function principalFromRow(row: Record<string, unknown>): ApiKeyPrincipal {
  return {
    key: {
      id: row.keyId as string,
      projectId: row.keyProjectId as string,
      name: row.keyName as string,
      hash: row.keyHash as Buffer,
      prefix: row.keyPrefix as string,
      createdAt: row.keyCreatedAt as number,
      lastUsedAt: row.keyLastUsedAt as number | null,
      revokedAt: row.keyRevokedAt as number | null,
    },
    project: {
      id: row.id as string,
      teamId: row.teamId as string,
      name: row.name as string,
      webhookUrl: row.webhookUrl as string | null,
      retryMaxRetries: row.retryMaxRetries as number | null,
      retryInitialDelayMs: row.retryInitialDelayMs as number,
      retryFactor: row.retryFactor as number,
      retryMaxDelayMs: row.retryMaxDelayMs as number,
      deliveryTimeoutMs: row.deliveryTimeoutMs as number,
      deliveryConcurrency: row.deliveryConcurrency as number,
      acceptAny2xx: row.acceptAny2xx === true || row.acceptAny2xx === 1,
      retentionDays: row.retentionDays as number | null,
      paused: row.paused === true || row.paused === 1,
      eventsUrl: row.eventsUrl as string | null,
      eventsFormat: row.eventsFormat as EventsFormat,
      deliveryRatePerSecond: row.deliveryRatePerSecond as number | null,
      asyncCompletion: row.asyncCompletion === true || row.asyncCompletion === 1,
      asyncCompletionTimeoutMs: row.asyncCompletionTimeoutMs as number,
      keyConcurrency: row.keyConcurrency as number,
      holdOnFailure: row.holdOnFailure === true || row.holdOnFailure === 1,
      eventTypes: typeof row.eventTypes === 'string' ? (JSON.parse(row.eventTypes) as string[]) : ((row.eventTypes as string[] | null) ?? null),
      retryStopOn: typeof row.retryStopOn === 'string' ? (JSON.parse(row.retryStopOn) as number[]) : (row.retryStopOn as number[]),
      createdAt: row.createdAt as number,
    },
    team: { id: row.teamId as string, name: row.teamName as string, plan: row.teamPlan as string, createdAt: row.teamCreatedAt as number },
  };
}
