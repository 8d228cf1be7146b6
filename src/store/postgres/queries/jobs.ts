/**
 * The PostgreSQL store's SQL for jobs: creation with its quota and Idempotency-Key, lists, guarded
 * transitions, holds, claims and leases, named as in ../../sqlite/queries/ under the same file
 * name, so a diff shows both dialects side by side. Aliases are quoted: PostgreSQL folds unquoted
 * names to lower case.
 */
import { creationListStart } from '../../job-rules.js';
import { AWAITING_REPORT, JOB_STATUSES, listedByCreation, type JobListParams } from '../../job-store.js';
import { PROJECT_STOPPED, STOPPED_PROJECTS, backedOffProjects } from './fragments.js';

export const jobColumns = (t = 'jobs') => `${t}.seq, ${t}.id, ${t}.project_id AS "projectId", ${t}.status, ${t}.payload,
  ${t}.scheduled_for AS "scheduledFor", ${t}.run_at AS "runAt", ${t}.queued_at AS "queuedAt", ${t}.max_retries AS "maxRetries",
  ${t}.attempt_count AS "attemptCount", ${t}.round_start_attempt_count AS "roundStartAttemptCount", ${t}.last_error AS "lastError",
  ${t}.created_at AS "createdAt", ${t}.updated_at AS "updatedAt", ${t}.completed_at AS "completedAt", ${t}.failed_at AS "failedAt",
  ${t}.cancelled_at AS "cancelledAt", ${t}.schedule_id AS "scheduleId", ${t}.traceparent, ${t}.tracestate, ${t}.tags,
  ${t}.concurrency_key AS "concurrencyKey"`;
const JOB_COLUMNS = jobColumns();
/** A job entering QUEUED is held while its project is paused or held (0007_operator_controls.sql, 0017_receiver_health.sql). */
export const HELD_IF_STOPPED = `on_hold = ${PROJECT_STOPPED}`;
/**
 * Every dispatch: the requests of one event-loop turn (or one request with an Idempotency-Key) in
 * one statement: all their jobs, the usage of each team, and one wake-up hint. One round trip and
 * one commit for the group, and each team's usage is updated once per group, not per request, in
 * the shard $12 of its day (0003_shard_usage_daily.sql). A group with a job with tags (SPEC section
 * 14) passes each job's tags (null for none) after the other arrays and writes their rows of the
 * tag lookup from the jobs inserted; a group without says nothing of tags, as before they existed.
 */
