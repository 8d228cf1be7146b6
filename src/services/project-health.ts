/**
 * A project's delivery health, in SPEC section 13's shape (`state`, `since`, `consecutiveFailures`,
 * `nextProbeAt`), read from the store's run of failures (webhook_health, kept whether or not the
 * project has an eventsUrl) and its hold. `failing` is the state in which webhook.failing is sent
 * (SPEC section 10): FAILING_AFTER attempts in a row failed. `held` is a failing project with
 * holdOnFailure: nothing of it starts until a probe succeeds (delivery/receiver-probes.ts). The
 * dashboard says each state in its own words (views/health-views.ts).
 */
import { FAILING_AFTER, type WebhookHealthState } from '../store/event-store.js';

export type HealthState = 'healthy' | 'failing' | 'held';

export interface ProjectHealth {
  state: HealthState;
  /** When the state began: the first failure of the run while failing, the hold's start while held; null while healthy. */
  since: number | null;
  /** Attempts in a row that failed, up to now (a healthy project may have a few). */
  consecutiveFailures: number;
  lastError: string | null;
  /** When the receiver is probed next, while held; null otherwise. */
  nextProbeAt: number | null;
}

export function healthOf({ run, hold }: WebhookHealthState): ProjectHealth {
  const consecutiveFailures = run?.consecutiveFailures ?? 0;
  const lastError = run?.lastError ?? null;
  if (hold) return { state: 'held', since: hold.heldSince, consecutiveFailures, lastError, nextProbeAt: hold.nextProbeAt };
  const failing = run !== null && consecutiveFailures >= FAILING_AFTER;
  return { state: failing ? 'failing' : 'healthy', since: failing ? run.failingSince : null, consecutiveFailures, lastError, nextProbeAt: null };
}
