/**
 * The storage contract of events (SPEC sections 10 and 13), part of Store (store.ts): an outbox and
 * the project's activity feed. Every event is recorded (those not sent as NOT_SENT), in the transaction of what it tells where
 * there is one (a job's last attempt, a schedule's advance), and delivered at least once by
 * whichever instance claims it (a lease in the row, as jobs have).
 */
import { formatTimestamp } from '../timestamp.js';
import { methodList } from './forward-methods.js';

export const EVENT_TYPES = ['job.failed', 'webhook.failing', 'webhook.recovered', 'schedule.skipped', 'webhook.held', 'job.completed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** The types sent to an eventsUrl unless the project chooses (eventTypes, SPEC section 13): every type but job.completed. */
export const DEFAULT_EVENT_TYPES: readonly EventType[] = EVENT_TYPES.filter((type) => type !== 'job.completed');
/** NOT_SENT: recorded for the activity feed, but the project has no eventsUrl or does not subscribe to its type. */
export type EventStatus = 'PENDING' | 'DELIVERED' | 'FAILED' | 'NOT_SENT';

export interface NewEvent {
  id: string;
  projectId: string;
  type: EventType;
  occurredAt: number;
  /** The event's `data` object as JSON. */
  data: string;
}

export interface EventRow extends NewEvent {
  /** Insertion order; the list cursor. */
  seq: number;
  status: EventStatus;
  /** Delivery attempts made. */
  attemptCount: number;
  /** While PENDING: when the next attempt is due (or, claimed, when the claim lapses). */
  nextAttemptAt: number | null;
  lastError: string | null;
  deliveredAt: number | null;
}

/** An event claimed for one delivery attempt; the claim holds until leaseUntil. */
export interface ClaimedEvent extends EventRow {
  leaseUntil: number;
}

export type EventAttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; at: number; error: string }
  | { kind: 'failed'; error: string };

/**
 * One delivery attempt's outcome for webhook health: a failure that counts (with its error, SPEC
 * section 13: network errors, timeouts, 5xx, 408, 429) or a success.
 */
export interface HealthOutcome {
  failed: boolean;
  error: string | null;
  at: number;
  /** The id the event this outcome may cause (webhook.failing or webhook.recovered) takes. */
  eventId: string;
  /** The id of webhook.held, when this outcome holds the project. */
  heldEventId: string;
}

/** A held project (SPEC section 13): since when, and its probes. */
export interface ProjectHold {
  heldSince: number;
  /** When the receiver is probed next; a probe claimed moves it on by the doubled interval. */
  nextProbeAt: number;
  /** The interval the next probe opens (PROBE_FIRST_MS doubling to PROBE_MAX_MS). */
  probeIntervalMs: number;
}

/** A project's delivery health as the store keeps it: its run of failures and its hold. */
export interface WebhookHealthState {
  run: WebhookHealthRow | null;
  hold: ProjectHold | null;
}

export interface WebhookHealthRow {
  consecutiveFailures: number;
  failingSince: number;
  /** When the last webhook.failing was recorded; null before the run reached FAILING_AFTER. */
  failingEventAt: number | null;
  lastError: string | null;
}

export interface EventStore {
  /**
   * Records the event: PENDING (to be sent) when its project has an eventsUrl and subscribes to its
   * type, NOT_SENT otherwise; a job.completed only when it is sent. Whether it was recorded.
   */
  eventInsert(event: NewEvent): Promise<boolean>;
  /** A project's events, newest first, below `beforeSeq` (the cursor). */
  eventList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<EventRow[]>;
  /**
   * Up to `limit` PENDING events due by `now`, earliest first, claimed by `workerId` until now +
   * the project's delivery timeout + leaseExtraMs; an event another instance is claiming is skipped.
   */
  eventClaimDue(params: { now: number; limit: number; workerId: string; leaseExtraMs: number }): Promise<ClaimedEvent[]>;
  /**
   * Every claim lapses at once: the events are due again at `now`. For a store whose only instance
   * is starting (soleInstance), whose claims were left by a process that is gone.
   */
  eventReleaseClaims(params: { now: number }): Promise<number>;
  /** Records an attempt's outcome, only while this worker's claim on the event holds. */
  eventFinish(params: { eventId: string; workerId: string; leaseUntil: number; now: number; outcome: EventAttemptOutcome }): Promise<boolean>;
  /**
   * Applies a project's attempt outcomes, in order, to its run of failures (healthRecord), and
   * records the events they cause, in one transaction. A project with holdOnFailure that turns
   * failing is held in the same transaction (`held`: this call held it); the outcomes of a held
   * project (attempts that were in flight) change nothing.
   */
  webhookHealthRecord(params: { projectId: string; outcomes: HealthOutcome[] }): Promise<{ held: boolean }>;
  /** The projects with failures in a row now. */
  webhookHealthListFailing(): Promise<string[]>;
  /** A project's run of failures now (whether or not it has an eventsUrl; null when its last attempt succeeded or it has none) and its hold. */
  webhookHealthGet(params: { projectId: string }): Promise<WebhookHealthState>;
  /**
   * Claims the probes due by `now` of held projects not paused: each one's next_probe_at moves on by
   * its doubled interval (capped), in the same conditional update, so that across instances one
   * probe goes out each time. The projects claimed.
   */
  webhookProbeClaimDue(params: { now: number }): Promise<string[]>;
  /** How many projects are failing (not held) and held now, for /metrics. */
  webhookHealthCounts(): Promise<{ failing: number; held: number }>;
  /** When the next probe of a held project not paused is due; null when none is held. */
  webhookProbeNextAt(): Promise<number | null>;
  /**
   * A probe succeeded: the hold ends, the run of failures is reset, and webhook.recovered (with
   * failingSince and heldFor) is recorded as `eventId`. The hold's start, or null when the project
   * was not held (nothing written then).
   */
  webhookHoldEnd(params: { projectId: string; now: number; eventId: string }): Promise<{ heldSince: number } | null>;
  /** Deletes up to `limit` events that occurred at or before `occurredBy`. */
  eventPrune(params: { occurredBy: number; limit: number }): Promise<number>;
}

/** EventStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const EVENT_STORE_METHODS = methodList<EventStore>()(['eventInsert', 'eventList', 'eventClaimDue', 'eventReleaseClaims', 'eventFinish', 'webhookHealthRecord', 'webhookHealthListFailing', 'webhookHealthGet', 'webhookHealthCounts', 'webhookProbeClaimDue', 'webhookProbeNextAt', 'webhookHoldEnd', 'eventPrune'] as const);

/** SPEC section 10: webhook.failing after this many failed attempts in a row, at most once an hour while it lasts. */
export const FAILING_AFTER = 10;
export const FAILING_REPEAT_MS = 3_600_000;

/**
 * One outcome applied to a project's run of failures: the run as it is after it (null: no failures
 * in a row), and the event it causes, if any. Both drivers apply it inside their transaction.
 */
export function healthAfter(
  row: WebhookHealthRow | null,
  outcome: HealthOutcome,
): { row: WebhookHealthRow | null; event: { type: EventType; data: Record<string, unknown> } | null } {
  if (!outcome.failed) {
    if (!row || row.failingEventAt === null) return { row: null, event: null };
    return { row: null, event: { type: 'webhook.recovered', data: { failingSince: formatTimestamp(row.failingSince), heldFor: null } } };
  }
  const next: WebhookHealthRow = {
    consecutiveFailures: (row?.consecutiveFailures ?? 0) + 1,
    failingSince: row?.failingSince ?? outcome.at,
    failingEventAt: row?.failingEventAt ?? null,
    lastError: outcome.error,
  };
  if (next.consecutiveFailures < FAILING_AFTER) return { row: next, event: null };
  if (next.failingEventAt !== null && outcome.at - next.failingEventAt < FAILING_REPEAT_MS) return { row: next, event: null };
  next.failingEventAt = outcome.at;
  return {
    row: next,
    event: {
      type: 'webhook.failing',
      data: { consecutiveFailures: next.consecutiveFailures, lastError: next.lastError, since: formatTimestamp(next.failingSince) },
    },
  };
}

/** SPEC section 13: a held project is probed PROBE_FIRST_MS after the hold, then at doubling intervals up to PROBE_MAX_MS. */
export const PROBE_FIRST_MS = 30_000;
export const PROBE_MAX_MS = 600_000;

/** The interval after a probe that opened `intervalMs`: doubled, capped. */
export const nextProbeInterval = (intervalMs: number): number => Math.min(intervalMs * 2, PROBE_MAX_MS);

type HealthEvent = { id: string; type: EventType; occurredAt: number; data: Record<string, unknown> };

/**
 * A project's outcomes applied to its run of failures (healthAfter, one by one) and to its hold:
 * with holdOnFailure, the first counted failure at or past FAILING_AFTER holds the project
 * (webhook.held); a project held already, or once held, takes no more outcomes (they are of
 * attempts that were in flight). Both drivers apply it inside their transaction.
 */
export function healthRecord(
  before: WebhookHealthRow | null,
  project: { holdOnFailure: boolean; held: boolean },
  outcomes: HealthOutcome[],
): { row: WebhookHealthRow | null; events: HealthEvent[]; hold: ProjectHold | null } {
  let row = before;
  const events: HealthEvent[] = [];
  if (project.held) return { row, events, hold: null };
  for (const outcome of outcomes) {
    const after = healthAfter(row, outcome);
    row = after.row;
    if (after.event) events.push({ id: outcome.eventId, type: after.event.type, occurredAt: outcome.at, data: after.event.data });
    if (project.holdOnFailure && outcome.failed && row && row.consecutiveFailures >= FAILING_AFTER) {
      events.push({
        id: outcome.heldEventId,
        type: 'webhook.held',
        occurredAt: outcome.at,
        data: { consecutiveFailures: row.consecutiveFailures, lastError: row.lastError, since: formatTimestamp(row.failingSince) },
      });
      return { row, events, hold: { heldSince: outcome.at, nextProbeAt: outcome.at + PROBE_FIRST_MS, probeIntervalMs: PROBE_FIRST_MS } };
    }
  }
  return { row, events, hold: null };
}

/** webhook.recovered's data after a hold (SPEC sections 10 and 13). */
export const recoveredAfterHold = (run: WebhookHealthRow | null, heldSince: number, now: number): Record<string, unknown> => ({
  failingSince: formatTimestamp(run?.failingSince ?? heldSince),
  heldFor: now - heldSince,
});

/** The event id a job's final failed attempt records (job.failed): one per attempt, whichever instance records it. */
export const jobFailedEventId = (attemptId: string): string => `evt_${attemptId.slice('att_'.length)}`;