const jobInsertGroup = (usageRows: string, fires = false, tagged = false) => {
  // The tags' array comes last: after the fires' team and day arrays ($18, $19) when there are fires.
  const tags = fires ? '$20' : '$18';
  // Each job's concurrencyKey (SPEC section 15) last of all, null for a group without keys: the
  // triggers of 0016_concurrency_keys.sql set a keyed job's order and its key's turn.
  const keys = `$${18 + (fires ? 2 : 0) + (tagged ? 1 : 0)}`;
  // With keys, each job's place in the group (1-based), after the keys: the rows go in in key order
  // (job-creator.ts says why), and each takes the seq of its place, so seq keeps the group's order.
  const places = `$${19 + (fires ? 2 : 0) + (tagged ? 1 : 0)}`;
  return `WITH ${
    fires
      ? `fire_schedule AS MATERIALIZED (
    -- The fires' schedules, read as a pause under way leaves them (FOR SHARE waits for its commit;
    -- a pause that comes after waits for this statement's, and then cancels what it created).
    SELECT id, paused, paused_at FROM schedules WHERE id = ANY($13::text[]) FOR SHARE
  ), `
      : ''
  }group_seqs AS MATERIALIZED (
    -- One seq per job, taken in the group's order (read only for a group with keys).
    SELECT array_agg(nextval('jobs_seq_seq')) AS seqs FROM generate_series(1, cardinality($2::text[]))
  ), inserted AS (
    INSERT INTO jobs (seq, id, project_id, status, payload, scheduled_for, run_at, queued_at, max_retries, created_at, updated_at,
      schedule_id, schedule_fire_at, on_hold, traceparent, tracestate, concurrency_key${tagged ? ', tags' : ''})
    -- Each job's own request's instant ($17, else the group's $1): a job due at once has
    -- nextAttemptAt = createdAt (SPEC section 2).
    SELECT CASE WHEN ${places}::int[] IS NULL THEN nextval('jobs_seq_seq') ELSE (SELECT g.seqs[j.place] FROM group_seqs g) END,
      j.id, j.project_id, 'QUEUED', j.payload, j.scheduled_for, j.run_at, COALESCE(j.created_at, $1::bigint), j.max_retries,
      COALESCE(j.created_at, $1::bigint), COALESCE(j.created_at, $1::bigint),
      -- A paused or held project's jobs are created held (0007_operator_controls.sql). A subquery, not a join,
      -- so that rows keep the arrays' order (the order of seq, which lists follow).
      j.schedule_id, j.schedule_fire_at, (SELECT paused OR held_since IS NOT NULL FROM projects p WHERE p.id = j.project_id), j.traceparent, j.tracestate,
      j.concurrency_key${tagged ? ', j.tags' : ''}
    -- unnest pads a shorter array with nulls, so a group without trace context passes null for $15 and $16.
    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::int[], $13::text[], $14::bigint[], $15::text[], $16::text[], $17::bigint[], ${keys}::text[], ${places}::int[]${tagged ? `, ${tags}::text[]` : ''})
      AS j(id, project_id, payload, scheduled_for, run_at, max_retries, schedule_id, schedule_fire_at, traceparent, tracestate, created_at,
        concurrency_key, place${tagged ? ', tags' : ''})${
      fires
        ? `
    -- A fire for an instant after its schedule's pause creates no job (../schedule-store.ts, scheduleUpdate).
    WHERE NOT EXISTS (SELECT 1 FROM fire_schedule s WHERE s.id = j.schedule_id AND s.paused AND j.schedule_fire_at > s.paused_at)`
        : ''
    }
    -- A schedule fire (schedule_id, schedule_fire_at) already created elsewhere is left as it is.
    ON CONFLICT DO NOTHING
    RETURNING id${tagged ? ', seq, project_id, tags' : ''}
  ), ${
    tagged
      ? `tag_rows AS (
    -- The tag lookup's rows of the jobs inserted (0015_tags.sql): one per entry of their tags.
    INSERT INTO job_tags (project_id, key, value, job_seq)
    SELECT i.project_id, e.key, e.value, i.seq FROM inserted i, json_each_text(i.tags::json) AS e
  ), `
      : ''
  }usage AS (
    INSERT INTO usage_daily (team_id, day, shard, jobs_created)
    ${usageRows}
    ON CONFLICT (team_id, day, shard) DO UPDATE SET jobs_created = usage_daily.jobs_created + excluded.jobs_created
  ), hint AS (
    SELECT pg_notify('punctual_job_due', $11::text) WHERE $11::text IS NOT NULL
  )
  SELECT (SELECT count(*)::int FROM inserted) AS n, (SELECT count(*)::int FROM hint) AS notified`;
};
const USAGE_OF_TEAMS = 'SELECT u.team_id, u.day, $12::smallint, u.n FROM unnest($8::text[], $9::text[], $10::bigint[]) AS u(team_id, day, n)';
/**
 * With a schedule's fire in the group, a fire whose job exists already is not counted again, so
 * usage counts the jobs inserted ($18 and $19: each job's team and day), in the teams' order as above.
 */
const USAGE_OF_INSERTED = `SELECT t.team_id, t.day, $12::smallint, count(*) FROM inserted i
    JOIN unnest($2::text[], $18::text[], $19::text[]) AS t(id, team_id, day) ON t.id = i.id
    -- $8 to $10 are not read; naming their types lets the statement prepare.
    WHERE $8::text[] IS NOT NULL AND $9::text[] IS NOT NULL AND $10::bigint[] IS NOT NULL
    GROUP BY t.team_id, t.day ORDER BY t.team_id, t.day`;
