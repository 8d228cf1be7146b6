import pg from 'pg';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';

const PG_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL! : 'postgres://postgres@127.0.0.1:5432/test';

/** The API, delivery and process suites run once per store; store-specific tests run once. */
async function postgresProject(): Promise<TestProjectInlineConfiguration[]> {
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
        include: ['test/api/**/*.test.ts', 'test/delivery/**/*.test.ts', 'test/first-start.test.ts', 'test/durability.test.ts', 'test/cli.test.ts'],
        env: { PUNCTUAL_TEST_STORE: 'postgres' },
      },
    },
  ];
}

const sqliteProject: TestProjectInlineConfiguration = { extends: true, test: { name: 'sqlite', include: ['test/**/*.test.ts'] } };

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [sqliteProject, ...(await postgresProject())],
  },
});
