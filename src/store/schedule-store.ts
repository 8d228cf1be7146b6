/**
 * The storage contract of recurring schedules (SPEC section 9), part of Store (store.ts).
 * A schedule's jobs are created through jobCreate, each fire's job carrying its schedule and fire
 * instant: a unique key on the pair makes a fire create one job however many instances try, and
 * the firing lease (scheduleClaimDue) keeps them from trying at once.
 */
import type { NewEvent } from './event-store.js';
import { methodList } from './forward-methods.js';

export const CATCH_UP_MODES = ['latest', 'none', 'all'] as const;
export type CatchUp = (typeof CATCH_UP_MODES)[number];
export const OVERLAP_MODES = ['allow', 'skip'] as const;
export type Overlap = (typeof OVERLAP_MODES)[number];

/** What a client sets on a schedule. */
export interface ScheduleSettings {
  name: string | null;
  cron: string;
  timezone: string;
  /** The payload exactly as JSON.stringify produced it. */
  payload: string;
  /** null: as a dispatch without maxRetries. */
  maxRetries: number | null;
  catchUp: CatchUp;
  overlap: Overlap;
  paused: boolean;
  /** The tags its jobs carry (SPEC section 14), as JSON.stringify wrote them; null for none. */
  tags: string | null;
  /** The concurrencyKey its jobs carry (SPEC section 15); null for none. */
  concurrencyKey: string | null;
}

export interface ScheduleRow extends ScheduleSettings {
  /** Insertion order; the list cursor. */
  seq: number;
  id: string;
  projectId: string;
  /** The next fire instant; null once the expression fires no more. */
  nextRunAt: number | null;
  lastRunAt: number | null;
  lastJobId: string | null;
  skippedCount: number;
  createdAt: number;
  updatedAt: number;
}

export type NewSchedule = Omit<ScheduleRow, 'seq'>;

/** A schedule scheduleClaimDue claimed. */
export interface ClaimedSchedule extends ScheduleRow {
  /**
   * The end of the lease that held it before this claim, when that lease ran out unreleased (the
   * instance that claimed it stopped, or failed, before scheduleAdvance); null otherwise.
   */
  heldUntil: number | null;
}

export interface ScheduleAdvanceParams {
  scheduleId: string;
  /** The fire the caller claimed: nothing changes if the schedule has moved on since (updated, or fired elsewhere). */
  expectedNextRunAt: number;
  nextRunAt: number | null;
  /** Set when the fire created a job. */
  lastRun: { at: number; jobId: string } | null;
  skipped: number;
  now: number;
  /** schedule.skipped events of the skipped fires (SPEC section 10), recorded with the advance, for a project with an eventsUrl. */
  events?: NewEvent[];
}

export interface ScheduleStore {
  /** Inserts it unless its project already has `maxPerProject` schedules (false then). */
  scheduleInsert(params: { schedule: NewSchedule; maxPerProject: number }): Promise<boolean>;
  scheduleGet(params: { projectId: string; scheduleId: string }): Promise<ScheduleRow | null>;
  /** Newest first, before `beforeSeq` (a cursor) when given. */
  scheduleList(params: { projectId: string; beforeSeq: number | null; limit: number }): Promise<ScheduleRow[]>;
  /**
   * Replaces its settings and next fire; the row after, or null when there is no such schedule.
   * Paused by it (SPEC section 9), it is paused at `now` (a schedule paused already keeps the
   * instant of its pause), and in the same transaction its jobs for instants after the pause that
   * no request has left for are cancelled: QUEUED, and DISPATCHED (the claim is withdrawn: the
   * worker's attemptStart finds the job no longer its own). Each gives its instant up, so that a
   * resume before that instant fires it again. From then on, until a resume, a fire of the schedule
   * for an instant after its pause creates no job (jobCreate), and scheduleAdvance does not move it.
   */
  scheduleUpdate(params: { projectId: string; scheduleId: string; settings: ScheduleSettings; nextRunAt: number | null; now: number }): Promise<ScheduleRow | null>;
  /**
   * The latest due time after `now` of the schedule's jobs for instants after `firedAfter` that are
   * STARTED: started a few milliseconds ahead of their time so that the request leaves on time
   * (src/delivery/ahead-timer.ts, START_AHEAD_MS), the request not sent yet. Null when none. A
   * pause answers no earlier than that (nothing of the schedule is delivered for an instant after
   * the pause answer), as these cannot be called back.
   */
  scheduleStartedAheadUntil(params: { scheduleId: string; firedAfter: number; now: number }): Promise<number | null>;
  /** Deletes it and cancels its jobs still QUEUED; the row as it was, or null. */
  scheduleDelete(params: { projectId: string; scheduleId: string; now: number }): Promise<ScheduleRow | null>;
  /**
   * Unpaused schedules due to fire by `dueBy` (overlap "skip": by `now`) and not held by another
   * instance, earliest first, at most `limit`: each is held until `leaseUntil` (scheduleAdvance
   * lets go).
   */
  scheduleClaimDue(params: { now: number; dueBy: number; leaseUntil: number; limit: number }): Promise<ClaimedSchedule[]>;
  /**
   * When the firing loop has work next, among fires by `horizon`: a fire's instant less `leadMs`
   * (created ahead), or for overlap "skip" the instant itself; null when none.
   */
  scheduleNextWakeAt(params: { leadMs: number; horizon: number }): Promise<number | null>;
  /** Moves a claimed schedule on to its next fire and lets go of it; false if it had moved on already, or was paused since. */
  scheduleAdvance(params: ScheduleAdvanceParams): Promise<boolean>;
}

/** ScheduleStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const SCHEDULE_STORE_METHODS = methodList<ScheduleStore>()(['scheduleInsert', 'scheduleGet', 'scheduleList', 'scheduleUpdate', 'scheduleStartedAheadUntil', 'scheduleDelete', 'scheduleClaimDue', 'scheduleNextWakeAt', 'scheduleAdvance'] as const);