export const JobInsertGroup = jobInsertGroup(USAGE_OF_TEAMS);
export const JobInsertGroupWithFires = jobInsertGroup(USAGE_OF_INSERTED, true);
export const JobInsertGroupTagged = jobInsertGroup(USAGE_OF_TEAMS, false, true);
export const JobInsertGroupWithFiresTagged = jobInsertGroup(USAGE_OF_INSERTED, true, true);
/**
 * Debounce (SPEC section 15), as in ../../sqlite/queries/jobs.ts: dispatches of one debounceKey take
 * turns under the key's advisory lock ($1 project, $2 key); then the key's open job (QUEUED, never
 * attempted; jobs_debounce), a dispatch it absorbs, and a new job's key and deadline.
 */
export const JobDebounceLock = "SELECT pg_advisory_xact_lock(hashtextextended('debounce/' || $1 || '/' || $2, 0))";
export const JobDebounceOpenGet = `SELECT seq, tags FROM jobs WHERE project_id = $1 AND debounce_key = $2
  AND debounce_key IS NOT NULL AND status = 'QUEUED' AND attempt_count = 0 LIMIT 1 FOR UPDATE`;
/** $1 seq, $2 payload, $3 tags given, $4 tags, $5 maxRetries given, $6 maxRetries, $7 runAt, $8 now; QUEUED still (a claim may have taken it). */
export const JobDebounceAbsorb = `UPDATE jobs SET payload = $2, tags = CASE WHEN $3::boolean THEN $4::text ELSE tags END,
  max_retries = CASE WHEN $5::boolean THEN $6::int ELSE max_retries END,
  run_at = LEAST($7::bigint, COALESCE(debounce_deadline, $7::bigint)), debounced_count = debounced_count + 1, updated_at = $8
  WHERE seq = $1 AND status = 'QUEUED' AND attempt_count = 0
  RETURNING id, scheduled_for AS "scheduledFor", max_retries AS "maxRetries", run_at AS "runAt", debounced_count AS "debouncedCount"`;
export const JobDebounceSet = 'UPDATE jobs SET debounce_key = $2, debounce_deadline = $3 WHERE id = $1';
/** A job's rows of the tag lookup for its tags $3 (as stored), then those of its new tags $4. */
export const JobTagsReplace = `WITH gone AS (
    DELETE FROM job_tags WHERE project_id = $1 AND job_seq = $2 AND (key, value) IN (SELECT key, value FROM json_each_text(COALESCE($3::text, '{}')::json))
  )
  INSERT INTO job_tags (project_id, key, value, job_seq) SELECT $1, key, value, $2 FROM json_each_text($4::text::json) ON CONFLICT DO NOTHING`;
export const JobGet = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1 AND project_id = $2`;
export const JobStatusGet = 'SELECT status FROM jobs WHERE id = $1 AND project_id = $2';
/**
 * A project's jobs of every status, newest first: one arm per status through jobs_project_status,
 * each limited on its own (the planner would otherwise read every arm whole and sort it), then
 * merged by seq; so no index on (project_id, seq) has to be kept for every job (as in
 * ../../sqlite/queries/jobs.ts).
 */
export const JobList = `${JOB_STATUSES.map(
  (status) => `(SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = '${status}' AND seq < $2 ORDER BY seq DESC LIMIT $3)`,
).join('\n  UNION ALL ')}\n  ORDER BY seq DESC LIMIT $3`;
export const JobListByStatus = `SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = $4 AND seq < $2
  ORDER BY seq DESC LIMIT $3`;
export const JobCancelIfQueued = `UPDATE jobs SET status = 'CANCELLED', cancelled_at = $3, updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRescheduleIfQueued = `UPDATE jobs SET scheduled_for = $4,
  run_at = GREATEST(COALESCE($4::bigint, queued_at), queued_at), updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'QUEUED' RETURNING ${JOB_COLUMNS}`;
