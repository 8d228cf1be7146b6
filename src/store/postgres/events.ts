/** Events (SPEC section 10) in PostgreSQL (bigint columns arrive as numbers: connection-pool.ts). */
import type { EventStore } from '../event-store.js';
import {
  healthAfter,
  type ClaimedEvent,
  type EventAttemptOutcome,
  type EventRow,
  type HealthOutcome,
  type NewEvent,
  type WebhookHealthRow,
} from '../event-store.js';
import type { ConnectionPool, Queryable } from './connection-pool.js';
import { EventClaimDue, EventFinish, EventInsert, EventList, EventPrune, EventReleaseClaims, WebhookHealthDelete, WebhookHealthGet, WebhookHealthGetForUpdate, WebhookHealthListFailing, WebhookHealthLockProject, WebhookHealthUpsert } from './queries/events.js';

export class PostgresEvents implements EventStore {
  constructor(private readonly db: ConnectionPool) {}

  async eventInsert(event: NewEvent, client?: Queryable): Promise<boolean> {
    const args = [event.id, event.projectId, event.type, event.occurredAt, event.data];
    return ((await this.db.query(EventInsert, args, client)).rowCount ?? 0) > 0;
  }

  eventList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<EventRow[]> {
    return this.db.rows<EventRow>(EventList, [params.projectId, params.beforeSeq ?? Number.MAX_SAFE_INTEGER, params.limit]);
  }

  async eventClaimDue(params: { now: number; limit: number; workerId: string; leaseExtraMs: number }): Promise<ClaimedEvent[]> {
    const rows = await this.db.rows<ClaimedEvent>(EventClaimDue, [params.now, params.limit, params.workerId, params.leaseExtraMs]);
    // RETURNING gives no order.
    return rows.sort((a, b) => a.occurredAt - b.occurredAt || a.seq - b.seq);
  }

  async eventFinish(p: { eventId: string; workerId: string; leaseUntil: number; now: number; outcome: EventAttemptOutcome }): Promise<boolean> {
    const { outcome } = p;
    const args = [
      p.eventId,
      p.workerId,
      p.leaseUntil,
      p.now,
      outcome.kind === 'delivered' ? 'DELIVERED' : outcome.kind === 'failed' ? 'FAILED' : 'PENDING',
      outcome.kind === 'retry' ? outcome.at : null,
      outcome.kind === 'delivered' ? null : outcome.error,
      outcome.kind === 'delivered' ? p.now : null,
    ];
    return ((await this.db.query(EventFinish, args)).rowCount ?? 0) > 0;
  }

  async eventReleaseClaims(params: { now: number }): Promise<number> {
    return (await this.db.query(EventReleaseClaims, [params.now])).rowCount ?? 0;
  }

  /** Under the project row's lock, so that instances recording outcomes of one project take turns. */
  async webhookHealthRecord(p: { projectId: string; outcomes: HealthOutcome[] }): Promise<void> {
    await this.db.transaction(async (client) => {
      await this.db.query(WebhookHealthLockProject, [p.projectId], client);
      const before = (await this.db.rows<WebhookHealthRow>(WebhookHealthGetForUpdate, [p.projectId], client))[0] ?? null;
      let row = before;
      for (const outcome of p.outcomes) {
        const after = healthAfter(row, outcome);
        row = after.row;
        if (after.event) {
          const event = { id: outcome.eventId, projectId: p.projectId, type: after.event.type, occurredAt: outcome.at, data: JSON.stringify(after.event.data) };
          await this.eventInsert(event, client);
        }
      }
      if (row) await this.db.query(WebhookHealthUpsert, [p.projectId, row.consecutiveFailures, row.failingSince, row.failingEventAt, row.lastError], client);
      else if (before) await this.db.query(WebhookHealthDelete, [p.projectId], client);
    });
  }

  async webhookHealthListFailing(): Promise<string[]> {
    return (await this.db.rows<{ projectId: string }>(WebhookHealthListFailing)).map((row) => row.projectId);
  }

  async webhookHealthGet(params: { projectId: string }): Promise<WebhookHealthRow | null> {
    return (await this.db.rows<WebhookHealthRow>(WebhookHealthGet, [params.projectId]))[0] ?? null;
  }

  async eventPrune(params: { occurredBy: number; limit: number }): Promise<number> {
    return (await this.db.query(EventPrune, [params.occurredBy, params.limit])).rowCount ?? 0;
  }
}
