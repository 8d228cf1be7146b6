/** The embedded store's writes of events (SPEC section 10), run on the writer thread like those of writes.ts. */
import { healthAfter, type ClaimedEvent, type EventAttemptOutcome, type HealthOutcome, type NewEvent, type WebhookHealthRow } from '../event-store.js';
import * as q from './queries.js';
import type { Sql } from './writes.js';

export function insertEvent(sql: Sql, event: NewEvent): boolean {
  return sql(q.EventInsert).run(event).changes > 0;
}

export const EVENT_WRITES = {
  eventInsert(sql: Sql, event: NewEvent): boolean {
    return insertEvent(sql, event);
  },

  eventClaimDue(sql: Sql, p: { now: number; limit: number; workerId: string; leaseExtraMs: number }): ClaimedEvent[] {
    const claimed = sql(q.EventClaimDue).all(p) as ClaimedEvent[];
    // RETURNING gives no order.
    return claimed.sort((a, b) => a.occurredAt - b.occurredAt || a.seq - b.seq);
  },

  eventReleaseClaims(sql: Sql, p: { now: number }): number {
    return sql(q.EventReleaseClaims).run(p).changes;
  },

  eventFinish(sql: Sql, p: { eventId: string; workerId: string; leaseUntil: number; now: number; outcome: EventAttemptOutcome }): boolean {
    const { outcome } = p;
    return (
      sql(q.EventFinish).run({
        eventId: p.eventId,
        workerId: p.workerId,
        leaseUntil: p.leaseUntil,
        now: p.now,
        status: outcome.kind === 'delivered' ? 'DELIVERED' : outcome.kind === 'failed' ? 'FAILED' : 'PENDING',
        nextAttemptAt: outcome.kind === 'retry' ? outcome.at : null,
        error: outcome.kind === 'delivered' ? null : outcome.error,
        deliveredAt: outcome.kind === 'delivered' ? p.now : null,
      }).changes > 0
    );
  },

  webhookHealthRecord(sql: Sql, p: { projectId: string; outcomes: HealthOutcome[] }): void {
    let row = (sql(q.WebhookHealthGet).get(p.projectId) as WebhookHealthRow | undefined) ?? null;
    const before = row;
    for (const outcome of p.outcomes) {
      const after = healthAfter(row, outcome);
      row = after.row;
      if (after.event) {
        insertEvent(sql, { id: outcome.eventId, projectId: p.projectId, type: after.event.type, occurredAt: outcome.at, data: JSON.stringify(after.event.data) });
      }
    }
    if (row) sql(q.WebhookHealthUpsert).run({ projectId: p.projectId, ...row });
    else if (before) sql(q.WebhookHealthDelete).run(p.projectId);
  },

  eventPrune(sql: Sql, p: { occurredBy: number; limit: number }): number {
    return sql(q.EventPrune).run(p).changes;
  },
} as const;
