/**
 * `npm run bench:health`: what a held project's backlog of due jobs costs the other projects'
 * deliveries, and how fast it drains once a probe ends the hold (SPEC section 13). Embedded store,
 * Punctual as a user runs it, the bare pipe in the same run for scale.
 *
 * In one run (bench/delivery-harness.ts):
 *   1. a warm-up, then the lateness run of bench:lateness, for the bare pipe and for Punctual;
 *   2. a second project with holdOnFailure, its webhook URL a closed port: 20 jobs fail on it
 *      (connection refused) and it is held; then BENCH_HELD_JOBS (10,000 by default, 100,000 for
 *      the figure in BENCHMARKS.md) jobs due at once are dispatched to it (batch endpoint): they
 *      wait, QUEUED;
 *   3. the lateness run again on Punctual's first project, with that backlog due and held;
 *   4. its webhook URL is pointed at the receiver and POST …/probe ends the hold: the time for the
 *      backlog to reach the receiver, and the rate.
 * Checks: the project was held, every backlog job arrived after the probe.
 *
 * Goal: Punctual's p99 with the held backlog within 1 ms of its p99 without. Exits non-zero when not met.
 * bench/stopped-backlog.ts runs it, as it runs bench:pause.
 */
import { insertBacklog, payloadFiller, positiveNumber, sleep } from './delivery-harness.js';
import { stoppedBacklogBench, type ProjectApi } from './stopped-backlog.js';

/** The held project's concurrency: the drain's ceiling. */
const CONCURRENCY = Math.round(positiveNumber('BENCH_HELD_CONCURRENCY', 100));

const healthOf = async ({ projectId, manage }: ProjectApi) => ((await manage('GET', `/manage/v1/projects/${projectId}`)).health as { state: string }).state;

process.exitCode = await stoppedBacklogBench({
  name: 'health',
  state: 'held',
  jobs: Math.round(positiveNumber('BENCH_HELD_JOBS', 10_000) / 100) * 100,
  goalMs: 1,
  // Nothing listens there: every attempt is a network error, which counts toward the health.
  settings: () => ({ webhookUrl: 'http://127.0.0.1:9/down', holdOnFailure: true, deliveryConcurrency: CONCURRENCY }),
  stop: async (api) => {
    await insertBacklog(api.system, { phase: 'trip', jobs: 20, chunk: 20, connections: 4, filler: payloadFiller(256), aheadMs: 0, progress: () => {} });
    const heldAt = Date.now();
    let state = '';
    while (state !== 'held' && Date.now() - heldAt < 60_000) {
      await sleep(100);
      state = await healthOf(api);
    }
    if (state !== 'held') throw new Error(`the second project did not turn held (${state})`);
  },
  release: async (api, first) => {
    await api.manage('PATCH', `/manage/v1/projects/${api.projectId}`, { webhookUrl: first.webhookUrl });
    const probe = await api.manage('POST', `/manage/v1/projects/${api.projectId}/probe`);
    return {
      said: `probe: ${probe.outcome as string} (${probe.statusCode as number}), the hold ended, the backlog released`,
      afterDrain: async () => {
        const after = await healthOf(api);
        return { said: ` at deliveryConcurrency ${CONCURRENCY}; health then: ${after}`, ok: probe.outcome === 'success' && after === 'healthy' };
      },
    };
  },
});
