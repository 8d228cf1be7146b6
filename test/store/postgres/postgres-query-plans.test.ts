import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobListStatement } from '../../../src/store/postgres/queries/jobs.js';
import type { JobListParams } from '../../../src/store/store.js';
import { migratedStoreWithClient, postgresAvailable } from '../../support/postgres.js';

/** A node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan, with the fields read here. */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/**
 * The jobs list's plans on PostgreSQL, run (EXPLAIN ANALYZE) on a project the planner has
 * statistics for, as it would in production: a list by creation window or by schedule starts at
 * the window's end (or the cursor) and stops at the limit, however many newer jobs the project or
 * the schedule has. The rows the plan's scans of jobs read (returned or removed by a filter) are
 * counted, so that the assertion holds whichever index scan the planner picks, and fails on a walk
 * over the newer jobs.
 */
describe.runIf(await postgresAvailable())('postgres query plans: the jobs list by creation window', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const HOUR = 3_600_000;
  const DAY = 24 * HOUR;
  const PROJECT = 'prj_plans';
  const SCHEDULE = 'sch_plans';
  /** A page of 50, and the row that tells the service that more follow. */
  const LIMIT = 51;
  /** Jobs created a day after the window, one a millisecond: what a list by seq walked before reaching it. */
  const NEWER = 60_000;
  /** The window's jobs: 100 one a second from T0, then 200 in the millisecond BATCH_AT (a batch dispatch). */
  const BATCH_AT = T0 + 200_000;
  let client: pg.Client;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ client, close } = await migratedStoreWithClient());
    const insert = (ids: string, createdAt: string, status: string, ofSchedule: string) =>
      client.query(`INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, created_at, updated_at, schedule_id)
        SELECT 'job_' || g, $1, ${status}, '{}', c, c, 0, c, c, CASE WHEN ${ofSchedule} THEN $2 END
        FROM ${ids} AS g, LATERAL (SELECT (${createdAt})::bigint AS c) AS t ORDER BY g`, [PROJECT, SCHEDULE]);
    // The window: every status (STARTED only here: rare in the project), every fifth job of the schedule.
    const everyStatus = "(ARRAY['QUEUED','DISPATCHED','STARTED','COMPLETED','FAILED','CANCELLED'])[1 + g % 6]";
    await insert('generate_series(1, 300)', `CASE WHEN g <= 100 THEN ${T0} + g * 1000 ELSE ${BATCH_AT} END`, everyStatus, 'g % 5 = 0');
    // Inserted after the window (higher seq), created a day later; every seventh of the schedule.
    await insert(`generate_series(1001, ${1000 + NEWER})`, `${T0 + DAY} + g`, "(ARRAY['QUEUED','COMPLETED','FAILED','CANCELLED'])[1 + g % 4]", 'g % 7 = 0');
    await client.query('ANALYZE jobs');
  });
  afterAll(async () => {
    await close?.();
  });

  /** Runs the store's statement for `params` under EXPLAIN ANALYZE: its rows, the scans of jobs and the rows they read. */
  async function explain(params: Partial<JobListParams>) {
    const [text, values] = jobListStatement({ projectId: PROJECT, status: null, beforeSeq: null, limit: LIMIT, ...params });
    const rows = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
    const nodes = nodesOf(rows.rows[0]!['QUERY PLAN'][0].Plan);
    const scans = nodes.filter((node) => node['Relation Name'] === 'jobs');
    const read = scans.reduce(
      (sum, node) => sum + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'],
      0,
    );
    const returned = (await client.query(text, values)).rowCount;
    return { returned, read, scanTypes: scans.map((node) => node['Node Type']), indexes: [...new Set(nodes.flatMap((node) => node['Index Name'] ?? []))] };
  }

  const oldWindow = { createdFrom: T0, createdBefore: T0 + HOUR };

  it.each([
    ['every status', {}, 'jobs_project_created', LIMIT],
    ['one status', { status: 'COMPLETED' as const }, 'jobs_project_created', 50],
    ["a schedule's, every status", { scheduleId: SCHEDULE }, 'jobs_schedule', LIMIT],
    ["a schedule's, one status", { scheduleId: SCHEDULE, status: 'COMPLETED' as const }, 'jobs_schedule', 10],
  ])('an old window, %s: reads at most a page per status, not the newer jobs', async (_what, filter, index, expected) => {
    const plan = await explain({ ...oldWindow, ...filter });
    expect(plan.returned).toBe(expected);
    // One range per status, each read only as far as the limit: 6 × 51 at most, against 60,000 newer jobs.
    expect(plan.read).toBeLessThanOrEqual(6 * LIMIT);
    expect(plan.indexes).toEqual([index]);
    expect(plan.scanTypes).not.toContain('Seq Scan');
  });

  it('continues from a cursor inside a millisecond of 200 jobs without reading the rest of that millisecond again', async () => {
    const [middle] = (await client.query<{ seq: string }>("SELECT seq FROM jobs WHERE id = 'job_200'")).rows;
    const plan = await explain({ ...oldWindow, beforeSeq: Number(middle!.seq), beforeCreatedAt: BATCH_AT });
    expect(plan.returned).toBe(LIMIT);
    expect(plan.read).toBeLessThanOrEqual(6 * LIMIT);
    expect(plan.indexes).toEqual(['jobs_project_created']);
  });

  it.each([
    ['every status', {}, 6 * LIMIT],
    ['one status', { status: 'COMPLETED' as const }, LIMIT],
  ])('a list without a window, %s, still reads by seq, about a page per status, never jobs_project_created and a sort', async (_what, filter, bound) => {
    const plan = await explain(filter);
    expect(plan.returned).toBe(LIMIT);
    // With one project in the table the planner may read a common status by jobs_pkey (seq) and
    // filter it, a few rows for each it keeps; jobs_project_created shares jobs_project_status's
    // (project_id, status) but not its order.
    expect(plan.read).toBeLessThanOrEqual(bound);
    expect(plan.indexes).not.toContain('jobs_project_created');
  });

  it('a window of all time and a status rare in the project reads only jobs of that status', async () => {
    const plan = await explain({ createdFrom: 0, createdBefore: T0 + 2 * DAY, status: 'STARTED' });
    expect(plan.returned).toBe(50);
    expect(plan.read).toBeLessThanOrEqual(LIMIT);
    expect(plan.indexes).toEqual(['jobs_project_created']);
  });
});
