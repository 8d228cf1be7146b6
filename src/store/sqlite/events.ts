/**
 * Events in the embedded store (../event-store.ts, SPEC section 10): reads on the reader
 * connection, writes on the writer thread (event-writes.ts).
 */
import type { ClaimedEvent, EventAttemptOutcome, EventRow, EventStore, HealthOutcome, NewEvent, ProjectHold, WebhookHealthRow, WebhookHealthState } from '../event-store.js';
import * as eventWrites from './event-writes.js';
import { FAILING_AFTER } from '../event-store.js';
import { EventList, ProjectHoldGet, WebhookHealthCounts, WebhookHealthGet, WebhookHealthListFailing, WebhookProbeNextAt } from './queries/events.js';
import type { Sql } from './sql.js';
import type { SqliteWriter } from './writer.js';

export class SqliteEvents implements EventStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
  ) {}

  eventInsert(event: NewEvent): Promise<boolean> {
    return this.writer.run(eventWrites.eventInsert, event);
  }

  async eventList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<EventRow[]> {
    return this.sql(EventList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }) as EventRow[];
  }

  eventClaimDue(params: { now: number; limit: number; workerId: string; leaseExtraMs: number }): Promise<ClaimedEvent[]> {
    return this.writer.run(eventWrites.eventClaimDue, params);
  }

  eventReleaseClaims(params: { now: number }): Promise<number> {
    return this.writer.run(eventWrites.eventReleaseClaims, params);
  }

  eventFinish(params: { eventId: string; workerId: string; leaseUntil: number; now: number; outcome: EventAttemptOutcome }): Promise<boolean> {
    return this.writer.run(eventWrites.eventFinish, params);
  }

  webhookHealthRecord(params: { projectId: string; outcomes: HealthOutcome[] }): Promise<{ held: boolean }> {
    return this.writer.run(eventWrites.webhookHealthRecord, params);
  }

  async webhookHealthListFailing(): Promise<string[]> {
    return (this.sql(WebhookHealthListFailing).all() as { projectId: string }[]).map((row) => row.projectId);
  }

  async webhookHealthGet(params: { projectId: string }): Promise<WebhookHealthState> {
    return {
      run: (this.sql(WebhookHealthGet).get(params.projectId) as WebhookHealthRow | undefined) ?? null,
      hold: (this.sql(ProjectHoldGet).get(params.projectId) as ProjectHold | undefined) ?? null,
    };
  }

  async webhookHealthCounts(): Promise<{ failing: number; held: number }> {
    return this.sql(WebhookHealthCounts).get({ failingAfter: FAILING_AFTER }) as { failing: number; held: number };
  }

  webhookProbeClaimDue(params: { now: number }): Promise<string[]> {
    return this.writer.run(eventWrites.webhookProbeClaimDue, params);
  }

  async webhookProbeNextAt(): Promise<number | null> {
    return (this.sql(WebhookProbeNextAt).get() as { at: number | null }).at;
  }

  webhookHoldEnd(params: { projectId: string; now: number; eventId: string }): Promise<{ heldSince: number } | null> {
    return this.writer.run(eventWrites.webhookHoldEnd, params);
  }

  eventPrune(params: { occurredBy: number; limit: number }): Promise<number> {
    return this.writer.run(eventWrites.eventPrune, params);
  }
}
