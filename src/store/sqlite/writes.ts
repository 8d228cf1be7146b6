/**
 * Every write of the embedded store, as a function of its parameters: data in, data out, so that
 * it runs on the writer thread (writer-worker.ts), where each is called inside the group's
 * transaction, in its own savepoint. Nothing here keeps state between calls but prepared statements;
 * the writes of attempts add the overview's figures to the group's tally (overview-tally.ts), the
 * third argument every write is given.
 */
import type Database from 'better-sqlite3';
import {
  AWAITING_REPORT,
  dueOrder,
  type AttemptAcceptParams,
  type AttemptReport,
  type ApiKeyRow,
  type AttemptFinishParams,
  type AttemptStartParams,
  type ClaimedJob,
  type FailedJobsFilter,
  type JobClaimParams,
  type JobCreateResult,
  type JobRow,
  type JobStatus,
  type JobTransitionResult,
  type ProjectPatch,
  type ProjectRow,
  type PrunedJobs,
  type SessionRow,
  type TeamRow,
  type UserWithPassword,
  type WebhookSecretRow,
} from '../store.js';
import type { JobCreateParams, StartedAtCreation } from '../store.js';
import { newAttemptId } from '../../crypto/random-ids.js';
import { utcDay } from '../../timestamp.js';
import { assembleAnswer, idempotentAnswer, jobAfterAttempt } from '../job-rules.js';
import * as q from './queries.js';
import { SCHEDULE_WRITES } from './schedule-writes.js';
import { EVENT_WRITES } from './event-writes.js';
import { jobFailedEventId } from '../event-store.js';
import { latenessBucket, minuteOf } from '../overview-store.js';
import type { OverviewTally } from './overview-tally.js';

type Statement = Database.Statement<unknown[], unknown>;
/** Prepares a statement once per connection and reuses it. */
export type Sql = (text: string) => Statement;

/** SQLite has no boolean: acceptAny2xx, paused and asyncCompletion come back as 0/1. */
export function toProject(row: unknown): ProjectRow {
  const project = row as Omit<ProjectRow, 'acceptAny2xx' | 'paused' | 'asyncCompletion'> & { acceptAny2xx: number; paused: number; asyncCompletion: number };
  return { ...project, acceptAny2xx: project.acceptAny2xx === 1, paused: project.paused === 1, asyncCompletion: project.asyncCompletion === 1 };
}

const projectParams = (project: ProjectRow) => ({
  ...project,
  acceptAny2xx: project.acceptAny2xx ? 1 : 0,
  paused: project.paused ? 1 : 0,
  asyncCompletion: project.asyncCompletion ? 1 : 0,
});

/**
 * Tells the server's read cache, and that of any other process on this file (the CLI beside a
 * running server), that keys, projects, teams or secrets changed: readers compare this counter
 * once per turn (sqlite-store.ts). Only a write that changed something moves it, so a request
 * that changes nothing leaves the file as it was.
 */
function bumpCacheEpoch(sql: Sql): void {
  sql(q.CacheEpochBump).run();
}


/** A guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
function transition(sql: Sql, statement: string, params: Record<string, unknown> & { projectId: string; jobId: string }): JobTransitionResult {
  const job = sql(statement).get(params) as JobRow | undefined;
  if (job) return { ok: true, job };
  const current = sql(q.JobStatusGet).get(params.jobId, params.projectId) as { status: JobStatus } | undefined;
  return { ok: false, status: current?.status ?? null };
}

function finishAttempt(sql: Sql, params: AttemptFinishParams, tally: OverviewTally): boolean {
  const job = sql(q.JobFinishAttempt).get({
    jobId: params.jobId,
    workerId: params.workerId,
    attemptId: params.attemptId,
    now: params.now,
    ...jobAfterAttempt(params),
  }) as { projectId: string } | undefined;
  if (!job) return false;
  const { now, attemptId } = params;
  if (sql(q.AttemptFinish).run({ attemptId, now, ...params.result, reported: params.reported ? 1 : 0 }).changes === 1) {
    // The overview's figures (0011_project_overview.sql), in the same transaction as the attempt.
    const failed = params.result.outcome !== 'success';
    tally.finished(job.projectId, minuteOf(now), failed);
    if (failed) sql(q.FailedAttemptInsert).run({ projectId: job.projectId, now, attemptId });
  }
  if (params.next.kind === 'fail') sql(q.EventInsertJobFailed).run({ eventId: jobFailedEventId(params.attemptId), jobId: params.jobId, now: params.now });
  return true;
}

/**
 * One expired lease as the rescuer decided it (job-rules.ts), on the main thread: retryAt needs the
 * project and is the caller's function (sqlite-store.ts reads the leases, then asks for these).
 */
