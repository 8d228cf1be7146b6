/**
 * Recurring schedules (SPEC section 9): the API's operations, and firing a schedule the firing
 * loop (maintenance/schedule-firing.ts) claimed.
 */
import type { Clock } from '../clock.js';
import { parseCron } from '../cron/cron-expression.js';
import { cronInWords } from '../cron/cron-words.js';
import { nextFireAfter, nextFires } from '../cron/fire-times.js';
import { TimeZone } from '../cron/time-zone.js';
import { newEventId, newScheduleId } from '../crypto/random-ids.js';
import { InvalidRequestError, NotFoundError, ScheduleNotFoundError, WebhookNotConfiguredError } from '../errors.js';
import type { Plan } from '../plans.js';
import type { ScheduleRow } from '../store/schedule-store.js';
import type { NewEvent } from '../store/event-store.js';
import { FINAL_JOB_STATUSES, type Store, type TeamRow } from '../store/store.js';
import { formatNullableTimestamp, formatTimestamp, parseTimestamp } from '../timestamp.js';
import type { JobCreation } from './job-creation.js';
import type { JobRequestContext } from './jobs-service.js';
import { readCronInZone, readNewSchedule, readSchedulePatch, type CronInZone } from './input/schedule-input.js';
import { pageOf, readListLimit, readSeqCursor, singleValues } from './input/list-query.js';
import { tagsView } from './views/job-views.js';

export const MAX_SCHEDULES_PER_PROJECT = 1_000;
const PREVIEW_DEFAULT_COUNT = 5;
const PREVIEW_MAX_COUNT = 100;
/** catchUp "all" creates at most this many jobs for missed fires. */
export const CATCH_UP_MAX = 100;
/**
 * A fire reached later than this after its instant, or than half the time to the schedule's next
 * instant when that is less, counts as missed (SPEC section 9: catchUp applies); one reached later
 * than its instant but within this (a slow turn, a restart that took a second) is created as usual,
 * due at once. So an every-second schedule misses an instant reached more than 500 ms late, a daily
 * one an instant reached more than 5 s late.
 */
export const MISSED_AFTER_MS = 5_000;
/**
 * A pause answers once the requests of the schedule's jobs started ahead of their instant (a few
 * milliseconds: START_AHEAD_MS of src/delivery/ahead-timer.ts) have left, waiting no longer than
 * this whatever another instance's clock says.
 */
const PAUSE_WAIT_MAX_MS = 1_000;
/** Fires created in one go for one schedule, at most (an every-second schedule within the lead). */
const FIRES_PER_CLAIM = 100;

/** Windows looked back through for the latest missed fire, shortest first. */
const LOOK_BACK_MS = [3_600_000, 86_400_000, 31 * 86_400_000, 366 * 86_400_000, Number.POSITIVE_INFINITY];

/**
 * The last two fires in [from, before), latest first (from is a fire): as many as there are, up to
 * two, walking only as far back from `before` as it takes.
 */
function lastFiresBefore(cron: CronInZone, from: number, before: number): number[] {
  for (const window of LOOK_BACK_MS) {
    const start = Math.max(from, before - window);
    const last: number[] = [];
    for (let fire: number | null = start === from ? from : nextFireAfter(cron.expr, cron.zone, start - 1); fire !== null && fire < before; fire = nextFireAfter(cron.expr, cron.zone, fire)) {
      last.unshift(fire);
      if (last.length > 2) last.pop();
    }
    if (last.length === 2 || start === from) return last;
  }
  return [];
}

/** Whether `fire` (one of the schedule's instants), reached at `now`, is missed (SPEC section 9). */
function isMissed(cron: CronInZone, fire: number, now: number): boolean {
  const following = nextFireAfter(cron.expr, cron.zone, fire);
  const allowed = following === null ? MISSED_AFTER_MS : Math.min(MISSED_AFTER_MS, (following - fire) / 2);
  return now - fire > allowed;
}

