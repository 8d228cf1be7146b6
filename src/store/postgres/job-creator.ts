import { randomInt } from 'node:crypto';
import { utcDay } from '../../timestamp.js';
import { assembleAnswer, debouncedAnswer, idempotentAnswer, type DebouncedJob } from '../job-rules.js';
import type { JobCreateParams, JobCreateResult, NewJob, StoredResponse } from '../store.js';
import { NOTIFY_HORIZON_MS, type ConnectionPool, type Queryable } from './connection-pool.js';
import { IdempotencyKeyClaim, IdempotencyKeyDelete, IdempotencyKeyGet, IdempotencyKeyStore, JobDebounceAbsorb, JobDebounceLock, JobDebounceOpenGet, JobDebounceSet, JobInsertGroup, JobInsertGroupTagged, JobInsertGroupWithFires, JobInsertGroupWithFiresTagged, JobTagsReplace } from './queries/jobs.js';
import { TeamsLock, UsageSumMany } from './queries/tenancy.js';

/**
 * Rows a team's usage of a day is spread over (0003_shard_usage_daily.sql): two instances' groups
 * for one team take the same row's lock 1 time in 16, instead of every time.
 */
const USAGE_SHARDS = 16;

/** A team's quota month: requests of one group normally share it, but one may span a month's end. */
const quotaKey = (params: JobCreateParams) => `${params.teamId} ${params.quota!.monthStartDay}`;

/** Which of a request's jobs are created (false: past the quota), and the month's usage before them. */
type Outcome = { created: boolean[]; usedBefore: number };

const allCreated = (params: JobCreateParams): Outcome => ({ created: params.jobs.map(() => true), usedBefore: 0 });

/**
 * Requests with a quota, in order, against their months' usage (`used`, by quotaKey): each gets the
 * room left after the ones before it, its first jobs created and the rest refused.
 */
function allot(requests: JobCreateParams[], used: Map<string, number>): Outcome[] {
  return requests.map((params) => {
    const key = quotaKey(params);
    const usedBefore = used.get(key)!;
    const room = Math.max(0, params.quota!.limit - usedBefore);
    used.set(key, usedBefore + Math.min(room, params.jobs.length));
    return { created: params.jobs.map((_, i) => i < room), usedBefore };
  });
}

/** Keyed jobs after the others, by (project, key) in code-point order (keyOf). */
const keyOrder = (job: { concurrencyKey?: string }): number => (job.concurrencyKey === undefined ? 0 : 1);
const keyOf = (job: { projectId: string; concurrencyKey?: string }): string => (job.concurrencyKey === undefined ? '' : `${job.projectId}/${job.concurrencyKey}`);

type PendingCreate = { params: JobCreateParams; resolve: (result: JobCreateResult) => void; reject: (error: unknown) => void };

/**
 * Dispatches into PostgreSQL: the jobs, each team's usage of the day and the stored answer. Those
 * of one event-loop turn share statements; one with an Idempotency-Key runs alone, in a
 * transaction that claims the key first.
 */
export class JobCreator {
  private group: PendingCreate[] = [];

  constructor(private readonly db: ConnectionPool) {}

  create(params: JobCreateParams): Promise<JobCreateResult> {
    return params.idempotency || params.jobs[0]?.debounce ? this.createInTransaction(params) : this.createGrouped(params);
  }

  /**
   * With an Idempotency-Key or a debounceKey (NewJob.debounce): a transaction of its own, claiming
   * the Idempotency-Key first, then taking the debounceKey's turn, before storing anything.
   */
  private createInTransaction(params: JobCreateParams): Promise<JobCreateResult> {
    const { quota, idempotency } = params;
    const keyArgs = idempotency ? [params.projectId, idempotency.endpoint, idempotency.key] : [];
    return this.db.transaction(async (client): Promise<JobCreateResult> => {
      if (idempotency) {
        const claimed = await this.db.rows(IdempotencyKeyClaim, [...keyArgs, idempotency.requestHash, params.now, idempotency.validAfter], client);
        if (claimed.length === 0) {
          const previous = (await this.db.rows<{ requestHash: string; statusCode: number; body: string }>(IdempotencyKeyGet, keyArgs, client))[0];
          if (previous) return idempotentAnswer(previous, idempotency.requestHash);
        }
      }
      const storeAnswer = async (response: StoredResponse | null) => {
        if (!idempotency) return;
        if (response) await this.db.query(IdempotencyKeyStore, [...keyArgs, response.statusCode, response.body], client);
        else await this.db.query(IdempotencyKeyDelete, keyArgs, client);
      };
      const job = params.jobs.length === 1 ? params.jobs[0]! : undefined;
      if (job?.debounce) {
        const absorbed = await this.absorbDebounced(params, job, job.debounce, client);
        if (absorbed) {
          await storeAnswer(absorbed.response);
          return absorbed;
        }
      }
      const { created, usedBefore } = quota ? allot([params], await this.lockQuotas([params], client))[0]! : allCreated(params);
      if (created.includes(true)) {
        await this.runInsertGroup(this.insertGroupArgs([{ params }], [{ created }], params.now), client);
        if (job?.debounce) await this.db.query(JobDebounceSet, [job.id, job.debounce.key, job.debounce.deadline], client);
      }
      const response = assembleAnswer(params.answer, created, usedBefore);
      await storeAnswer(response);
      return { kind: 'created', created, usedBefore, response, started: [] };
    });
  }

