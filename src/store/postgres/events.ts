/** Events (SPEC section 10) in PostgreSQL (bigint columns arrive as numbers: connection-pool.ts). */
import type { EventStore } from '../event-store.js';
import {
  FAILING_AFTER,
  PROBE_MAX_MS,
  healthRecord,
  recoveredAfterHold,
  type ClaimedEvent,
  type EventAttemptOutcome,
  type EventRow,
  type HealthOutcome,
  type NewEvent,
  type ProjectHold,
  type WebhookHealthRow,
  type WebhookHealthState,
} from '../event-store.js';
import type { ConnectionPool, Queryable } from './connection-pool.js';
import {
  EventClaimDue,
  EventFinish,
  EventInsert,
  EventList,
  EventPrune,
  EventReleaseClaims,
  ProjectHoldGet,
  ProjectHoldSet,
  WebhookHealthCounts,
  WebhookHealthDelete,
  WebhookHealthGet,
  WebhookHealthGetForUpdate,
  WebhookHealthListFailing,
  WebhookHealthLockProject,
  WebhookHealthUpsert,
  WebhookHoldEnd,
  WebhookProbeClaimDue,
  WebhookProbeNextAt,
} from './queries/events.js';

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
  async webhookHealthRecord(p: { projectId: string; outcomes: HealthOutcome[] }): Promise<{ held: boolean }> {
    return this.db.transaction(async (client) => {
      const project = (await this.db.rows<{ holdOnFailure: boolean; heldSince: number | null }>(WebhookHealthLockProject, [p.projectId], client))[0];
      if (!project) return { held: false };
      const before = (await this.db.rows<WebhookHealthRow>(WebhookHealthGetForUpdate, [p.projectId], client))[0] ?? null;
      const { row, events, hold } = healthRecord(before, { holdOnFailure: project.holdOnFailure, held: project.heldSince !== null }, p.outcomes);
      for (const event of events) await this.eventInsert({ ...event, projectId: p.projectId, data: JSON.stringify(event.data) }, client);
      if (row) await this.db.query(WebhookHealthUpsert, [p.projectId, row.consecutiveFailures, row.failingSince, row.failingEventAt, row.lastError], client);
      else if (before) await this.db.query(WebhookHealthDelete, [p.projectId], client);
      if (hold) await this.db.query(ProjectHoldSet, [p.projectId, hold.heldSince, hold.nextProbeAt, hold.probeIntervalMs], client);
      return { held: hold !== null };
    });
  }

  async webhookHealthListFailing(): Promise<string[]> {
    return (await this.db.rows<{ projectId: string }>(WebhookHealthListFailing)).map((row) => row.projectId);
  }

  async webhookHealthGet(params: { projectId: string }): Promise<WebhookHealthState> {
    return {
      run: (await this.db.rows<WebhookHealthRow>(WebhookHealthGet, [params.projectId]))[0] ?? null,
      hold: (await this.db.rows<ProjectHold>(ProjectHoldGet, [params.projectId]))[0] ?? null,
    };
  }

  async webhookHealthCounts(): Promise<{ failing: number; held: number }> {
    return (await this.db.rows<{ failing: number; held: number }>(WebhookHealthCounts, [FAILING_AFTER]))[0]!;
  }

  async webhookProbeClaimDue(params: { now: number }): Promise<string[]> {
    return (await this.db.rows<{ id: string }>(WebhookProbeClaimDue, [params.now, PROBE_MAX_MS])).map((row) => row.id);
  }

  async webhookProbeNextAt(): Promise<number | null> {
    const at = (await this.db.rows<{ at: number | string | null }>(WebhookProbeNextAt))[0]?.at ?? null;
    return at === null ? null : Number(at);
  }

  async webhookHoldEnd(p: { projectId: string; now: number; eventId: string }): Promise<{ heldSince: number } | null> {
    return this.db.transaction(async (client) => {
      const project = (await this.db.rows<{ heldSince: number | null }>(WebhookHealthLockProject, [p.projectId], client))[0];
      if (!project || project.heldSince === null) return null;
      const run = (await this.db.rows<WebhookHealthRow>(WebhookHealthGetForUpdate, [p.projectId], client))[0] ?? null;
      await this.db.query(WebhookHoldEnd, [p.projectId], client);
      if (run) await this.db.query(WebhookHealthDelete, [p.projectId], client);
      const data = recoveredAfterHold(run, project.heldSince, p.now);
      await this.eventInsert({ id: p.eventId, projectId: p.projectId, type: 'webhook.recovered', occurredAt: p.now, data: JSON.stringify(data) }, client);
      return { heldSince: project.heldSince };
    });
  }

  async eventPrune(params: { occurredBy: number; limit: number }): Promise<number> {
    return (await this.db.query(EventPrune, [params.occurredBy, params.limit])).rowCount ?? 0;
  }
}
