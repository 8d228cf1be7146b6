import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { PREPARED_BY_NAME } from '../../../src/store/postgres/queries/prepared-statements.js';
import { migratedStoreWithClient, postgresAvailable } from '../../support/postgres.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/**
 * Tables that grow with the jobs and the days: a plan that reads one of them whole gets slower
 * every day. (projects and teams grow with the tenants only; the claim reads the paused and
 * backed-off projects from them in its custom plans too.)
 */
const GROWING = ['jobs', 'attempts', 'api_keys', 'job_tags', 'usage_daily', 'events', 'delivery_minutes', 'lateness_minutes', 'failed_attempts', 'schedules'];

/**
 * A read of a whole table: a sequential scan, or a scan of every entry of an index that is not
 * partial (a partial index's entries are the rows its WHERE keeps, such as the jobs in flight).
 */
const readsWhole = (node: PlanNode, partial: Set<string>): boolean =>
  node['Node Type'] === 'Seq Scan' ||
  (/Index( Only)? Scan/.test(node['Node Type']) && node['Index Cond'] === undefined && !partial.has(node['Index Name'] ?? ''));

/**
 * The statements prepared once per connection (queries/prepared-statements.ts) may run on a
 * generic plan, made without their parameters' values, once PostgreSQL finds it no costlier than
 * the custom ones. Each one's generic plan is EXPLAINed here (`plan_cache_mode =
 * force_generic_plan`, the parameters NULL: a generic plan does not look at them) on tables with
 * statistics, as in production, and must not read a growing table whole.
 */
describe.runIf(await postgresAvailable())('postgres: generic plans of the prepared statements', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  let store: PostgresStore;
  let client: pg.Client;
  let close: (() => Promise<void>) | undefined;
  let partialIndexes: Set<string>;

  beforeAll(async () => {
    ({ store, client, close } = await migratedStoreWithClient());
    await client.query(`INSERT INTO teams (id, name, plan, created_at) SELECT 'team_' || g, 'T', 'unlimited', ${T0} FROM generate_series(1, 20) AS g`);
    for (let i = 1; i <= 40; i++) {
      const project = { id: `prj_${i}`, teamId: `team_${1 + (i % 20)}`, name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
      await store.projectInsert({ project, secret: { id: `whs_${i}`, projectId: project.id, ciphertext: 's', createdAt: T0, expiresAt: null } });
    }
    await client.query(`INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at)
      SELECT 'key_' || g, 'prj_' || (1 + g % 40), 'K', sha256(g::text::bytea), 'pk_' || g, ${T0} FROM generate_series(1, 2000) AS g`);
    // 20,000 jobs waiting (due over the next days), 40,000 finished with an attempt each.
    await client.query(`INSERT INTO jobs (id, project_id, status, payload, run_at, queued_at, max_retries, created_at, updated_at)
      SELECT 'job_' || g, 'prj_' || (1 + g % 40), CASE WHEN g <= 20000 THEN 'QUEUED' ELSE 'COMPLETED' END, '{}',
        ${T0} + g * 10000, ${T0}, 3, ${T0} + g, ${T0} + g
      FROM generate_series(1, 60000) AS g ORDER BY g`);
    await client.query(`INSERT INTO attempts (id, job_id, attempt_number, started_at, finished_at, outcome, status_code, duration_ms)
      SELECT 'att_' || g, 'job_' || g, 1, ${T0} + g, ${T0} + g + 5, 'success', 200, 5 FROM generate_series(20001, 60000) AS g`);
    await client.query(`INSERT INTO schedules (id, project_id, cron, timezone, payload, catch_up, overlap, created_at, updated_at)
      SELECT 'sch_' || g, 'prj_' || (1 + g % 40), '* * * * *', 'UTC', '{}', 'none', 'allow', ${T0}, ${T0} FROM generate_series(1, 2000) AS g`);
    await client.query(`INSERT INTO usage_daily (team_id, day, shard, jobs_created)
      SELECT 'team_' || (1 + g % 20), to_char(date '2027-01-01' + g / 20, 'YYYY-MM-DD'), 0, 100 FROM generate_series(1, 4000) AS g ON CONFLICT DO NOTHING`);
    await client.query('ANALYZE');
    const indexes = await client.query<{ name: string }>("SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '% WHERE %'");
    partialIndexes = new Set(indexes.rows.map((row) => row.name));
    await client.query('SET plan_cache_mode = force_generic_plan');
  }, 60_000);
  afterAll(async () => {
    await close?.();
  });

  async function genericPlan(text: string): Promise<PlanNode[]> {
    await client.query('DEALLOCATE ALL');
    await client.query(`PREPARE generic AS ${text}`);
    const [{ n }] = (await client.query<{ n: number }>("SELECT cardinality(parameter_types) AS n FROM pg_prepared_statements WHERE name = 'generic'")).rows as [{ n: number }];
    const nulls = Array.from({ length: n }, () => 'NULL').join(', ');
    const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE generic(${nulls})`);
    return nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan);
  }

  it('is a set of statements with parameters', () => {
    expect(Object.keys(PREPARED_BY_NAME).length).toBeGreaterThan(0);
    for (const text of Object.values(PREPARED_BY_NAME)) expect(text).toMatch(/\$1\b/);
  });

  it.each(Object.entries(PREPARED_BY_NAME))('%s reads no growing table whole', async (_name, text) => {
    const nodes = await genericPlan(text);
    const wholeReads = nodes.filter((node) => readsWhole(node, partialIndexes) && GROWING.includes(node['Relation Name'] ?? ''));
    expect(wholeReads.map((node) => `${node['Node Type']} on ${node['Relation Name']}`)).toEqual([]);
    // Each reads or writes one of them.
    expect(nodes.some((node) => GROWING.includes(node['Relation Name'] ?? ''))).toBe(true);
  });
});
