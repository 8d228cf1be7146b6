import pg from 'pg';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const PG_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL! : 'postgres://postgres@127.0.0.1:5432/test';

/**
 * The "postgres" project over `include`, or none (with the reason printed) when PostgreSQL is
 * unreachable outside CI. Shared with vitest.faults.config.ts.
 */
export async function postgresProject(include: string[]): Promise<TestProjectInlineConfiguration[]> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.end();
  } catch (error) {
    if (process.env.CI) throw new Error(`PostgreSQL at ${PG_URL} is unreachable in CI: ${(error as Error).message}`);
    console.warn(`\nSKIPPING the postgres test project: ${PG_URL} is unreachable (${(error as Error).message}).\n`);
    return [];
  }
  return [
    {
      extends: true,
      test: {
        name: 'postgres',
        include,
        env: { PUNCTUAL_TEST_STORE: 'postgres' },
      },
    },
  ];
}

/**
 * Files that start several `punctual serve` processes or hold deliveries to a rate or a deadline
 * measured in real time: they run after the rest, one at a time, so that another file's load does
 * not stretch the times they check.
 */
const ALONE = [
  'test/delivery/process-recovery.test.ts',
  'test/delivery/rate-instances.test.ts',
  'test/delivery/async-instances.test.ts',
  'test/delivery/backpressure-instances.test.ts',
  'test/delivery/flow-control.test.ts',
  'test/model/delivery-model.test.ts',
];

/**
 * Three instances on one PostgreSQL, checking SPEC section 3's one-second bound on 5,000 jobs: the
 * heaviest file, run last with nothing beside it (next to another ALONE file it measured 1.2 s).
 * It needs PostgreSQL, so it runs in that project only.
 */
const LAST = ['test/delivery/scale-out.test.ts'];

/** Files that run on the embedded store, or on whichever store their own set-up picks. */
const ANY_STORE = ['test/**/*.test.ts'];
/**
 * The API, claim, delivery, maintenance, dashboard-route and process suites run once per store;
 * store-specific tests and pure units run once.
 */
const BOTH_STORES = [
  'test/api/**/*.test.ts',
  'test/claims/**/*.test.ts',
  'test/delivery/**/*.test.ts',
  'test/maintenance/**/*.test.ts',
  'test/first-start.test.ts',
  'test/durability.test.ts',
  'test/cli/**/*.test.ts',
  'test/dashboard/behind-proxy.test.ts',
  'test/dashboard/browser.test.ts',
  'test/dashboard/first-hour.test.ts',
  'test/dashboard/overview.test.ts',
  'test/dashboard/pages.test.ts',
  'test/dashboard/sessions.test.ts',
  'test/model/**/*.test.ts',
];
// test/faults is a suite of its own (npm run test:faults, vitest.faults.config.ts), kept out of the
// default run so that the main suite's time does not grow with it.
const NOT_HERE = ['test/faults/**', '**/node_modules/**', ...LAST];

/**
 * Each store's files in two groups: the rest two files at a time (most wait on PostgreSQL, a
 * receiver or a child process far more than they compute, and vitest's default would leave one of
 * the two cores idle), then the ALONE files one at a time.
 */
const together = { maxWorkers: 2, sequence: { groupOrder: 0 } };
const alone = { maxWorkers: 1, sequence: { groupOrder: 1 } };
const last = { maxWorkers: 1, sequence: { groupOrder: 2 } };

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'sqlite', include: ANY_STORE, exclude: [...NOT_HERE, ...ALONE], ...together } },
      { extends: true, test: { name: 'sqlite-alone', include: ALONE, ...alone } },
      ...(await postgresProject(BOTH_STORES)).flatMap((project) => [
        { ...project, test: { ...project.test, exclude: [...NOT_HERE, ...ALONE], ...together } },
        { ...project, test: { ...project.test, name: 'postgres-alone', include: ALONE, ...alone } },
        { ...project, test: { ...project.test, name: 'postgres-last', include: LAST, exclude: [], ...last } },
      ]),
    ],
  },
});
