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

// test/faults is a suite of its own (npm run test:faults, vitest.faults.config.ts), kept out of the
// default run so that the main suite's time does not grow with it.
const sqliteProject: TestProjectInlineConfiguration = {
  extends: true,
  test: { name: 'sqlite', include: ['test/**/*.test.ts'], exclude: ['test/faults/**', '**/node_modules/**'] },
};

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The API, delivery and process suites run once per store; store-specific tests run once.
    projects: [
      sqliteProject,
      ...(await postgresProject([
        'test/api/**/*.test.ts',
        'test/delivery/**/*.test.ts',
        'test/first-start.test.ts',
        'test/durability.test.ts',
        'test/cli.test.ts',
        'test/webhook-url-guard.test.ts',
        'test/dashboard/browser.test.ts',
      ])),
    ],
  },
});
