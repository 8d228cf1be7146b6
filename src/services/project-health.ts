/**
 * A project's delivery health, in SPEC section 13's shape (`state`, `since`, `consecutiveFailures`,
 * `nextProbeAt`), read from the store's run of failures (webhook_health, kept whether or not the
 * project has an eventsUrl). `failing` is the state in which webhook.failing is sent (SPEC section
 * 10): FAILING_AFTER attempts in a row failed. A held project (holdOnFailure, SPEC section 13) is one
 * more state, with its next probe; the dashboard says each state in its own words (views/health-views.ts).
 */
import { FAILING_AFTER, type WebhookHealthRow } from '../store/event-store.js';

export type HealthState = 'healthy' | 'failing';

export interface ProjectHealth {
  state: HealthState;
  /** When the state began: the first failure of the run while failing; null while healthy. */
  since: number | null;
  /** Attempts in a row that failed, up to now (a healthy project may have a few). */
  consecutiveFailures: number;
  lastError: string | null;
  /** When the receiver is probed next, while held; null otherwise. */
  nextProbeAt: number | null;
}

export function healthOf(row: WebhookHealthRow | null): ProjectHealth {
  const consecutiveFailures = row?.consecutiveFailures ?? 0;
  const failing = row !== null && consecutiveFailures >= FAILING_AFTER;
  return {
    state: failing ? 'failing' : 'healthy',
    since: failing ? row.failingSince : null,
    consecutiveFailures,
    lastError: row?.lastError ?? null,
    nextProbeAt: null,
  };
}
