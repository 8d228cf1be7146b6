/**
 * The storage contract of events (SPEC section 10), part of Store (store.ts): an outbox. An event
 * is recorded only when its project has an eventsUrl, in the transaction of what it tells where
 * there is one (a job's last attempt, a schedule's advance), and delivered at least once by
 * whichever instance claims it (a lease in the row, as jobs have).
 */
import { formatTimestamp } from '../timestamp.js';
import { methodList } from './forward-methods.js';

export const EVENT_TYPES = ['job.failed', 'webhook.failing', 'webhook.recovered', 'schedule.skipped'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export type EventStatus = 'PENDING' | 'DELIVERED' | 'FAILED';

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

/** One delivery attempt's outcome for webhook health: a failure (with its error) or a success. */
export interface HealthOutcome {
  failed: boolean;
  error: string | null;
  at: number;
  /** The id the event this outcome may cause (webhook.failing or webhook.recovered) takes. */
  eventId: string;
}

export interface WebhookHealthRow {
  consecutiveFailures: number;
  failingSince: number;
  /** When the last webhook.failing was recorded; null before the run reached FAILING_AFTER. */
  failingEventAt: number | null;
  lastError: string | null;
}

export interface EventStore {
  /** Records the event when its project has an eventsUrl; false (nothing written) otherwise. */
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
   * Applies a project's attempt outcomes, in order, to its run of failures (healthAfter), and
   * records the events they cause, in one transaction.
   */
  webhookHealthRecord(params: { projectId: string; outcomes: HealthOutcome[] }): Promise<void>;
  /** The projects with failures in a row now. */
  webhookHealthListFailing(): Promise<string[]>;
  /** A project's run of failures now (whether or not it has an eventsUrl); null when its last attempt succeeded or it has none. */
  webhookHealthGet(params: { projectId: string }): Promise<WebhookHealthRow | null>;
  /** Deletes up to `limit` events that occurred at or before `occurredBy`. */
  eventPrune(params: { occurredBy: number; limit: number }): Promise<number>;
}

/** EventStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const EVENT_STORE_METHODS = methodList<EventStore>()(['eventInsert', 'eventList', 'eventClaimDue', 'eventReleaseClaims', 'eventFinish', 'webhookHealthRecord', 'webhookHealthListFailing', 'webhookHealthGet', 'eventPrune'] as const);

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
    return { row: null, event: { type: 'webhook.recovered', data: { failingSince: formatTimestamp(row.failingSince) } } };
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

/** The event id a job's final failed attempt records (job.failed): one per attempt, whichever instance records it. */
export const jobFailedEventId = (attemptId: string): string => `evt_${attemptId.slice('att_'.length)}`;