export const JobRetryIfFailed = `UPDATE jobs SET status = 'QUEUED', run_at = $3, queued_at = $3, ${HELD_IF_STOPPED},
  round_start_attempt_count = attempt_count, failed_at = NULL, updated_at = $3
  WHERE id = $1 AND project_id = $2 AND status = 'FAILED' RETURNING ${JOB_COLUMNS}`;
/**
 * How many of a project's jobs one worker holds at most: claimLimit of src/delivery/capacity-rules.ts,
 * from the numbers of $9 (aheadFactor), $10 (share) and $11 (rateWindowsPerSecond). `p` is the
 * project's row.
 */
const CLAIM_LIMIT = `LEAST($9::int * LEAST(p.delivery_concurrency, $10::int), $10::int,
  CASE WHEN p.delivery_rate_per_second IS NULL THEN $10::int ELSE GREATEST(1, CEIL(p.delivery_rate_per_second / $11::int)::int) END)`;
/**
 * One statement: pick due jobs through the partial index, skipping rows another instance is
 * claiming (SKIP LOCKED), and lease them. No transaction stays open beyond it. A paused project's
 * due jobs are stepped over: they wait, QUEUED, for its resume. Of each project no more are leased
 * than its claim limit less what the worker holds already ($7 and $8, project ids and counts): the
 * rest stay QUEUED, cancellable, instead of waiting claimed for a slot.
 */
export const JobClaimDue = `WITH picked AS (
    SELECT seq, project_id, run_at FROM jobs WHERE status = 'QUEUED' AND NOT on_hold AND NOT key_held AND run_at <= $2::bigint AND NOT (project_id = ANY($6::text[]))
      AND project_id NOT IN (${STOPPED_PROJECTS}) AND project_id NOT IN (${backedOffProjects('$1::bigint')})
    -- Ties in seq order, the order they were created in: the index's (run_at) ties are in the
    -- table's physical order, which a group's keyed jobs (job-creator.ts) do not follow.
    ORDER BY run_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED
  ), due AS (
    SELECT ranked.seq FROM (
      SELECT seq, project_id, row_number() OVER (PARTITION BY project_id ORDER BY run_at, seq) AS place FROM picked
    ) AS ranked JOIN projects p ON p.id = ranked.project_id
      LEFT JOIN unnest($7::text[], $8::int[]) AS held(project_id, count) ON held.project_id = ranked.project_id
    WHERE ranked.place <= ${CLAIM_LIMIT} - COALESCE(held.count, 0)
  )
  UPDATE jobs SET status = 'DISPATCHED', lease_owner = $4, lease_expires_at = $1::bigint + $5::bigint + p.delivery_timeout_ms,
    updated_at = $1::bigint
  FROM due, projects p WHERE jobs.seq = due.seq AND p.id = jobs.project_id
  RETURNING ${JOB_COLUMNS}, jobs.lease_expires_at AS "leaseExpiresAt"`;
export const JobNextDueAt = `SELECT MIN(run_at) AS "runAt" FROM jobs WHERE status = 'QUEUED' AND NOT on_hold AND NOT key_held AND run_at > $1::bigint`;
export const JobLeaseRenew = `UPDATE jobs SET lease_expires_at = v.expires_at
  FROM unnest($2::text[], $3::bigint[]) AS v(id, expires_at)
  WHERE jobs.id = v.id AND jobs.lease_owner = $1 AND jobs.status IN ('DISPATCHED', 'STARTED')`;
/** A lease waiting for a receiver's report is no dead worker's: it expires at its deadline ($3, now), never earlier. */
export const JobListExpiredLeases = `SELECT ${JOB_COLUMNS}, lease_owner AS "leaseOwner", lease_attempt_id AS "leaseAttemptId" FROM jobs
  WHERE status IN ('DISPATCHED', 'STARTED') AND lease_expires_at < $1 AND (lease_owner <> '${AWAITING_REPORT}' OR lease_expires_at < $3)
  ORDER BY lease_expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
/**
 * A claim never started (its worker died, or is stopping): QUEUED again due when it was, and in its
 * QUEUED state as before: being claimed and given back is not a new due time (SPEC section 2).
 */
export const JobRequeueExpired = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_STOPPED}, lease_owner = NULL,
  lease_expires_at = NULL, lease_attempt_id = NULL, updated_at = $2
  WHERE id = $1 AND status = 'DISPATCHED' AND lease_expires_at < $3`;
