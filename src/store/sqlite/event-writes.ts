/**
 * The embedded store's writes of events (SPEC section 10) and webhook health, each a function of
 * its parameters run on the writer thread inside the group's transaction, in its own savepoint
 * (write-registry.ts says how a call reaches it). The store passes the function itself:
 * `writer.run(eventWrites.eventInsert, params)`.
 */
import { healthAfter, type ClaimedEvent, type EventAttemptOutcome, type HealthOutcome, type NewEvent, type WebhookHealthRow } from '../event-store.js';
import { EventClaimDue, EventFinish, EventInsert, EventPrune, EventReleaseClaims, WebhookHealthDelete, WebhookHealthGet, WebhookHealthUpsert } from './queries/events.js';
import type { Sql } from './sql.js';

export function eventInsert(sql: Sql, event: NewEvent): boolean {
  return sql(EventInsert).run(event).changes > 0;
}

export function eventClaimDue(sql: Sql, p: { now: number; limit: number; workerId: string; leaseExtraMs: number }): ClaimedEvent[] {
  const claimed = sql(EventClaimDue).all(p) as ClaimedEvent[];
  // RETURNING gives no order.
  return claimed.sort((a, b) => a.occurredAt - b.occurredAt || a.seq - b.seq);
}

export function eventReleaseClaims(sql: Sql, p: { now: number }): number {
  return sql(EventReleaseClaims).run(p).changes;
}

export function eventFinish(sql: Sql, p: { eventId: string; workerId: string; leaseUntil: number; now: number; outcome: EventAttemptOutcome }): boolean {
  const { outcome } = p;
  return (
    sql(EventFinish).run({
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
}

export function webhookHealthRecord(sql: Sql, p: { projectId: string; outcomes: HealthOutcome[] }): void {
  let row = (sql(WebhookHealthGet).get(p.projectId) as WebhookHealthRow | undefined) ?? null;
  const before = row;
  for (const outcome of p.outcomes) {
    const after = healthAfter(row, outcome);
    row = after.row;
    if (after.event) {
      eventInsert(sql, { id: outcome.eventId, projectId: p.projectId, type: after.event.type, occurredAt: outcome.at, data: JSON.stringify(after.event.data) });
    }
  }
  if (row) sql(WebhookHealthUpsert).run({ projectId: p.projectId, ...row });
  else if (before) sql(WebhookHealthDelete).run(p.projectId);
}

export function eventPrune(sql: Sql, p: { occurredBy: number; limit: number }): number {
  return sql(EventPrune).run(p).changes;
}
