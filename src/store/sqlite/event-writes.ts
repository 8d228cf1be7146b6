/**
 * The embedded store's writes of events (SPEC section 10) and webhook health, each a function of
 * its parameters run on the writer thread inside the group's transaction, in its own savepoint
 * (write-registry.ts says how a call reaches it). The store passes the function itself:
 * `writer.run(eventWrites.eventInsert, params)`.
 */
import { PROBE_MAX_MS, healthRecord, recoveredAfterHold, type ClaimedEvent, type EventAttemptOutcome, type HealthOutcome, type NewEvent, type WebhookHealthRow } from '../event-store.js';
import {
  EventClaimDue,
  EventFinish,
  EventInsert,
  EventPrune,
  EventReleaseClaims,
  ProjectHoldSet,
  ProjectHoldStateGet,
  WebhookHealthDelete,
  WebhookHealthGet,
  WebhookHealthUpsert,
  WebhookHoldEnd,
  WebhookProbeClaimDue,
} from './queries/events.js';
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

export function webhookHealthRecord(sql: Sql, p: { projectId: string; outcomes: HealthOutcome[] }): { held: boolean } {
  const project = sql(ProjectHoldStateGet).get(p.projectId) as { holdOnFailure: number; heldSince: number | null } | undefined;
  if (!project) return { held: false };
  const before = (sql(WebhookHealthGet).get(p.projectId) as WebhookHealthRow | undefined) ?? null;
  const { row, events, hold } = healthRecord(before, { holdOnFailure: project.holdOnFailure === 1, held: project.heldSince !== null }, p.outcomes);
  for (const event of events) eventInsert(sql, { ...event, projectId: p.projectId, data: JSON.stringify(event.data) });
  if (row) sql(WebhookHealthUpsert).run({ projectId: p.projectId, ...row });
  else if (before) sql(WebhookHealthDelete).run(p.projectId);
  if (hold) sql(ProjectHoldSet).run({ projectId: p.projectId, ...hold });
  return { held: hold !== null };
}

export function webhookProbeClaimDue(sql: Sql, p: { now: number }): string[] {
  return (sql(WebhookProbeClaimDue).all({ now: p.now, maxMs: PROBE_MAX_MS }) as { id: string }[]).map((row) => row.id);
}

export function webhookHoldEnd(sql: Sql, p: { projectId: string; now: number; eventId: string }): { heldSince: number } | null {
  const project = sql(ProjectHoldStateGet).get(p.projectId) as { heldSince: number | null } | undefined;
  if (!project || project.heldSince === null) return null;
  const run = (sql(WebhookHealthGet).get(p.projectId) as WebhookHealthRow | undefined) ?? null;
  sql(WebhookHoldEnd).run(p.projectId);
  if (run) sql(WebhookHealthDelete).run(p.projectId);
  const data = recoveredAfterHold(run, project.heldSince, p.now);
  eventInsert(sql, { id: p.eventId, projectId: p.projectId, type: 'webhook.recovered', occurredAt: p.now, data: JSON.stringify(data) });
  return { heldSince: project.heldSince };
}

export function eventPrune(sql: Sql, p: { occurredBy: number; limit: number }): number {
  return sql(EventPrune).run(p).changes;
}
