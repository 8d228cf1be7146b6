/**
 * The embedded store's writes of jobs: creation, guarded transitions, holds, claims and leases,
 * each a function of its parameters run on the writer thread inside the group's transaction, in its
 * own savepoint (write-registry.ts says how a call reaches it). The store passes the function
 * itself: `writer.run(jobWrites.jobCreate, params)`.
 */
import { newAttemptId } from '../../crypto/random-ids.js';
import { utcDay } from '../../timestamp.js';
import type { AttemptFinishParams } from '../attempt-store.js';
import { assembleAnswer, debouncedAnswer, idempotentAnswer, startableAtCreation, type DebouncedJob } from '../job-rules.js';
import { dueOrder, type ClaimedJob, type JobClaimParams, type JobCreateParams, type JobCreateResult, type JobRow, type NewJob, type StoredResponse, type JobStatus, type JobTransitionResult, type StartedAtCreation } from '../job-store.js';
import { latenessBucket, minuteOf } from '../overview-store.js';
import { attemptFinish } from './attempt-writes.js';
import type { OverviewTally } from './overview-tally.js';
import { AttemptInsert } from './queries/attempts.js';
import { IdempotencyKeyGet, IdempotencyKeyUpsert, JobCancelIfQueued, JobClaimDue, JobConcurrencyKeySet, JobDebounceAbsorb, JobDebounceOpenGet, JobDebounceSet, JobHoldBatchEnd, JobHoldRange, JobInsert, JobInsertStarted, JobInsertStartedTagged, JobInsertTagged, JobLeaseExpiredCheck, JobLeaseRenew, JobReleaseDispatched, JobReleaseHeldBatch, JobRequeueExpired, JobRescheduleIfQueued, JobRetryIfFailed, JobStatusGet, JobTagsDelete, JobTagsInsert } from './queries/jobs.js';
import { SchedulePausedAtGet } from './queries/schedules.js';
import { ProjectCreationStateGet, UsageAdd, UsageSum } from './queries/tenancy.js';
import type { Sql } from './sql.js';

/**
 * One expired lease as the rescuer decided it (job-rules.ts), on the main thread: retryAt needs the
 * project and is the caller's function (sqlite-store.ts reads the leases, then asks for these).
 */
export type LeaseRescue = { kind: 'requeue'; jobId: string } | { kind: 'finish'; finish: AttemptFinishParams };

/** A guarded UPDATE … RETURNING; when it matched nothing, says whether the job exists. */
function transition(sql: Sql, statement: string, params: Record<string, unknown> & { projectId: string; jobId: string }): JobTransitionResult {
  const job = sql(statement).get(params) as JobRow | undefined;
  if (job) return { ok: true, job };
  const current = sql(JobStatusGet).get(params.jobId, params.projectId) as { status: JobStatus } | undefined;
  return { ok: false, status: current?.status ?? null };
}