export const JobReleaseDispatched = `UPDATE jobs SET status = 'QUEUED', ${HELD_IF_STOPPED}, lease_owner = NULL,
  lease_expires_at = NULL, updated_at = $2 WHERE lease_owner = $1 AND status = 'DISPATCHED'`;
export const JobListDispatchedTo = `SELECT ${JOB_COLUMNS}, lease_expires_at AS "leaseExpiresAt" FROM jobs
  WHERE status = 'DISPATCHED' AND lease_owner = $1`;
export const JobCountByStatus = 'SELECT status, count(*)::int AS n FROM jobs GROUP BY status';
/** Keys with a job waiting for their turn, as in ../../sqlite/queries/jobs.ts. */
export const JobCountKeysWaiting = `SELECT count(*)::int AS n FROM (SELECT DISTINCT project_id, concurrency_key FROM jobs
  WHERE concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED') AND status = 'QUEUED' AND key_held) AS waiting`;
/** A project's busiest keys (JobStore.jobBusiestKeys): its unfinished keyed jobs, all in jobs_key, grouped by key. */
export const JobBusiestKeys = `SELECT concurrency_key AS key, (count(*) FILTER (WHERE status = 'QUEUED'))::int AS waiting,
  (count(*) FILTER (WHERE status <> 'QUEUED'))::int AS running
  FROM jobs WHERE project_id = $1 AND concurrency_key IS NOT NULL AND status IN ('QUEUED', 'DISPATCHED', 'STARTED')
  GROUP BY concurrency_key ORDER BY waiting DESC, running DESC, key LIMIT $2`;
export const JobGetById = `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`;
/** The attempt still waits for its report and its deadline is after $3 (now); locked for the report's transaction. */
export const JobAwaitingReportLock = `SELECT 1 AS waiting FROM jobs WHERE id = $1 AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
  AND lease_attempt_id = $2 AND lease_expires_at > $3 FOR UPDATE`;
/** A "running" report: the deadline moves (the job itself does not change, so neither does its updatedAt). */
export const JobReportRunning = `WITH job AS (
    UPDATE jobs SET lease_expires_at = $4 WHERE id = $1 AND status = 'STARTED' AND lease_owner = '${AWAITING_REPORT}'
      AND lease_attempt_id = $2 AND lease_expires_at > $3 RETURNING id
  ), attempt AS (
    UPDATE attempts SET reported_at = $3 WHERE id = $2 AND EXISTS (SELECT 1 FROM job)
  )
  SELECT count(*)::int AS n FROM job`;
/**
 * Takes the key for this request, or finds it taken. A concurrent request with the same key
 * waits on the unique index until this transaction ends, then finds the key stored (replay) or
 * gone (this one failed and deleted it) and goes on.
 */
export const IdempotencyKeyClaim = `INSERT INTO idempotency_keys (project_id, endpoint, key, request_hash, response_status, response_body, created_at)
  VALUES ($1, $2, $3, $4, 0, '', $5)
  ON CONFLICT (project_id, endpoint, key) DO UPDATE SET request_hash = excluded.request_hash, response_status = 0,
    response_body = '', created_at = excluded.created_at
  WHERE idempotency_keys.created_at <= $6
  RETURNING 1`;
export const IdempotencyKeyGet = `SELECT request_hash AS "requestHash", response_status AS "statusCode", response_body AS body
  FROM idempotency_keys WHERE project_id = $1 AND endpoint = $2 AND key = $3`;