  /**
   * The debounceKey's open job absorbs the dispatch, if there is one (job-store.ts, NewJob.debounce):
   * under the key's lock, so that concurrent dispatches of a key, on any instance, take turns.
   */
  private async absorbDebounced(params: JobCreateParams, job: NewJob, debounce: NonNullable<NewJob['debounce']>, client: Queryable): Promise<Extract<JobCreateResult, { kind: 'debounced' }> | null> {
    await this.db.query(JobDebounceLock, [params.projectId, debounce.key], client);
    const open = (await this.db.rows<{ seq: number; tags: string | null }>(JobDebounceOpenGet, [params.projectId, debounce.key], client))[0];
    if (!open) return null;
    const args = [open.seq, job.payload, job.tags !== undefined, job.tags ?? null, debounce.maxRetriesGiven, job.maxRetries, job.runAt, params.now];
    const absorbed = (await this.db.rows<DebouncedJob>(JobDebounceAbsorb, args, client))[0];
    if (!absorbed) return null;
    if (job.tags !== undefined) await this.db.query(JobTagsReplace, [params.projectId, open.seq, open.tags, job.tags], client);
    return { kind: 'debounced', response: debouncedAnswer(absorbed), runAt: absorbed.runAt };
  }

  /** Dispatches without an idempotency key, joined with those of the same event-loop turn. */
  private createGrouped(params: JobCreateParams): Promise<JobCreateResult> {
    return new Promise((resolve, reject) => {
      this.group.push({ params, resolve, reject });
      if (this.group.length === 1) setImmediate(() => void this.flushGroup());
    });
  }

  /**
   * The turn's dispatches of teams without a quota: one statement inserts the jobs and adds them to
   * each team's usage of the day. Those of teams with a quota go apart (quota checks cost two more
   * statements, which the others should not wait for): one transaction locks the teams, reads
   * their month's usage and inserts the jobs that fit, leaving out those past a quota in request
   * order, exactly as one transaction per request would.
   */
  private async flushGroup(): Promise<void> {
    const group = this.group;
    this.group = [];
    const free = group.filter(({ params }) => !params.quota);
    const limited = group.filter(({ params }) => params.quota);
    if (free.length > 0) void this.insertGroup(free);
    if (limited.length > 0) void this.insertGroup(limited);
  }

  /** Stores a group whose requests all have a quota, or all have none. */
  private async insertGroup(group: PendingCreate[]): Promise<void> {
    // The group's `now` (the earliest) dates its usage and wake-up hint; each job keeps its own request's instant.
    const now = Math.min(...group.map(({ params }) => params.now));
    const requests = group.map(({ params }) => params);
    let outcomes: Outcome[];
    try {
      if (!requests[0]!.quota) {
        outcomes = requests.map(allCreated);
        await this.runInsertGroup(this.insertGroupArgs(group, outcomes, now));
      } else {
        outcomes = await this.db.transaction(async (client) => {
          const decided = allot(requests, await this.lockQuotas(requests, client));
          await this.runInsertGroup(this.insertGroupArgs(group, decided, now), client);
          return decided;
        });
      }
    } catch (error) {
      for (const { reject } of group) reject(error);
      return;
    }
    for (const [i, { params, resolve }] of group.entries()) {
      const { created, usedBefore } = outcomes[i]!;
      resolve({ kind: 'created', created, usedBefore, response: assembleAnswer(params.answer, created, usedBefore), started: [] });
    }
  }

  /**
   * Locks the teams (in id order, as every instance does) and reads each one's usage of its quota's
   * month, keyed by quotaKey. Read after the lock, in a statement of its own, so that it sees what
   * the transaction that held the lock before committed.
   */
  private async lockQuotas(requests: JobCreateParams[], client: Queryable): Promise<Map<string, number>> {
    const months = new Map(requests.map((params) => [quotaKey(params), params]));
    const teamIds = [...new Set(requests.map((params) => params.teamId))].sort();
    await this.db.query(TeamsLock, [teamIds], client);
    const entries = [...months.values()];
    const rows = await this.db.rows<{ n: number }>(
      UsageSumMany,
      [entries.map((p) => p.teamId), entries.map((p) => p.quota!.monthStartDay), entries.map((p) => p.quota!.monthEndDay)],
      client,
    );
    return new Map(entries.map((params, i) => [quotaKey(params), Number(rows[i]!.n)]));
  }

