import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkReadValues, filteredListStatement, JobBulkAct, JobBulkCount, JobTagCounts } from '../../../src/store/postgres/queries/job-filters.js';
import { argumentsOf, type NamedStatement } from '../../../src/store/postgres/queries/named-params.js';
import { rarestFirst, TAG_COUNT_BOUND } from '../../../src/store/job-rules.js';
import type { JobBulkAction, JobTagPair } from '../../../src/store/store.js';
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
 * SPEC section 14's tag lookup on PostgreSQL, run (EXPLAIN ANALYZE) on a project the planner has
 * statistics for: 100,000 jobs all tagged env:prod, 50 of them also order:42, and another project
 * with 20,000 jobs tagged order:42 too. Every row the plan's scans of jobs and job_tags read
 * (returned, or removed by a filter) is counted, whichever index the planner picks: a lookup of
 * order:42 must read about its 50 jobs, not the project's 100,000 nor the other project's.
 */
describe.runIf(await postgresAvailable())('postgres query plans: the tag lookup', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const PROJECT = 'prj_tags';
  const OTHER = 'prj_tags_other';
  const JOBS = 100_000;
  const TAGGED = 50;
  const ORDER: JobTagPair = ['order', '42'];
  const ENV: JobTagPair = ['env', 'prod'];
  let client: pg.Client;
  let close: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    ({ client, close } = await migratedStoreWithClient());
    // Every 2,000th job of the project is also order:42, so the 50 are spread over the whole range of seq.
    await client.query(
      `INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, created_at, updated_at, tags)
       SELECT 'job_t' || g, $1, 'QUEUED', '{}', $2::bigint + g, $2, 0, $2, $2,
         CASE WHEN g % 2000 = 0 THEN '{"env":"prod","order":"42"}' ELSE '{"env":"prod"}' END
       FROM generate_series(1, ${JOBS}) AS g ORDER BY g`,
      [PROJECT, T0],
    );
    await client.query(
      `INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, created_at, updated_at, tags)
       SELECT 'job_o' || g, $1, 'QUEUED', '{}', $2::bigint + g, $2, 0, $2, $2, '{"order":"42"}' FROM generate_series(1, 20000) AS g ORDER BY g`,
      [OTHER, T0],
    );
    await client.query(`INSERT INTO job_tags (project_id, key, value, job_seq)
      SELECT j.project_id, e.key, e.value, j.seq FROM jobs j, json_each_text(j.tags::json) AS e`);
    // 50 jobs of one concurrencyKey, spread over the project's range; the rest without a key.
    await client.query(`UPDATE jobs SET concurrency_key = 'customer-42' WHERE project_id = $1 AND seq % 2000 = 1`, [PROJECT]);
    await client.query('ANALYZE jobs');
    await client.query('ANALYZE job_tags');
  });
  afterAll(async () => {
    await close?.();
  });

  /** Runs `fn` in a transaction rolled back: a bulk action's changes are undone, for the next statement and test. */
  async function rolledBack<T>(fn: () => Promise<T>): Promise<T> {
    await client.query('BEGIN');
    try {
      return await fn();
    } finally {
      await client.query('ROLLBACK');
    }
  }

  /** A named statement's rows, then the same statement under EXPLAIN ANALYZE: its scans and the rows they read. Each rolled back. */
  async function explain(statement: NamedStatement, values: Record<string, unknown>) {
    const args = argumentsOf(statement, values);
    const rows = await rolledBack(async () => (await client.query(statement.text, args)).rows as Record<string, unknown>[]);
    const plan = await rolledBack(async () => (await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, args)).rows[0]!);
    const scans = nodesOf(plan['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'jobs' || node['Relation Name'] === 'job_tags');
    const read = scans.reduce(
      (sum, node) => sum + (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'],
      0,
    );
    return { rows, read, scanTypes: scans.map((node) => node['Node Type']) };
  }

  /** The tags the rarest first, as the store orders them (jobs.ts, rarestFirst) before it builds a read. */
  async function rarestOf(tags: JobTagPair[]): Promise<JobTagPair[]> {
    const counts = await client.query<{ n: number }>(JobTagCounts, [PROJECT, tags.map(([key]) => key), tags.map(([, value]) => value), TAG_COUNT_BOUND]);
    return rarestFirst(tags, counts.rows.map((row) => row.n));
  }

  it('lists a tag of 50 jobs among 100,000 reading about those 50 only, newest first', async () => {
    const [statement, values] = filteredListStatement({ projectId: PROJECT, status: null, beforeSeq: null, limit: 51, tags: [ORDER] }, [ORDER]);
    const plan = await explain(statement, values);
    expect(plan.rows).toHaveLength(TAGGED);
    expect(plan.rows[0]!.id).toBe(`job_t${JOBS}`);
    // Each job: its job_tags row, its jobs row. Not the other project's 20,000 order:42 rows.
    expect(plan.read).toBeLessThanOrEqual(3 * TAGGED);
    expect(plan.scanTypes).not.toContain('Seq Scan');
  });

  it('with a common tag and a rare one, counts each up to a bound and reads by the rare one, whichever order they came in', async () => {
    const counts = await client.query<{ n: number }>(JobTagCounts, [PROJECT, [ENV[0], ORDER[0]], [ENV[1], ORDER[1]], TAG_COUNT_BOUND]);
    expect(counts.rows.map((row) => row.n)).toEqual([TAG_COUNT_BOUND, TAGGED]);
    for (const given of [[ENV, ORDER], [ORDER, ENV]]) {
      const tags = await rarestOf(given);
      expect(tags[0]).toEqual(ORDER);
      const [statement, values] = filteredListStatement({ projectId: PROJECT, status: 'QUEUED', beforeSeq: null, limit: 51, tags: given }, tags);
      const plan = await explain(statement, values);
      expect(plan.rows).toHaveLength(TAGGED);
      expect(plan.read).toBeLessThanOrEqual(4 * TAGGED);
    }
  });

  it("lists a concurrencyKey's 50 jobs among 100,000, and counts and cancels them by bulk action, reading about those 50 only", async () => {
    const [statement, values] = filteredListStatement({ projectId: PROJECT, status: null, beforeSeq: null, limit: 51, concurrencyKey: 'customer-42' }, []);
    const listed = await explain(statement, values);
    expect(listed.rows).toHaveLength(TAGGED);
    expect(listed.read).toBeLessThanOrEqual(2 * TAGGED);
    const cancel: JobBulkAction = { kind: 'cancel' };
    const [driver, bulkValues] = bulkReadValues({ filter: { projectId: PROJECT, concurrencyKey: 'customer-42' }, action: cancel, limit: 10_001, after: null, now: T0 }, []);
    expect(driver).toBe('key');
    const counted = await explain(JobBulkCount[driver], bulkValues);
    expect(counted.rows[0]!.n).toBe(TAGGED);
    expect(counted.read).toBeLessThanOrEqual(2 * TAGGED);
    const acted = await explain(JobBulkAct[driver].cancel, { ...bulkValues, limit: 200 });
    expect(acted.rows[0]).toMatchObject({ matched: TAGGED, changed: TAGGED });
    expect(acted.read).toBeLessThanOrEqual(8 * TAGGED);
    expect(acted.scanTypes).not.toContain('Seq Scan');
  });

  it("counts a bulk action's jobs by tag, and cancels them, reading about those jobs only", async () => {
    const cancel: JobBulkAction = { kind: 'cancel' };
    const [driver, values] = bulkReadValues({ filter: { projectId: PROJECT, tags: [ORDER] }, action: cancel, limit: 10_001, after: null, now: T0 }, [ORDER]);
    expect(driver).toBe('tag');
    const counted = await explain(JobBulkCount[driver], values);
    expect(counted.rows[0]!.n).toBe(TAGGED);
    expect(counted.read).toBeLessThanOrEqual(3 * TAGGED);
    const acted = await explain(JobBulkAct[driver].cancel, { ...values, limit: 200 });
    expect(acted.rows[0]).toMatchObject({ matched: TAGGED, changed: TAGGED });
    // The read, then each job locked and updated by its key: a few rows per job, never the project's.
    expect(acted.read).toBeLessThanOrEqual(8 * TAGGED);
    expect(acted.scanTypes).not.toContain('Seq Scan');
  });
});