export const IdempotencyKeyStore = `UPDATE idempotency_keys SET response_status = $4, response_body = $5
  WHERE project_id = $1 AND endpoint = $2 AND key = $3`;
export const IdempotencyKeyDelete = 'DELETE FROM idempotency_keys WHERE project_id = $1 AND endpoint = $2 AND key = $3';
/**
 * A list by creation window or by schedule (job-store.ts, listedByCreation), newest first by
 * (created_at, seq) from ($5, $2) (job-rules.ts, creationListStart) down to $4: per status one
 * range of jobs_project_created (project_id, status, created_at, seq), or of jobs_schedule
 * (schedule_id, status, created_at, seq) for a schedule's, each limited on its own and then
 * merged as JobList's are, so that the read starts at the window's end and stops at the limit
 * however old the window (a read by seq would step over every newer job first).
 */
function newestCreatedFirst(filter: string, statuses: readonly string[]): string {
  const ranges = statuses.map(
    (status) => `SELECT ${JOB_COLUMNS} FROM jobs WHERE project_id = $1 AND status = ${status}${filter}
    AND created_at >= $4 AND (created_at, seq) < ($5, $2) ORDER BY created_at DESC, seq DESC LIMIT $3`,
  );
  if (ranges.length === 1) return ranges[0]!;
  return `${ranges.map((range) => `(${range})`).join('\n  UNION ALL ')}\n  ORDER BY "createdAt" DESC, seq DESC LIMIT $3`;
}
const EVERY_STATUS = JOB_STATUSES.map((status) => `'${status}'`);
/** One schedule's jobs (`?scheduleId=`); a schedule of another project lists nothing. */
const OF_SCHEDULE = ' AND schedule_id = $6';
export const JobListCreatedBetween = newestCreatedFirst('', EVERY_STATUS);
export const JobListByStatusCreatedBetween = newestCreatedFirst('', ['$6']);
export const JobListBySchedule = newestCreatedFirst(OF_SCHEDULE, EVERY_STATUS);
export const JobListByScheduleStatus = newestCreatedFirst(OF_SCHEDULE, ['$7']);
/** The statement of a page of the jobs list and its arguments (the store runs it; the query-plan tests explain it). */
export function jobListStatement(params: JobListParams): [text: string, values: unknown[]] {
  const status = params.status === null ? [] : [params.status];
  if (listedByCreation(params)) {
    const start = creationListStart(params);
    const values = [params.projectId, start.seq, params.limit, params.createdFrom ?? 0, start.createdAt];
    if (params.scheduleId != null) return [params.status === null ? JobListBySchedule : JobListByScheduleStatus, [...values, params.scheduleId, ...status]];
    return [params.status === null ? JobListCreatedBetween : JobListByStatusCreatedBetween, [...values, ...status]];
  }
  return [params.status === null ? JobList : JobListByStatus, [params.projectId, params.beforeSeq ?? Number.MAX_SAFE_INTEGER, params.limit, ...status]];
}
// Pause and resume (SPEC section 10): as in ../../sqlite/queries/jobs.ts.
export const JobHoldBatch = `WITH batch AS (
    SELECT seq FROM jobs WHERE project_id = $1 AND status = 'QUEUED' AND seq > $2 ORDER BY seq LIMIT $3
  ), held AS (
    UPDATE jobs SET on_hold = true FROM batch WHERE jobs.seq = batch.seq AND NOT jobs.on_hold
      AND (SELECT paused OR held_since IS NOT NULL FROM projects WHERE id = $1)
  )
  SELECT max(seq) AS "lastSeq", count(*)::int AS n FROM batch`;
export const JobReleaseHeldBatch = `WITH batch AS (
    SELECT seq FROM jobs WHERE project_id = $1 AND status = 'QUEUED' AND on_hold ORDER BY run_at, seq LIMIT $2 FOR UPDATE SKIP LOCKED
  )
  UPDATE jobs SET on_hold = false FROM batch WHERE jobs.seq = batch.seq AND NOT (SELECT paused OR held_since IS NOT NULL FROM projects WHERE id = $1)`;