  /** JobInsertGroup, or its variant for a group with a schedule's fire among the jobs, or with tags, or both (insertGroupArgs says). */
  private runInsertGroup(group: { args: unknown[]; fires: boolean; tagged: boolean }, client?: Queryable) {
    const statement = group.fires ? (group.tagged ? JobInsertGroupWithFiresTagged : JobInsertGroupWithFires) : group.tagged ? JobInsertGroupTagged : JobInsertGroup;
    return this.db.query(statement, group.args, client);
  }

  /** JobInsertGroup's arguments: the jobs created, and each team's count in id order (the order its usage rows are locked in). */
  private insertGroupArgs(group: { params: JobCreateParams }[], outcomes: Pick<Outcome, 'created'>[], now: number): { args: unknown[]; fires: boolean; tagged: boolean } {
    const unordered = group.flatMap(({ params }, i) =>
      params.jobs
        .filter((_, k) => outcomes[i]!.created[k])
        .map((job) => ({ ...job, projectId: params.projectId, teamId: params.teamId, day: utcDay(params.now), createdAt: params.now })),
    );
    // Each keyed job's insert takes its key's lock (0016_concurrency_keys.sql): keyed jobs go in
    // (project, key) order, the same on every instance, or two groups taking two keys' locks in
    // opposite orders deadlock. The sort is stable: one key's jobs keep their order. Each row takes
    // the seq of its place in the group (`places`), so that seq, the order of jobs created together,
    // is the group's: a batch's jobs due at once start in its order, keyed or not (SPEC section 10).
    const keyed = unordered.some((j) => j.concurrencyKey !== undefined);
    const placed = unordered.map((job, index) => ({ job, place: index + 1 }));
    if (keyed) placed.sort((a, b) => keyOrder(a.job) - keyOrder(b.job) || (keyOf(a.job) < keyOf(b.job) ? -1 : keyOf(a.job) > keyOf(b.job) ? 1 : 0));
    const jobs = placed.map(({ job }) => job);
    // Each request's jobs count on the UTC day of its own time (a group can span midnight).
    const counts = new Map<string, { teamId: string; day: string; n: number }>();
    for (const [i, { params }] of group.entries()) {
      const n = outcomes[i]!.created.filter(Boolean).length;
      const day = utcDay(params.now);
      const key = `${params.teamId} ${day}`;
      if (n > 0) counts.set(key, { teamId: params.teamId, day, n: (counts.get(key)?.n ?? 0) + n });
    }
    // The statement locks the usage rows in this order. Every instance must use the same one, or
    // two groups taking the same rows in opposite orders deadlock.
    const perTeam = [...counts.keys()].sort().map((key) => counts.get(key)!);
    const earliest = Math.min(...jobs.map((j) => j.runAt));
    // Most groups carry no trace context: then no per-job array is built for it (null pads, see the query).
    const traced = jobs.some((j) => j.traceparent != null);
    const fires = jobs.some((j) => j.schedule?.fireAt != null);
    // Nor for tags: a group with none passes nothing for them (JobInsertGroup).
    const tagged = jobs.some((j) => j.tags !== undefined);
    const args = [
      now,
      jobs.map((j) => j.id),
      jobs.map((j) => j.projectId),
      jobs.map((j) => j.payload),
      jobs.map((j) => j.scheduledFor),
      jobs.map((j) => j.runAt),
      jobs.map((j) => j.maxRetries),
      perTeam.map((u) => u.teamId),
      perTeam.map((u) => u.day),
      perTeam.map((u) => u.n),
      jobs.length > 0 && earliest - now <= NOTIFY_HORIZON_MS ? String(earliest) : null,
      randomInt(USAGE_SHARDS),
      jobs.map((j) => j.schedule?.id ?? null),
      jobs.map((j) => j.schedule?.fireAt ?? null),
      traced ? jobs.map((j) => j.traceparent ?? null) : null,
      traced ? jobs.map((j) => j.tracestate ?? null) : null,
      jobs.map((j) => j.createdAt),
      // JobInsertGroupWithFires counts usage from these.
      ...(fires ? [jobs.map((j) => j.teamId), jobs.map((j) => j.day)] : []),
      ...(tagged ? [jobs.map((j) => j.tags ?? null)] : []),
      keyed ? jobs.map((j) => j.concurrencyKey ?? null) : null,
      keyed ? placed.map(({ place }) => place) : null,
    ];
    return { args, fires, tagged };
  }
}