export function jobCreate(sql: Sql, params: JobCreateParams, tally: OverviewTally): JobCreateResult {
  const { idempotency } = params;
  if (idempotency) {
    const previous = sql(IdempotencyKeyGet).get(params.projectId, idempotency.endpoint, idempotency.key) as
      | { requestHash: string; statusCode: number; body: string; createdAt: number }
      | undefined;
    if (previous && previous.createdAt > idempotency.validAfter) return idempotentAnswer(previous, idempotency.requestHash);
  }
  const debounce = params.jobs.length === 1 ? params.jobs[0]!.debounce : undefined;
  if (debounce) {
    const absorbed = absorbDebounced(sql, params, debounce);
    if (absorbed) return absorbed;
  }
  const { quota } = params;
  const usedBefore = quota ? (sql(UsageSum).get(params.teamId, quota.monthStartDay, quota.monthEndDay) as { n: number }).n : 0;
  let used = usedBefore;
  const insert = sql(JobInsert);
  // A paused project's jobs are created held, and none is started.
  const state = sql(ProjectCreationStateGet).get(params) as { paused: number; startable: number } | undefined;
  const onHold = state?.paused ?? 0;
  const start = state?.startable ? params.startDueNow : undefined;
  const toStart = start ? new Set(startableAtCreation(params.jobs, params.now).slice(0, start.limit)) : null;
  const started: StartedAtCreation[] = [];
  const pausedAt = new Map<string, number | null>();
  const created = params.jobs.map((job, index) => {
    if (quota && used >= quota.limit) return false;
    if (job.schedule && job.schedule.fireAt !== null) {
      const { id, fireAt } = job.schedule;
      if (!pausedAt.has(id)) pausedAt.set(id, (sql(SchedulePausedAtGet).get(id) as { pausedAt: number } | undefined)?.pausedAt ?? null);
      const paused = pausedAt.get(id)!;
      // No job: its schedule was paused before this instant (a fire under way when the pause came).
      if (paused !== null && fireAt > paused) return true;
    }
    // Every insert's parameters in one shape, written out: spread from the job and then from this
    // row, they took V8's slow path (DefineNamedOwnIC misses, 9 % of the writer's samples in an
    // ingest profile; jobCreate 39 → 30 % of them, and 12 → 8 % end to end, written out).
    const row = {
      id: job.id,
      payload: job.payload,
      scheduledFor: job.scheduledFor,
      runAt: job.runAt,
      maxRetries: job.maxRetries,
      tags: job.tags ?? null,
      projectId: params.projectId,
      now: params.now,
      scheduleId: job.schedule?.id ?? null,
      scheduleFireAt: job.schedule?.fireAt ?? null,
      onHold,
      traceparent: job.traceparent ?? null,
      tracestate: job.tracestate ?? null,
      workerId: null as string | null,
      leaseExpiresAt: null as number | null,
      attemptId: null as string | null,
    };
    // Those due at once up to the first that never is created started (a keyed job: its key's turn
    // decides, 0016_concurrency_keys.sql), in due order (startableAtCreation).
    if (start && toStart?.has(index)) {
      const attemptId = newAttemptId(params.now);
      row.workerId = start.workerId;
      row.leaseExpiresAt = start.leaseExpiresAt;
      row.attemptId = attemptId;
      const result = sql(job.tags ? JobInsertStartedTagged : JobInsertStarted).run(row);
      // No change: this schedule fire's job exists already (created, and counted, before).
      if (result.changes === 0) return true;
      sql(AttemptInsert).run({ attemptId, jobId: job.id, attemptNumber: 1, now: params.now });
      // A first attempt's lateness, for the overview: started as it was created, on time.
      tally.started(params.projectId, minuteOf(params.now), latenessBucket(0));
      started.push({ jobId: job.id, seq: Number(result.lastInsertRowid), attemptId });
      if (job.tags) sql(JobTagsInsert).run({ projectId: params.projectId, tags: job.tags, seq: result.lastInsertRowid });
    } else {
      // A job with tags (SPEC section 14): its row with them, then its rows of the tag lookup.
      const result = job.tags ? sql(JobInsertTagged).run(row) : insert.run(row);
      // No change: this schedule fire's job exists already (created, and counted, before).
      if (result.changes === 0) return true;
      if (job.tags) sql(JobTagsInsert).run({ projectId: params.projectId, tags: job.tags, seq: result.lastInsertRowid });
      // A keyed job (SPEC section 15): its key, which sets its order and its key's turn (the triggers of 0016).
      if (job.concurrencyKey !== undefined) sql(JobConcurrencyKeySet).run({ key: job.concurrencyKey, seq: result.lastInsertRowid });
      if (job.debounce !== undefined) sql(JobDebounceSet).run({ key: job.debounce.key, deadline: job.debounce.deadline, seq: result.lastInsertRowid });
    }
    used += 1;
    return true;
  });
  if (used > usedBefore) sql(UsageAdd).run(params.teamId, utcDay(params.now), used - usedBefore);
  const response = assembleAnswer(params.answer, created, usedBefore);
  if (response) storeAnswer(sql, params, response);
  return { kind: 'created', created, usedBefore, response, started };
}

/** The answer kept under the request's Idempotency-Key, if it has one. */
function storeAnswer(sql: Sql, params: JobCreateParams, response: StoredResponse): void {
  const { idempotency } = params;
  if (!idempotency) return;
  sql(IdempotencyKeyUpsert).run({
    projectId: params.projectId,
    endpoint: idempotency.endpoint,
    key: idempotency.key,
    requestHash: idempotency.requestHash,
    statusCode: response.statusCode,
    body: response.body,
    now: params.now,
  });
}

/**
 * A dispatch with a debounceKey (NewJob.debounce) absorbed by the key's open job, if there is one:
 * that job takes its payload, tags and maxRetries where given, and its time. Nothing is counted
 * toward the quota. On the one writer, so dispatches of a key take turns.
 */
