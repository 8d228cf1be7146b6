/**
 * `npm run bench:pause`: what a paused project's backlog of due jobs costs the other projects'
 * deliveries, and how fast it drains once resumed (SPEC section 10), as bench/stopped-backlog.ts
 * runs it: the second project is paused through the management API, as an operator would, with
 * BENCH_PAUSED_JOBS (100,000) jobs due at once dispatched to it; then it is resumed.
 *
 * Goal: Punctual's p99 with the paused backlog within 2 ms of its p99 without. Exits non-zero when
 * not met. (Before jobs of a paused project were held out of the scheduler's index, each claim
 * stepped over them: about 20 ms a claim for 100,000, measured with the store alone.)
 */
import { positiveNumber } from './delivery-harness.js';
import { stoppedBacklogBench } from './stopped-backlog.js';

process.exitCode = await stoppedBacklogBench({
  name: 'pause',
  state: 'paused',
  jobs: Math.round(positiveNumber('BENCH_PAUSED_JOBS', 100_000) / 100) * 100,
  goalMs: 2,
  settings: (first) => ({ webhookUrl: first.webhookUrl }),
  stop: async ({ projectId, manage }) => {
    await manage('PATCH', `/manage/v1/projects/${projectId}`, { paused: true, deliveryConcurrency: 1_000 });
  },
  release: async ({ projectId, manage }) => {
    await manage('PATCH', `/manage/v1/projects/${projectId}`, { paused: false });
    return { said: 'resume: PATCH', afterDrain: async () => ({ said: '', ok: true }) };
  },
});
