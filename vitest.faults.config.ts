import { defineConfig } from 'vitest/config';
import { postgresProject } from './vitest.config.js';

/**
 * The fault suite (npm run test:faults): crashes, stale workers, database and receiver faults, a
 * fuzzer and tenant isolation, on both stores. Files run one at a time: several of them start
 * `punctual serve` processes or load the machine, and timing faults (leases, kills at random
 * moments) are only meaningful when the tests do not starve each other of CPU.
 */
export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 60_000,
    fileParallelism: false,
    projects: [
      { extends: true, test: { name: 'faults-sqlite', include: ['test/faults/**/*.test.ts'] } },
      ...(await postgresProject(['test/faults/**/*.test.ts'])).map((project) => ({
        ...project,
        test: { ...project.test, name: 'faults-postgres' },
      })),
    ],
  },
});