function absorbDebounced(sql: Sql, params: JobCreateParams, debounce: NonNullable<NewJob['debounce']>): JobCreateResult | null {
  const job = params.jobs[0]!;
  const open = sql(JobDebounceOpenGet).get({ projectId: params.projectId, key: debounce.key }) as { seq: number; tags: string | null } | undefined;
  if (!open) return null;
  const absorbed = sql(JobDebounceAbsorb).get({
    seq: open.seq,
    payload: job.payload,
    tagsGiven: job.tags === undefined ? 0 : 1,
    tags: job.tags ?? null,
    maxRetriesGiven: debounce.maxRetriesGiven ? 1 : 0,
    maxRetries: job.maxRetries,
    runAt: job.runAt,
    now: params.now,
  }) as DebouncedJob;
  if (job.tags !== undefined) {
    if (open.tags) sql(JobTagsDelete).run({ projectId: params.projectId, seq: open.seq, tags: open.tags });
    sql(JobTagsInsert).run({ projectId: params.projectId, tags: job.tags, seq: open.seq });
  }
  const response = debouncedAnswer(absorbed);
  storeAnswer(sql, params, response);
  return { kind: 'debounced', response, runAt: absorbed.runAt };
}

export function jobCancelIfQueued(sql: Sql, p: { projectId: string; jobId: string; now: number }): JobTransitionResult {
  return transition(sql, JobCancelIfQueued, p);
}

export function jobRescheduleIfQueued(sql: Sql, p: { projectId: string; jobId: string; scheduledFor: number | null; now: number }): JobTransitionResult {
  return transition(sql, JobRescheduleIfQueued, p);
}

export function jobRetryIfFailed(sql: Sql, p: { projectId: string; jobId: string; now: number }): JobTransitionResult {
  return transition(sql, JobRetryIfFailed, p);
}

export function jobHoldBatch(sql: Sql, p: { projectId: string; afterSeq: number; limit: number }): { nextAfterSeq: number | null } {
  const end = sql(JobHoldBatchEnd).get(p) as { lastSeq: number | null; n: number };
  if (end.n === 0) return { nextAfterSeq: null };
  sql(JobHoldRange).run({ projectId: p.projectId, afterSeq: p.afterSeq, lastSeq: end.lastSeq });
  return { nextAfterSeq: end.n < p.limit ? null : end.lastSeq };
}

export function jobReleaseHeldBatch(sql: Sql, p: { projectId: string; limit: number }): number {
  return sql(JobReleaseHeldBatch).run(p).changes;
}

export function jobClaimDue(sql: Sql, params: JobClaimParams, tally: OverviewTally): ClaimedJob[] {
  const { claimRule, startable, ...rest } = params;
  const rows = sql(JobClaimDue).all({
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
    sql(AttemptInsert).run({ attemptId: startedAttemptId, jobId: job.id, attemptNumber, now: params.now });
    if (attemptNumber === 1) tally.started(job.projectId, minuteOf(params.now), latenessBucket(params.now - job.runAt));
    return { ...job, started: { attemptId: startedAttemptId!, attemptNumber, startedAt: params.now } };
  });
  // RETURNING gives no order; deliveries start earliest-due first.
  return claimed.sort(dueOrder);
}

export function jobLeaseRenew(sql: Sql, p: { workerId: string; leases: { jobId: string; leaseExpiresAt: number }[] }): void {
  const renew = sql(JobLeaseRenew);
  for (const lease of p.leases) renew.run({ workerId: p.workerId, ...lease });
}

/**
 * Leases the rescuer read as expired and decided on. Each change is guarded on the lease it
 * read (owner, attempt, expiry), so a lease renewed or finished since changes nothing; returns
 * which were rescued.
 */
export function jobRescueLeases(sql: Sql, p: { now: number; expiredBefore: number; rescues: LeaseRescue[] }, tally: OverviewTally): boolean[] {
  return p.rescues.map((rescue) => {
    if (rescue.kind === 'requeue') {
      return sql(JobRequeueExpired).run({ jobId: rescue.jobId, now: p.now, expiredBefore: p.expiredBefore }).changes === 1;
    }
    const { jobId, attemptId } = rescue.finish;
    const expired = sql(JobLeaseExpiredCheck).get({ jobId, expiredBefore: p.expiredBefore, attemptId, now: p.now });
    return expired !== undefined && attemptFinish(sql, rescue.finish, tally);
  });
}

export function jobReleaseDispatched(sql: Sql, p: { workerId: string; now: number }): number {
  return sql(JobReleaseDispatched).run(p).changes;
}