export type LeaseRescue = { kind: 'requeue'; jobId: string } | { kind: 'finish'; finish: AttemptFinishParams };

export const WRITES = {
  settingInsertIfAbsent(sql: Sql, p: { key: string; value: string }): string {
    sql(q.SettingInsertIfAbsent).run(p.key, p.value);
    return (sql(q.SettingGet).get(p.key) as { value: string }).value;
  },

  writeProbe(sql: Sql, p: { now: number }): void {
    sql(q.WriteProbe).run({ now: String(p.now) });
  },

  teamInsert(sql: Sql, team: TeamRow): void {
    sql(q.TeamInsert).run(team);
  },

  teamUpdate(sql: Sql, p: { teamId: string; name?: string; plan?: string }): TeamRow | null {
    const team = (sql(q.TeamUpdate).get({ teamId: p.teamId, name: p.name ?? null, plan: p.plan ?? null }) as TeamRow | undefined) ?? null;
    if (team) bumpCacheEpoch(sql);
    return team;
  },

  /** One batch of retention (SPEC section 12): the jobs and their attempts in one transaction. */
  jobPruneFinal(sql: Sql, p: { projectId: string; finalBy: number; limit: number }): PrunedJobs {
    const victims = sql(q.JobListPrunable).all(p) as { seq: number; id: string }[];
    let attempts = 0;
    for (const victim of victims) {
      attempts += sql(q.AttemptDeleteByJob).run(victim.id).changes;
      sql(q.JobDeleteBySeq).run(victim.seq);
    }
    return { jobs: victims.length, attempts };
  },

  idempotencyKeyPrune(sql: Sql, p: { createdBy: number; limit: number }): number {
    return sql(q.IdempotencyKeyPrune).run(p).changes;
  },

  usagePrune(sql: Sql, p: { beforeDay: string; limit: number }): number {
    return sql(q.UsagePrune).run(p).changes;
  },

  /** Up to `limit` rows in all, table after table. */
  overviewPrune(sql: Sql, p: { before: number; limit: number }): number {
    let deleted = 0;
    for (const statement of [q.DeliveryMinutePrune, q.LatenessMinutePrune, q.FailedAttemptPrune]) {
      if (deleted >= p.limit) break;
      deleted += sql(statement).run({ before: p.before, limit: p.limit - deleted }).changes;
    }
    return deleted;
  },

  projectInsert(sql: Sql, p: { project: ProjectRow; secret: WebhookSecretRow }): void {
    sql(q.ProjectInsert).run(projectParams(p.project));
    sql(q.WebhookSecretInsert).run(p.secret);
    bumpCacheEpoch(sql);
  },

  /** Read and write in one transaction so two partial PATCHes of different fields both hold. */
  projectUpdate(sql: Sql, p: { projectId: string; patch: ProjectPatch }): ProjectRow | null {
    const row = sql(q.ProjectGet).get(p.projectId);
    if (!row) return null;
    const updated: ProjectRow = { ...toProject(row), ...p.patch };
    sql(q.ProjectUpdate).run(projectParams(updated));
    bumpCacheEpoch(sql);
    return updated;
  },

  apiKeyInsert(sql: Sql, key: ApiKeyRow & { hash: Uint8Array }): void {
    sql(q.ApiKeyInsert).run({ ...key, hash: Buffer.from(key.hash) });
  },

  apiKeyRevoke(sql: Sql, p: { keyId: string; now: number }): ApiKeyRow | null {
    if (sql(q.ApiKeyRevoke).run(p).changes > 0) bumpCacheEpoch(sql);
    return (sql(q.ApiKeyGet).get(p.keyId) as ApiKeyRow | undefined) ?? null;
  },

  apiKeyTouch(sql: Sql, p: { keyId: string; now: number }): void {
    sql(q.ApiKeyTouch).run(p);
  },

  webhookSecretRotate(sql: Sql, p: { projectId: string; secret: WebhookSecretRow; overlapMs: number; now: number }): void {
    sql(q.WebhookSecretDeleteExpiring).run(p.projectId);
    sql(q.WebhookSecretExpireNewest).run({ projectId: p.projectId, expiresAt: p.now + p.overlapMs });
    sql(q.WebhookSecretInsert).run(p.secret);
    bumpCacheEpoch(sql);
  },

  jobCreate(sql: Sql, params: JobCreateParams, tally: OverviewTally): JobCreateResult {
    const { idempotency } = params;
    if (idempotency) {
      const previous = sql(q.IdempotencyKeyGet).get(params.projectId, idempotency.endpoint, idempotency.key) as
        | { requestHash: string; statusCode: number; body: string; createdAt: number }
        | undefined;
      if (previous && previous.createdAt > idempotency.validAfter) return idempotentAnswer(previous, idempotency.requestHash);
    }
    const { quota } = params;
    const usedBefore = quota ? (sql(q.UsageSum).get(params.teamId, quota.monthStartDay, quota.monthEndDay) as { n: number }).n : 0;
    let used = usedBefore;
    const insert = sql(q.JobInsert);
    // A paused project's jobs are created held, and none is started.
    const state = sql(q.ProjectCreationStateGet).get(params) as { paused: number; startable: number } | undefined;
    const onHold = state?.paused ?? 0;
    const start = state?.startable ? params.startDueNow : undefined;
    const started: StartedAtCreation[] = [];
    const pausedAt = new Map<string, number | null>();
    const created = params.jobs.map((job) => {
      if (quota && used >= quota.limit) return false;
      if (job.schedule && job.schedule.fireAt !== null) {
        const { id, fireAt } = job.schedule;
        if (!pausedAt.has(id)) pausedAt.set(id, (sql(q.SchedulePausedAtGet).get(id) as { pausedAt: number } | undefined)?.pausedAt ?? null);
        const paused = pausedAt.get(id)!;
        // No job: its schedule was paused before this instant (a fire under way when the pause came).
        if (paused !== null && fireAt > paused) return true;
      }
      const row = {
        ...job,
        projectId: params.projectId,
        now: params.now,
        scheduleId: job.schedule?.id ?? null,
        scheduleFireAt: job.schedule?.fireAt ?? null,
        onHold,
        traceparent: job.traceparent ?? null,
        tracestate: job.tracestate ?? null,
      };
      if (start && started.length < start.limit && job.runAt <= params.now) {
        const attemptId = newAttemptId(params.now);
        const result = sql(q.JobInsertStarted).run({ ...row, workerId: start.workerId, leaseExpiresAt: start.leaseExpiresAt, attemptId });
        // No change: this schedule fire's job exists already (created, and counted, before).
        if (result.changes === 0) return true;
        sql(q.AttemptInsert).run({ attemptId, jobId: job.id, attemptNumber: 1, now: params.now });
        // A first attempt's lateness, for the overview: started as it was created, on time.
        tally.started(params.projectId, minuteOf(params.now), latenessBucket(0));
        started.push({ jobId: job.id, seq: Number(result.lastInsertRowid), attemptId });
      } else if (insert.run(row).changes === 0) {
        return true;
      }
      used += 1;
      return true;
    });
    if (used > usedBefore) sql(q.UsageAdd).run(params.teamId, utcDay(params.now), used - usedBefore);
    const response = assembleAnswer(params.answer, created, usedBefore);
    if (idempotency && response) {
      sql(q.IdempotencyKeyUpsert).run({
        projectId: params.projectId,
        endpoint: idempotency.endpoint,
        key: idempotency.key,
        requestHash: idempotency.requestHash,
        statusCode: response.statusCode,
        body: response.body,
        now: params.now,
      });
    }
    return { kind: 'created', created, usedBefore, response, started };
  },

  jobCancelIfQueued(sql: Sql, p: { projectId: string; jobId: string; now: number }): JobTransitionResult {
    return transition(sql, q.JobCancelIfQueued, p);
  },

  jobRescheduleIfQueued(sql: Sql, p: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): JobTransitionResult {
    return transition(sql, q.JobRescheduleIfQueued, p);
  },

  jobRetryIfFailed(sql: Sql, p: { projectId: string; jobId: string; now: number }): JobTransitionResult {
    return transition(sql, q.JobRetryIfFailed, p);
  },

  jobRetryFailedMany(sql: Sql, p: FailedJobsFilter & { limit: number; now: number }): { retried: number; hasMore: boolean } {
    const window = { ...p, scheduleId: p.scheduleId ?? null };
    const retried = sql(q.JobRetryFailedMany).run(window).changes;
    const { now: _now, limit: _limit, ...exists } = window;
    return { retried, hasMore: sql(q.JobFailedExists).get(exists) !== undefined };
  },

  jobHoldBatch(sql: Sql, p: { projectId: string; afterSeq: number; limit: number }): { nextAfterSeq: number | null } {
    const end = sql(q.JobHoldBatchEnd).get(p) as { lastSeq: number | null; n: number };
    if (end.n === 0) return { nextAfterSeq: null };
    sql(q.JobHoldRange).run({ projectId: p.projectId, afterSeq: p.afterSeq, lastSeq: end.lastSeq });
    return { nextAfterSeq: end.n < p.limit ? null : end.lastSeq };
  },

  jobReleaseHeldBatch(sql: Sql, p: { projectId: string; limit: number }): number {
    return sql(q.JobReleaseHeldBatch).run(p).changes;
  },

  projectBackoff(sql: Sql, p: { projectId: string; until: number }): void {
    sql(q.ProjectBackoff).run(p);
  },

  jobClaimDue(sql: Sql, params: JobClaimParams, tally: OverviewTally): ClaimedJob[] {
    const { claimRule, startable, ...rest } = params;
    const rows = sql(q.JobClaimDue).all({
      ...rest,
      ...claimRule,
      excludeProjectIds: JSON.stringify(params.excludeProjectIds),
      heldByProject: JSON.stringify(params.heldByProject),
      startable: JSON.stringify(startable?.byProject ?? {}),
      attemptPrefix: startable?.attemptPrefix ?? '',
    }) as (ClaimedJob & { startedAttemptId: string | null })[];
    const claimed = rows.map(({ startedAttemptId, ...job }): ClaimedJob => {
      if (job.status !== 'STARTED') return job;
      // Claimed and started in one statement: the attempt is recorded here, as attemptStart would.
      const attemptNumber = job.attemptCount - job.roundStartAttemptCount;
      sql(q.AttemptInsert).run({ attemptId: startedAttemptId, jobId: job.id, attemptNumber, now: params.now });
      if (attemptNumber === 1) tally.started(job.projectId, minuteOf(params.now), latenessBucket(params.now - job.runAt));
      return { ...job, started: { attemptId: startedAttemptId!, attemptNumber, startedAt: params.now } };
    });
    // RETURNING gives no order; deliveries start earliest-due first.
    return claimed.sort(dueOrder);
  },

  attemptStart(sql: Sql, params: AttemptStartParams, tally: OverviewTally): { attemptNumber: number } | null {
    const started = sql(q.JobStart).get(params) as { attemptNumber: number; projectId: string; runAt: number } | undefined;
    if (!started) {
      sql(q.JobReleaseHeldBack).run({ jobId: params.jobId, workerId: params.workerId, now: params.now });
      return null;
    }
    const { attemptNumber } = started;
    // Asked again for an attempt already recorded: nothing more to record.
    const recorded = sql(q.AttemptJobGet).get(params.attemptId) as { jobId: string } | undefined;
    if (recorded?.jobId === params.jobId) return { attemptNumber };
    sql(q.AttemptInsert).run({ attemptId: params.attemptId, jobId: params.jobId, attemptNumber, now: params.now });
    // A first attempt's lateness, for the overview: started now, due at the job's runAt.
    if (attemptNumber === 1) tally.started(started.projectId, minuteOf(params.now), latenessBucket(params.now - started.runAt));
    return { attemptNumber };
  },

  attemptFinish(sql: Sql, params: AttemptFinishParams, tally: OverviewTally): boolean {
    return finishAttempt(sql, params, tally);
  },

  attemptAccept(sql: Sql, p: AttemptAcceptParams): boolean {
    if (sql(q.JobAccept).run(p).changes === 0) return false;
    sql(q.AttemptAccept).run(p);
    return true;
  },

  attemptReport(sql: Sql, p: { jobId: string; attemptId: string; now: number; report: AttemptReport }, tally: OverviewTally): boolean {
    const guard = { jobId: p.jobId, attemptId: p.attemptId, now: p.now };
    if (p.report.kind === 'running') {
      if (sql(q.JobReportRunning).run({ ...guard, deadline: p.report.deadline }).changes === 0) return false;
      sql(q.AttemptReported).run(guard);
      return true;
    }
    if (sql(q.JobAwaitingReportCheck).get(guard) === undefined) return false;
    return finishAttempt(sql, { ...guard, workerId: AWAITING_REPORT, result: p.report.result, next: p.report.next, reported: true }, tally);
  },

  jobLeaseRenew(sql: Sql, p: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): void {
    const renew = sql(q.JobLeaseRenew);
    for (const lease of p.leases) renew.run({ workerId: p.workerId, ...lease });
  },

  /**
   * Leases the rescuer read as expired and decided on. Each change is guarded on the lease it
   * read (owner, attempt, expiry), so a lease renewed or finished since changes nothing; returns
   * which were rescued.
   */
  jobRescueLeases(sql: Sql, p: { now: number; expiredBefore: number; rescues: LeaseRescue[] }, tally: OverviewTally): boolean[] {
    return p.rescues.map((rescue) => {
      if (rescue.kind === 'requeue') {
        return sql(q.JobRequeueExpired).run({ jobId: rescue.jobId, now: p.now, expiredBefore: p.expiredBefore }).changes === 1;
      }
      const { jobId, attemptId } = rescue.finish;
      const expired = sql(q.JobLeaseExpiredCheck).get({ jobId, expiredBefore: p.expiredBefore, attemptId, now: p.now });
      return expired !== undefined && finishAttempt(sql, rescue.finish, tally);
    });
  },

  jobReleaseDispatched(sql: Sql, p: { workerId: string; now: number }): number {
    return sql(q.JobReleaseDispatched).run(p).changes;
  },

  userInsert(sql: Sql, user: UserWithPassword): boolean {
    return sql(q.UserInsert).run({ ...user, isOperator: user.isOperator ? 1 : 0 }).changes === 1;
  },

  userUpdatePassword(sql: Sql, p: { userId: string; passwordHash: string; now: number }): boolean {
    return sql(q.UserUpdatePassword).run(p).changes === 1;
  },

  teamMembershipInsert(sql: Sql, p: { userId: string; teamId: string; now: number }): void {
    sql(q.TeamMembershipInsert).run(p);
  },

  sessionInsert(sql: Sql, session: SessionRow): void {
    sql(q.SessionInsert).run({ ...session, tokenHash: Buffer.from(session.tokenHash) });
  },

  sessionDelete(sql: Sql, p: { tokenHash: Uint8Array }): void {
    sql(q.SessionDelete).run(Buffer.from(p.tokenHash));
  },

  sessionDeleteByUser(sql: Sql, p: { userId: string; keepTokenHash: Uint8Array | null }): void {
    sql(q.SessionDeleteByUser).run({ userId: p.userId, keepTokenHash: p.keepTokenHash && Buffer.from(p.keepTokenHash) });
  },

  sessionDeleteExpired(sql: Sql, p: { now: number }): number {
    return sql(q.SessionDeleteExpired).run(p.now).changes;
  },

  ...SCHEDULE_WRITES,
  ...EVENT_WRITES,
} as const;

export type Writes = typeof WRITES;
export type WriteName = keyof Writes;
export type WriteParams<K extends WriteName> = Parameters<Writes[K]>[1];
export type WriteResult<K extends WriteName> = ReturnType<Writes[K]>;
export type WriteRequest = { [K in WriteName]: { name: K; params: WriteParams<K> } }[WriteName];