export function scheduleView(schedule: ScheduleRow): Record<string, unknown> {
  return {
    scheduleId: schedule.id,
    name: schedule.name,
    cron: schedule.cron,
    timezone: schedule.timezone,
    payload: JSON.parse(schedule.payload) as unknown,
    maxRetries: schedule.maxRetries,
    catchUp: schedule.catchUp,
    overlap: schedule.overlap,
    paused: schedule.paused,
    nextRunAt: formatNullableTimestamp(schedule.nextRunAt),
    lastRunAt: formatNullableTimestamp(schedule.lastRunAt),
    lastJobId: schedule.lastJobId,
    skippedCount: schedule.skippedCount,
    tags: tagsView(schedule.tags),
    concurrencyKey: schedule.concurrencyKey,
    createdAt: formatTimestamp(schedule.createdAt),
    updatedAt: formatTimestamp(schedule.updatedAt),
  };
}

const notFound = (scheduleId: string) => new ScheduleNotFoundError(`No schedule ${scheduleId} in this project`, { scheduleId });

interface SchedulesServiceDeps {
  store: Store;
  clock: Clock;
  jobCreation: JobCreation;
  planOf: (team: TeamRow) => Plan;
  /** A schedule was created or changed here: the firing loop looks again. */
  onScheduleChanged: () => void;
}

export class SchedulesService {
  constructor(private readonly deps: SchedulesServiceDeps) {}

  private async mustGet(ctx: JobRequestContext, scheduleId: string): Promise<ScheduleRow> {
    const schedule = await this.deps.store.scheduleGet({ projectId: ctx.project.id, scheduleId });
    if (!schedule) throw notFound(scheduleId);
    return schedule;
  }

