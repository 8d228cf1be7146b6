import { defineConfig } from 'vitest/config';
import { postgresProject } from './vitest.config.js';

/**
 * The fault suite (npm run test:faults): crashes, stale workers, database and receiver faults, a
 * fuzzer and tenant isolation, on both stores. The files that start `punctual serve` processes,
 * kill them at random moments or fill a disk run one at a time, after the rest: their timing
 * faults (leases, kills) are only meaningful when the tests do not starve each other of CPU. The
 * in-process ones (INJECTED) run two at a time first, as the main suite's do.
 */
const INJECTED = [
  'test/faults/bad-input-fuzzer.test.ts',
  'test/faults/clock-jumps.test.ts',
  'test/faults/receiver-misbehaviour.test.ts',
  'test/faults/tenant-isolation.test.ts',
];
const ALL = ['test/faults/**/*.test.ts'];
const together = { maxWorkers: 2, sequence: { groupOrder: 0 } };
const alone = { maxWorkers: 1, sequence: { groupOrder: 1 } };

export default defineConfig({
  test: {
    testTimeout: 120_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'faults-sqlite', include: INJECTED, ...together } },
      { extends: true, test: { name: 'faults-sqlite-alone', include: ALL, exclude: INJECTED, ...alone } },
      ...(await postgresProject(ALL)).flatMap((project) => [
        { ...project, test: { ...project.test, name: 'faults-postgres', include: INJECTED, ...together } },
        { ...project, test: { ...project.test, name: 'faults-postgres-alone', exclude: INJECTED, ...alone } },
      ]),
    ],
  },
});
