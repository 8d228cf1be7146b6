/**
 * The embedded store's writes of recurring schedules (SPEC section 9), each a function of its
 * parameters run on the writer thread inside the group's transaction, in its own savepoint
 * (write-registry.ts says how a call reaches it). The store passes the function itself:
 * `writer.run(scheduleWrites.scheduleInsert, params)`.
 */
import type { ClaimedSchedule, NewSchedule, ScheduleAdvanceParams, ScheduleRow, ScheduleSettings } from '../schedule-store.js';
import { eventInsert } from './event-writes.js';
import { JobCancelOfPausedSchedule, JobCancelQueuedOfSchedule, ScheduleAdvance, ScheduleClaimDue, ScheduleDelete, ScheduleHeldBeforeClaim, ScheduleInsertBelowLimit, ScheduleUpdate } from './queries/schedules.js';
import type { Sql } from './sql.js';
import { toSchedule } from './sqlite-rows.js';

const settingsParams = (settings: ScheduleSettings) => ({ ...settings, paused: settings.paused ? 1 : 0 });

export function scheduleInsert(sql: Sql, p: { schedule: NewSchedule; maxPerProject: number }): boolean {
  return sql(ScheduleInsertBelowLimit).run({ ...p.schedule, ...settingsParams(p.schedule), maxPerProject: p.maxPerProject }).changes > 0;
}

export function scheduleUpdate(sql: Sql, p: { projectId: string; scheduleId: string; settings: ScheduleSettings; nextRunAt: number | null; now: number }): ScheduleRow | null {
  const row = sql(ScheduleUpdate).get({ ...settingsParams(p.settings), projectId: p.projectId, scheduleId: p.scheduleId, nextRunAt: p.nextRunAt, now: p.now }) as
    | { pausedAt: number | null }
    | undefined;
  if (!row) return null;
  const { pausedAt, ...schedule } = row;
  // Paused: what it created ahead of time for instants after the pause goes with it, in this transaction.
  if (pausedAt !== null) sql(JobCancelOfPausedSchedule).run({ scheduleId: p.scheduleId, pausedAt, now: p.now });
  return toSchedule(schedule);
}

export function scheduleDelete(sql: Sql, p: { projectId: string; scheduleId: string; now: number }): ScheduleRow | null {
  const row = sql(ScheduleDelete).get({ projectId: p.projectId, scheduleId: p.scheduleId });
  if (!row) return null;
  sql(JobCancelQueuedOfSchedule).run({ scheduleId: p.scheduleId, now: p.now });
  return toSchedule(row);
}

export function scheduleClaimDue(sql: Sql, p: { now: number; dueBy: number; leaseUntil: number; limit: number }): ClaimedSchedule[] {
  const held = new Map((sql(ScheduleHeldBeforeClaim).all(p) as { seq: number; heldUntil: number }[]).map((row) => [row.seq, row.heldUntil]));
  const rows = sql(ScheduleClaimDue).all(p).map((row): ClaimedSchedule => {
    const schedule = toSchedule(row);
    return { ...schedule, heldUntil: held.get(schedule.seq) ?? null };
  });
  // RETURNING gives no order.
  return rows.sort((a, b) => a.nextRunAt! - b.nextRunAt! || a.seq - b.seq);
}

export function scheduleAdvance(sql: Sql, p: ScheduleAdvanceParams): boolean {
  const advanced =
    sql(ScheduleAdvance).run({
      scheduleId: p.scheduleId,
      expectedNextRunAt: p.expectedNextRunAt,
      nextRunAt: p.nextRunAt,
      lastRunAt: p.lastRun?.at ?? null,
      lastJobId: p.lastRun?.jobId ?? null,
      skipped: p.skipped,
      now: p.now,
    }).changes > 0;
  if (advanced) for (const event of p.events ?? []) eventInsert(sql, event);
  return advanced;
}