  async create(ctx: JobRequestContext, body: unknown): Promise<Record<string, unknown>> {
    const now = this.deps.clock.now();
    const { settings, firstFire } = readNewSchedule(body, now);
    if (!ctx.project.webhookUrl) throw new WebhookNotConfiguredError('This project has no webhook URL: set one before creating schedules');
    const schedule = {
      ...settings,
      id: newScheduleId(),
      projectId: ctx.project.id,
      nextRunAt: firstFire,
      lastRunAt: null,
      lastJobId: null,
      skippedCount: 0,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.deps.store.scheduleInsert({ schedule, maxPerProject: MAX_SCHEDULES_PER_PROJECT }))) {
      throw new InvalidRequestError(`A project has at most ${MAX_SCHEDULES_PER_PROJECT} schedules`, { limit: MAX_SCHEDULES_PER_PROJECT });
    }
    this.deps.onScheduleChanged();
    return scheduleView({ ...schedule, seq: 0 });
  }

  async list(ctx: JobRequestContext, query: Record<string, unknown>): Promise<{ schedules: Record<string, unknown>[]; nextCursor: string | null }> {
    const { limit: limitText, cursor } = singleValues(query, ['limit', 'cursor']);
    const limit = readListLimit(limitText);
    const beforeSeq = cursor === undefined ? null : readSeqCursor(cursor);
    const rows = await this.deps.store.scheduleList({ projectId: ctx.project.id, beforeSeq, limit: limit + 1 });
    const { page, nextCursor } = pageOf(rows, limit);
    return { schedules: page.map(scheduleView), nextCursor };
  }

  async get(ctx: JobRequestContext, scheduleId: string): Promise<Record<string, unknown>> {
    return scheduleView(await this.mustGet(ctx, scheduleId));
  }

  /**
   * Any of the settings; the next fire is recomputed from now, except on a resume, which keeps the
   * fire the schedule was waiting for when paused (its first instant after the pause), so that the
   * fires missed meanwhile are caught up as catchUp says. A pause stops the schedule at once (SPEC
   * section 9): the jobs it created ahead of time for instants after the pause are cancelled in the
   * pause's transaction (even one already claimed for delivery, its request not sent yet), and the
   * answer comes no earlier than the instant of one whose request was about to leave.
   */
  async update(ctx: JobRequestContext, scheduleId: string, body: unknown): Promise<Record<string, unknown>> {
    const current = await this.mustGet(ctx, scheduleId);
    const now = this.deps.clock.now();
    const { settings, firstFire } = readSchedulePatch(body, current, now);
    const resumedOnly = current.paused && !settings.paused && settings.cron === current.cron && settings.timezone === current.timezone;
    const nextRunAt = resumedOnly ? current.nextRunAt : firstFire;
    const updated = await this.deps.store.scheduleUpdate({ projectId: ctx.project.id, scheduleId, settings, nextRunAt, now });
    if (!updated) throw notFound(scheduleId);
    this.deps.onScheduleChanged();
    if (settings.paused && !current.paused) await this.untilStartedAheadLeft(scheduleId, now);
    return scheduleView(updated);
  }

  /**
   * Nothing of a paused schedule is delivered for an instant after the pause answer (SPEC section
   * 9): a job started a few milliseconds ahead of its instant, its request not yet sent, cannot be
   * called back, so the answer waits for that instant.
   */
  private async untilStartedAheadLeft(scheduleId: string, pausedAt: number): Promise<void> {
    const { store, clock } = this.deps;
    const until = await store.scheduleStartedAheadUntil({ scheduleId, firedAfter: pausedAt, now: clock.now() });
    if (until === null) return;
    const wait = Math.min(until - clock.now(), PAUSE_WAIT_MAX_MS);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  async delete(ctx: JobRequestContext, scheduleId: string): Promise<Record<string, unknown>> {
    const deleted = await this.deps.store.scheduleDelete({ projectId: ctx.project.id, scheduleId, now: this.deps.clock.now() });
    if (!deleted) throw notFound(scheduleId);
    return scheduleView(deleted);
  }

  /** One extra job now, outside the cron rhythm: answered as an enqueue is. */
  async trigger(ctx: JobRequestContext, scheduleId: string): Promise<Record<string, unknown>> {
    const schedule = await this.mustGet(ctx, scheduleId);
    if (!ctx.project.webhookUrl) throw new WebhookNotConfiguredError('This project has no webhook URL');
    const now = this.deps.clock.now();
    const { jobs, created, usedBefore } = await this.deps.jobCreation.createForSchedule(ctx, schedule, [{ fireAt: null, runAt: now }], now);
    if (!created[0]) throw this.deps.jobCreation.quotaError(ctx, usedBefore, now);
    const job = jobs[0]!;
    return { jobId: job.id, status: 'QUEUED', scheduledFor: null, maxRetries: job.maxRetries };
  }

  preview(query: Record<string, unknown>): { runs: string[] } {
    const { cron, timezone, from, count } = singleValues(query, ['cron', 'timezone', 'from', 'count']);
    let after = this.deps.clock.now();
    if (from !== undefined) {
      const parsed = parseTimestamp(from);
      if (parsed === null) throw new InvalidRequestError('from must be an RFC 3339 timestamp with a zone', { field: 'from' });
      after = parsed;
    }
    let n = PREVIEW_DEFAULT_COUNT;
    if (count !== undefined) {
      n = Number(count);
      if (!/^\d+$/.test(count) || n < 1 || n > PREVIEW_MAX_COUNT) {
        throw new InvalidRequestError(`count must be an integer from 1 to ${PREVIEW_MAX_COUNT}`, { field: 'count' });
      }
    }
    const { expr, zone } = readCronInZone(cron, timezone, after);
    return { runs: nextFires(expr, zone, after, n).map(formatTimestamp) };
  }

  /**
   * A schedule's next runs and its expression in words, for a person choosing it (the dashboard's
   * form): the zone's canonical name beside them. INVALID_CRON / INVALID_TIMEZONE as in a create.
   */
  describe(cron: unknown, timezone: unknown, count = PREVIEW_DEFAULT_COUNT): { runs: string[]; words: string; timezone: string } {
    const now = this.deps.clock.now();
    const { expr, zone } = readCronInZone(cron, timezone, now);
    return { runs: nextFires(expr, zone, now, count).map(formatTimestamp), words: cronInWords(expr, zone.name), timezone: zone.name };
  }

  /**
   * Fires a schedule this instance claimed (holding its lease): creates the jobs of its fires due
   * by `dueBy`, applies catchUp to the fires it missed and overlap to the rest, and moves it on.
   * Fires are created ahead of their instant, due at it, so that they are delivered as punctually
   * as any job; a schedule with overlap "skip" is fired at its instant, since whether its previous
   * job is final can only be known then. `reachedAt`: when the service reached these fires, which
   * decides the missed ones; earlier than now when an instance that had claimed them stopped before
   * firing them (ScheduleFiring.reachedAt).
   */
  async fireClaimed(schedule: ScheduleRow, now: number, dueBy: number, reachedAt: number = now): Promise<void> {
    const { store } = this.deps;
    const expectedNextRunAt = schedule.nextRunAt!;
    const cron: CronInZone = { expr: parseCron(schedule.cron), zone: TimeZone.named(schedule.timezone) };
    const fireBy = schedule.overlap === 'skip' ? now : dueBy;
    const missed: number[] = [];
    const onTime: number[] = [];
    let next: number | null = expectedNextRunAt;
    // Missed fires: the oldest CATCH_UP_MAX (catchUp "all") and the latest one ("latest"), found
    // without walking every fire of a long outage (a week of an every-second schedule is 604,800).
    // An instant reached along with a later one is late by more than its whole gap to the next:
    // missed. Only the last instant reached may be on time, if reached within its limit (isMissed).
    let latestMissed: number | null = null;
    // Judged as of when the service reached them (`reachedAt`), which a takeover puts earlier than now.
    if (next <= reachedAt) {
      const [lastReached, beforeIt = null] = lastFiresBefore(cron, expectedNextRunAt, reachedAt + 1);
      const lastMissed = isMissed(cron, lastReached!, reachedAt);
      latestMissed = lastMissed ? lastReached! : beforeIt;
      const missedUntil = latestMissed ?? expectedNextRunAt - 1;
      for (let fire: number | null = next; fire !== null && fire <= missedUntil && missed.length < CATCH_UP_MAX; fire = nextFireAfter(cron.expr, cron.zone, fire)) {
        missed.push(fire);
      }
      next = lastMissed ? nextFireAfter(cron.expr, cron.zone, lastReached!) : lastReached!;
    }
    while (next !== null && next <= fireBy && onTime.length < FIRES_PER_CLAIM) {
      onTime.push(next);
      next = nextFireAfter(cron.expr, cron.zone, next);
    }
    const caughtUp = schedule.catchUp === 'all' ? missed : schedule.catchUp === 'latest' && latestMissed !== null ? [latestMissed] : [];
    let fires = [...caughtUp.map((fireAt) => ({ fireAt, runAt: now })), ...onTime.map((fireAt) => ({ fireAt, runAt: fireAt }))];
    const skipped: number[] = [];
    if (schedule.overlap === 'skip' && fires.length > 0 && schedule.lastJobId !== null) {
      const previous = await store.jobGet({ projectId: schedule.projectId, jobId: schedule.lastJobId });
      if (previous && !FINAL_JOB_STATUSES.includes(previous.status)) {
        skipped.push(...fires.map((f) => f.fireAt));
        fires = [];
      }
    }
    // With overlap "skip", only one job at a time: the latest of these fires.
    if (schedule.overlap === 'skip' && fires.length > 1) {
      skipped.push(...fires.slice(0, -1).map((f) => f.fireAt));
      fires = fires.slice(-1);
    }
    let lastRun: { at: number; jobId: string } | null = null;
    if (fires.length > 0) {
      const ctx = await this.contextOf(schedule.projectId, now);
      if (ctx && ctx.project.webhookUrl) {
        const { jobs, created } = await this.deps.jobCreation.createForSchedule(ctx, schedule, fires, now);
        const last = created.lastIndexOf(true);
        if (last >= 0) lastRun = { at: fires[last]!.fireAt, jobId: jobs[last]!.id };
      }
    }
    // schedule.skipped (SPEC section 10), recorded with the advance for a project with an eventsUrl.
    const events: NewEvent[] = skipped.map((fireAt) => ({
      id: newEventId(now),
      projectId: schedule.projectId,
      type: 'schedule.skipped',
      occurredAt: now,
      data: JSON.stringify({ scheduleId: schedule.id, fireAt: formatTimestamp(fireAt) }),
    }));
    await store.scheduleAdvance({ scheduleId: schedule.id, expectedNextRunAt, nextRunAt: next, lastRun, skipped: skipped.length, now, events });
  }

  /** A project's context for the CLI, which works on the database without an API key. */
  async projectContext(projectId: string): Promise<JobRequestContext> {
    const ctx = await this.contextOf(projectId, this.deps.clock.now());
    if (!ctx) throw new NotFoundError(`No project ${projectId}`, { projectId });
    return ctx;
  }

  private async contextOf(projectId: string, now: number): Promise<JobRequestContext | null> {
    const [project] = await this.deps.store.projectGetMany([projectId]);
    const team = project ? await this.deps.store.teamGet(project.teamId) : null;
    if (!project || !team) return null;
    return { project, team, plan: this.deps.planOf(team), receivedAt: now };
  }
}
