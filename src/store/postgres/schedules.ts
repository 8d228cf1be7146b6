/** Recurring schedules (SPEC section 9) in PostgreSQL (bigint columns arrive as numbers: connection-pool.ts). */
import type { ClaimedSchedule, NewSchedule, ScheduleAdvanceParams, ScheduleRow, ScheduleSettings, ScheduleStore } from '../schedule-store.js';
import type { ConnectionPool, Queryable } from './connection-pool.js';
import type { PostgresEvents } from './events.js';
import { JobCancelOfPausedSchedule, JobStartedAheadOfSchedule, ScheduleAdvance, ScheduleClaimDue, ScheduleDelete, ScheduleGet, ScheduleInsertBelowLimit, ScheduleList, ScheduleNextWakeAt, ScheduleUpdate } from './queries/schedules.js';
import { ProjectLock } from './queries/tenancy.js';

const settingsArgs = (s: ScheduleSettings) => [s.name, s.cron, s.timezone, s.payload, s.maxRetries, s.catchUp, s.overlap, s.paused];

export class PostgresSchedules implements ScheduleStore {
  constructor(
    private readonly db: ConnectionPool,
    private readonly events: PostgresEvents,
  ) {}

  async scheduleInsert(params: { schedule: NewSchedule; maxPerProject: number }): Promise<boolean> {
    const s = params.schedule;
    return this.db.transaction(async (client) => {
      // Two inserts for one project at once must not both pass the count.
      await this.db.query(ProjectLock, [s.projectId], client);
      const args = [s.id, s.projectId, ...settingsArgs(s), s.nextRunAt, s.lastRunAt, s.lastJobId, s.skippedCount, s.createdAt, s.updatedAt];
      return ((await this.db.query(ScheduleInsertBelowLimit, [...args, params.maxPerProject, s.tags, s.concurrencyKey], client)).rowCount ?? 0) > 0;
    });
  }

  async scheduleGet(params: { projectId: string; scheduleId: string }): Promise<ScheduleRow | null> {
    const row = (await this.db.rows<ScheduleRow>(ScheduleGet, [params.scheduleId, params.projectId]))[0];
    return row ?? null;
  }

  async scheduleList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<ScheduleRow[]> {
    return this.db.rows<ScheduleRow>(ScheduleList, [params.projectId, params.beforeSeq ?? Number.MAX_SAFE_INTEGER, params.limit]);
  }

  async scheduleUpdate(params: { projectId: string; scheduleId: string; settings: ScheduleSettings; nextRunAt: number | null; now: number }): Promise<ScheduleRow | null> {
    const args = [params.scheduleId, params.projectId, ...settingsArgs(params.settings), params.nextRunAt, params.now, params.settings.tags, params.settings.concurrencyKey];
    const update = async (client?: Queryable) => {
      const row = (await this.db.rows<ScheduleRow & { pausedAt: number | null }>(ScheduleUpdate, args, client))[0];
      if (!row) return null;
      const { pausedAt, ...schedule } = row;
      // Paused: what it created ahead of time for instants after the pause goes with it. A statement
      // of its own, after the schedule's row lock: it sees the jobs of a fire that committed before
      // the pause (queries/jobs.ts, JobInsertGroupWithFires).
      if (pausedAt !== null) await this.db.query(JobCancelOfPausedSchedule, [params.scheduleId, pausedAt, params.now], client);
      return schedule;
    };
    return params.settings.paused ? this.db.transaction(update) : update();
  }

  async scheduleStartedAheadUntil(params: { scheduleId: string; firedAfter: number; now: number }): Promise<number | null> {
    const row = (await this.db.rows<{ runAt: number | null }>(JobStartedAheadOfSchedule, [params.scheduleId, params.firedAfter, params.now]))[0];
    return row?.runAt == null ? null : Number(row.runAt);
  }

  async scheduleDelete(params: { projectId: string; scheduleId: string; now: number }): Promise<ScheduleRow | null> {
    const row = (await this.db.rows<ScheduleRow>(ScheduleDelete, [params.scheduleId, params.projectId, params.now]))[0];
    return row ?? null;
  }

  async scheduleClaimDue(params: { now: number; dueBy: number; leaseUntil: number; limit: number }): Promise<ClaimedSchedule[]> {
    const rows = await this.db.rows<ClaimedSchedule>(ScheduleClaimDue, [params.now, params.dueBy, params.leaseUntil, params.limit]);
    // RETURNING gives no order.
    return rows.sort((a, b) => a.nextRunAt! - b.nextRunAt! || a.seq - b.seq);
  }

  async scheduleNextWakeAt(params: { leadMs: number; horizon: number }): Promise<number | null> {
    const row = (await this.db.rows<{ wakeAt: string | number | null }>(ScheduleNextWakeAt, [params.leadMs, params.horizon]))[0];
    return row?.wakeAt == null ? null : Number(row.wakeAt);
  }

  async scheduleAdvance(p: ScheduleAdvanceParams): Promise<boolean> {
    const args = [p.scheduleId, p.expectedNextRunAt, p.nextRunAt, p.lastRun?.at ?? null, p.lastRun?.jobId ?? null, p.skipped, p.now];
    if (!p.events?.length) return ((await this.db.query(ScheduleAdvance, args)).rowCount ?? 0) > 0;
    // The skipped fires' events commit with the advance, or not at all.
    return this.db.transaction(async (client) => {
      const advanced = ((await this.db.query(ScheduleAdvance, args, client)).rowCount ?? 0) > 0;
      if (advanced) for (const event of p.events!) await this.events.eventInsert(event, client);
      return advanced;
    });
  }
}
