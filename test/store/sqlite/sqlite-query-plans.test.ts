import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobClaimDue, JobList, JobListByStatus, JobListExpiredLeases, JobNextDueAt, jobListStatement } from '../../../src/store/sqlite/queries/jobs.js';
import { DeliveryMinuteList, FailedAttemptListRecent, JobCountByStatusOfProject, LatenessHistogram } from '../../../src/store/sqlite/queries/overview.js';
import { bulkReadStatement, filteredListStatement, JobBulkCount, JobBulkRead, JobTagCount } from '../../../src/store/sqlite/queries/job-filters.js';
import { JobListPrunable, JobTagsDelete } from '../../../src/store/sqlite/queries/retention.js';
import type { JobBulkFilter, JobTagPair } from '../../../src/store/store.js';
import { JobCancelOfPausedSchedule, JobStartedAheadOfSchedule } from '../../../src/store/sqlite/queries/schedules.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * The scheduler's queries must read the partial index on QUEUED jobs' due time, never scan the
 * table: that is what keeps a million jobs waiting a month ahead from slowing a job due now.
 */
describe('embedded store query plans', () => {
  const dir = makeTempDir();
  let db: Database.Database;
  beforeAll(async () => {
    const store = new SqliteStore({ path: join(dir.path, 'plans.db') });
    await store.migrate();
    await store.close();
    db = new Database(join(dir.path, 'plans.db'));
  });
  afterAll(() => {
    db.close();
    dir.remove();
  });

  const plan = (sql: string, params: Record<string, unknown>) =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail).join('\n');

  it('claims due jobs through jobs_due', () => {
    const detail = plan(JobClaimDue, { now: 0, dueBy: 0, limit: 10, workerId: 'w', leaseExtraMs: 0, excludeProjectIds: '[]', heldByProject: '{}', aheadFactor: 2, share: 128, rateWindowsPerSecond: 10, startable: '{}', attemptPrefix: 'att_' });
    expect(detail).toMatch(/USING (COVERING )?INDEX jobs_due/);
    expect(detail).not.toMatch(/SCAN jobs(?! USING)/);
  });

  it('finds the next due time through jobs_due', () => {
    expect(plan(JobNextDueAt, { after: 0 })).toMatch(/USING (COVERING )?INDEX jobs_due/);
  });

  it('finds expired leases through jobs_leased', () => {
    expect(plan(JobListExpiredLeases, { expiredBefore: 0, now: 0, limit: 10 })).toMatch(/USING INDEX jobs_leased/);
  });

  it("lists a project's jobs newest first by merging one jobs_project_status range per status, without a sort or a walk of the table", () => {
    const detail = plan(JobList, { projectId: 'p', beforeSeq: 1e15, limit: 50 });
    expect(detail.match(/SEARCH jobs USING INDEX jobs_project_status \(project_id=\? AND status=\? AND seq<\?\)/g)).toHaveLength(6);
    expect(detail).toMatch(/MERGE \(UNION ALL\)/);
    expect(detail).not.toMatch(/TEMP B-TREE|SCAN/);
    // jobs_project_created shares the key's (project_id, status): the list by seq still seeks jobs_project_status.
    const byStatus = plan(JobListByStatus, { projectId: 'p', status: 'FAILED', beforeSeq: 1e15, limit: 50 });
    expect(byStatus).toMatch(/^SEARCH jobs USING INDEX jobs_project_status \(project_id=\? AND status=\? AND seq<\?\)$/);
  });

  // The list by creation window used to read jobs_project_status by seq from the newest job down,
  // checking created_at: an old window was reached only after every newer job of the project.
  it.each([
    ['a window', 'jobs_project_created', {}, 'project_id', 6],
    ['a window and a status', 'jobs_project_created', { status: 'FAILED' }, 'project_id', 1],
    ['a schedule', 'jobs_schedule', { scheduleId: 'sch_1', createdFrom: null, createdBefore: null }, 'schedule_id', 6],
    ['a schedule, a window and a status', 'jobs_schedule', { scheduleId: 'sch_1', status: 'FAILED' }, 'schedule_id', 1],
  ] as const)(
    'lists by %s from the window\'s end through %s, per status the rest of the cursor\'s millisecond and the earlier ones, merged without a sort',
    (_what, index, filter, lead, statuses) => {
      for (const cursor of [{}, { beforeSeq: 7, beforeCreatedAt: 500 }]) {
        const [sql, values] = jobListStatement({ projectId: 'p', status: null, beforeSeq: null, limit: 51, createdFrom: 0, createdBefore: 1_000, ...filter, ...cursor });
        const detail = plan(sql, values);
        const search = `SEARCH jobs USING INDEX ${index} \\(${lead}=\\? AND status=\\? AND `;
        // Two ranges a status: seq is the rowid, which SQLite does not seek in a row value (created_at, seq) < (?, ?).
        expect(detail.match(new RegExp(`${search}created_at=\\? AND seq<\\?\\)`, 'g'))).toHaveLength(statuses);
        expect(detail.match(new RegExp(`${search}created_at>\\? AND created_at<\\?\\)`, 'g'))).toHaveLength(statuses);
        expect(detail).toMatch(/MERGE \(UNION ALL\)/);
        expect(detail).not.toMatch(/TEMP B-TREE|SCAN/);
      }
    },
  );

  it("reads a project's overview through its keys, never a walk of a table: the counts stop at the limit in jobs_project_status", () => {
    const counts = plan(JobCountByStatusOfProject, { projectId: 'p', limit: 10_001 });
    expect(counts.match(/SEARCH jobs USING COVERING INDEX jobs_project_status \(project_id=\? AND status=\?\)/g)).toHaveLength(6);
    const window = { projectId: 'p', from: 0, until: 1 };
    expect(plan(DeliveryMinuteList, window)).toMatch(/^SEARCH delivery_minutes USING PRIMARY KEY \(project_id=\? AND minute>\? AND minute<\?\)$/);
    expect(plan(LatenessHistogram, window)).toMatch(/SEARCH lateness_minutes USING PRIMARY KEY \(project_id=\? AND minute>\? AND minute<\?\)/);
    const failures = plan(FailedAttemptListRecent, { ...window, limit: 10 });
    expect(failures).toMatch(/SEARCH f USING PRIMARY KEY \(project_id=\? AND finished_at>\? AND finished_at<\?\)/);
    expect(failures).toMatch(/SEARCH a USING INDEX sqlite_autoindex_attempts_1 \(id=\?\)/);
    // The counts scan their own LIMITed subqueries (co-routines) and constant rows, not a table.
    for (const detail of [counts, failures]) expect(detail).not.toMatch(/SCAN (?!\(subquery-|CONSTANT ROW)|TEMP B-TREE FOR ORDER BY/);
  });

  it('finds the jobs retention deletes through jobs_final, in order, without a sort', () => {
    const detail = plan(JobListPrunable, { projectId: 'p', finalBy: 0, limit: 10 });
    expect(detail).toMatch(/USING INDEX jobs_final/);
    expect(detail).not.toMatch(/TEMP B-TREE/);
  });

  // A schedule of a paused project may hold many QUEUED jobs for instants before its pause: the pause reads none of them.
  it("reads only a paused schedule's jobs for instants after the pause, through jobs_schedule_fire", () => {
    expect(plan(JobCancelOfPausedSchedule, { scheduleId: 's', pausedAt: 0, now: 0 })).toBe('SEARCH jobs USING INDEX jobs_schedule_fire (schedule_id=? AND schedule_fire_at>?)');
    expect(plan(JobStartedAheadOfSchedule, { scheduleId: 's', firedAfter: 0, now: 0 })).toBe('SEARCH jobs USING INDEX jobs_schedule_fire (schedule_id=? AND schedule_fire_at>?)');
  });
  // SPEC section 14: a tag's jobs are read through job_tags' key (project_id, key, value, job_seq),
  // so a lookup in a project of millions of jobs reads only the rows of that tag, in seq order, and
  // each job by its rowid; further tags are checked on the job's own tags (a scan of the filter's
  // JSON, `m`, not of a table).
  const TAG = 'SEARCH d USING PRIMARY KEY (project_id=? AND key=? AND value=? AND job_seq';
  const NO_WALK = /TEMP B-TREE|SCAN (?!m VIRTUAL TABLE|\(subquery-)/;
  const tags: JobTagPair[] = [['order', '123'], ['env', 'prod']];

  it("lists a tag's jobs newest first from job_tags' key, each job by its rowid, without a sort or a walk of a table", () => {
    const [sql, values] = filteredListStatement({ projectId: 'p', status: 'QUEUED', beforeSeq: 1e15, limit: 51, tags, createdFrom: 0, dueFrom: 5 }, tags);
    const detail = plan(sql, values);
    expect(detail).toContain(`${TAG}<?)`);
    expect(detail).toContain('SEARCH j USING INTEGER PRIMARY KEY (rowid=?)');
    expect(detail).not.toMatch(NO_WALK);
  });

  it("lists a concurrencyKey's jobs of every status newest first through jobs_by_key, without a sort or a walk of a table", () => {
    const [sql, values] = filteredListStatement({ projectId: 'p', status: null, beforeSeq: 1e15, limit: 51, concurrencyKey: 'customer-42' }, []);
    expect(plan(sql, values)).toMatch(/^SEARCH j USING INDEX jobs_by_key \(project_id=\? AND concurrency_key=\? AND seq<\?\)$/m);
    expect(plan(sql, values)).not.toMatch(NO_WALK);
  });

  it("lists a due window without a tag through the project's QUEUED jobs in jobs_project_status", () => {
    const [sql, values] = filteredListStatement({ projectId: 'p', status: null, beforeSeq: 1e15, limit: 51, dueFrom: 5, dueBefore: 9 }, []);
    expect(plan(sql, values)).toMatch(/^SEARCH j USING INDEX jobs_project_status \(project_id=\? AND status=\? AND seq<\?\)$/m);
    expect(plan(sql, values)).not.toMatch(NO_WALK);
  });

  it.each([
    ['a tag', { tags }, `${TAG}>?)`],
    ['a concurrencyKey', { concurrencyKey: 'customer-42', createdFrom: 0 }, 'SEARCH j USING INDEX jobs_by_key (project_id=? AND concurrency_key=? AND seq>?)'],
    ['a failure window', { failedFrom: 0, failedBefore: 10 }, 'SEARCH j USING INDEX jobs_failed (project_id=? AND failed_at>?)'],
    ['a schedule', { scheduleId: 's', createdFrom: 0 }, 'SEARCH j USING INDEX jobs_schedule (schedule_id=? AND status=? AND created_at>? AND created_at<?)'],
    ['a creation window', { createdFrom: 0, createdBefore: 10 }, 'SEARCH j USING INDEX jobs_project_created (project_id=? AND status=? AND created_at>? AND created_at<?)'],
    ['a due window or a status alone', { dueFrom: 0 }, 'SEARCH j USING INDEX jobs_project_status (project_id=? AND status=? AND seq>?)'],
  ] as const)("reads a bulk action's jobs by %s oldest first from its own index, with no sort and no walk of a table, and counts them so", (_what, filter, search) => {
    for (const cursor of [null, { key: 5, seq: 7 }]) {
      const [driver, values] = bulkReadStatement({ filter: { projectId: 'p', ...(filter as Partial<JobBulkFilter>) }, action: { kind: 'cancel' }, limit: 200, after: cursor }, 'tags' in filter ? tags : []);
      for (const sql of [JobBulkRead[driver], JobBulkCount[driver]]) {
        const detail = plan(sql, values);
        expect(detail).toContain(search);
        expect(detail).not.toMatch(NO_WALK);
      }
    }
  });

  it("counts a tag's rows, up to a bound, in job_tags' key; retention deletes a job's rows by that key", () => {
    expect(plan(JobTagCount, { projectId: 'p', key: 'k', value: 'v', bound: 1_000 })).toContain('SEARCH job_tags USING PRIMARY KEY (project_id=? AND key=? AND value=?)');
    expect(plan(JobTagsDelete, { projectId: 'p', seq: 1, tags: '{"k":"v"}' })).toContain('SEARCH job_tags USING PRIMARY KEY (project_id=? AND key=? AND value=? AND job_seq=?)');
  });
});
