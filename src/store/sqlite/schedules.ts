/**
 * Recurring schedules in the embedded store (../schedule-store.ts, SPEC section 9): reads on the
 * reader connection, writes on the writer thread (schedule-writes.ts).
 */
import type { ClaimedSchedule, NewSchedule, ScheduleAdvanceParams, ScheduleRow, ScheduleSettings, ScheduleStore } from '../schedule-store.js';
import { JobStartedAheadOfSchedule, ScheduleGet, ScheduleList, ScheduleNextWakeAt } from './queries/schedules.js';
import * as scheduleWrites from './schedule-writes.js';
import type { Sql } from './sql.js';
import { toSchedule } from './sqlite-rows.js';
import type { SqliteWriter } from './writer.js';

export class SqliteSchedules implements ScheduleStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
  ) {}

  scheduleInsert(params: { schedule: NewSchedule; maxPerProject: number }): Promise<boolean> {
    return this.writer.run(scheduleWrites.scheduleInsert, params);
  }

  async scheduleGet(params: { projectId: string; scheduleId: string }): Promise<ScheduleRow | null> {
    const row = this.sql(ScheduleGet).get(params.scheduleId, params.projectId);
    return row ? toSchedule(row) : null;
  }

  async scheduleList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<ScheduleRow[]> {
    return this.sql(ScheduleList).all({ ...params, beforeSeq: params.beforeSeq ?? Number.MAX_SAFE_INTEGER }).map(toSchedule);
  }

  scheduleUpdate(params: { projectId: string; scheduleId: string; settings: ScheduleSettings; nextRunAt: number | null; now: number }): Promise<ScheduleRow | null> {
    return this.writer.run(scheduleWrites.scheduleUpdate, params);
  }

  async scheduleStartedAheadUntil(params: { scheduleId: string; firedAfter: number; now: number }): Promise<number | null> {
    return (this.sql(JobStartedAheadOfSchedule).get(params) as { runAt: number | null }).runAt;
  }

  scheduleDelete(params: { projectId: string; scheduleId: string; now: number }): Promise<ScheduleRow | null> {
    return this.writer.run(scheduleWrites.scheduleDelete, params);
  }

  scheduleClaimDue(params: { now: number; dueBy: number; leaseUntil: number; limit: number }): Promise<ClaimedSchedule[]> {
    return this.writer.run(scheduleWrites.scheduleClaimDue, params);
  }

  async scheduleNextWakeAt(params: { leadMs: number; horizon: number }): Promise<number | null> {
    return (this.sql(ScheduleNextWakeAt).get(params) as { wakeAt: number | null }).wakeAt;
  }

  scheduleAdvance(params: ScheduleAdvanceParams): Promise<boolean> {
    return this.writer.run(scheduleWrites.scheduleAdvance, params);
  }
}
