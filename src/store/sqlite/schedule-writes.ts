/** The embedded store's writes of recurring schedules, run on the writer thread like those of writes.ts. */
import type { ClaimedSchedule, NewSchedule, ScheduleAdvanceParams, ScheduleRow, ScheduleSettings } from '../schedule-store.js';
import * as q from './queries.js';
import type { Sql } from './writes.js';
import { insertEvent } from './event-writes.js';

/** SQLite has no boolean: paused comes back as 0/1. */
export function toSchedule(row: unknown): ScheduleRow {
  const schedule = row as Omit<ScheduleRow, 'paused'> & { paused: number };
  return { ...schedule, paused: schedule.paused === 1 };
}

const settingsParams = (settings: ScheduleSettings) => ({ ...settings, paused: settings.paused ? 1 : 0 });

export const SCHEDULE_WRITES = {
  scheduleInsert(sql: Sql, p: { schedule: NewSchedule; maxPerProject: number }): boolean {
    return sql(q.ScheduleInsertBelowLimit).run({ ...p.schedule, ...settingsParams(p.schedule), maxPerProject: p.maxPerProject }).changes > 0;
  },

  scheduleUpdate(sql: Sql, p: { projectId: string; scheduleId: string; settings: ScheduleSettings; nextRunAt: number | null; now: number }): ScheduleRow | null {
    const row = sql(q.ScheduleUpdate).get({ ...settingsParams(p.settings), projectId: p.projectId, scheduleId: p.scheduleId, nextRunAt: p.nextRunAt, now: p.now }) as
      | { pausedAt: number | null }
      | undefined;
    if (!row) return null;
    const { pausedAt, ...schedule } = row;
    // Paused: what it created ahead of time for instants after the pause goes with it, in this transaction.
    if (pausedAt !== null) sql(q.JobCancelOfPausedSchedule).run({ scheduleId: p.scheduleId, pausedAt, now: p.now });
    return toSchedule(schedule);
  },

  scheduleDelete(sql: Sql, p: { projectId: string; scheduleId: string; now: number }): ScheduleRow | null {
    const row = sql(q.ScheduleDelete).get({ projectId: p.projectId, scheduleId: p.scheduleId });
    if (!row) return null;
    sql(q.JobCancelQueuedOfSchedule).run({ scheduleId: p.scheduleId, now: p.now });
    return toSchedule(row);
  },

  scheduleClaimDue(sql: Sql, p: { now: number; dueBy: number; leaseUntil: number; limit: number }): ClaimedSchedule[] {
    const held = new Map((sql(q.ScheduleHeldBeforeClaim).all(p) as { seq: number; heldUntil: number }[]).map((row) => [row.seq, row.heldUntil]));
    const rows = sql(q.ScheduleClaimDue).all(p).map((row): ClaimedSchedule => {
      const schedule = toSchedule(row);
      return { ...schedule, heldUntil: held.get(schedule.seq) ?? null };
    });
    // RETURNING gives no order.
    return rows.sort((a, b) => a.nextRunAt! - b.nextRunAt! || a.seq - b.seq);
  },

  scheduleAdvance(sql: Sql, p: ScheduleAdvanceParams): boolean {
    const advanced =
      sql(q.ScheduleAdvance).run({
        scheduleId: p.scheduleId,
        expectedNextRunAt: p.expectedNextRunAt,
        nextRunAt: p.nextRunAt,
        lastRunAt: p.lastRun?.at ?? null,
        lastJobId: p.lastRun?.jobId ?? null,
        skipped: p.skipped,
        now: p.now,
      }).changes > 0;
    if (advanced) for (const event of p.events ?? []) insertEvent(sql, event);
    return advanced;
  },
} as const;
