/**
 * `npm run bench:pause-claims`: what a paused project's due jobs cost each claim of the scheduler,
 * measured on the store alone (no HTTP, no deliveries), which is where the cost sits. It explains
 * the before and after of bench:pause.
 *
 * On a fresh database (SQLite file; with DATABASE_URL=postgres://…, a fresh schema), per case:
 * BENCH_PAUSED_JOBS (100,000) jobs due in the past for a project that is then paused, and 20
 * claims of another project's single due job, timed one by one (median and max printed):
 *   - none:        no paused jobs (the baseline);
 *   - stepped:     paused but not held, as before jobs.on_hold: the claim steps over them;
 *   - held:        paused and held (project-holds.ts), as Punctual does now;
 *   - vacuumed:    held, then VACUUM ANALYZE (PostgreSQL only: the index's dead entries gone);
 *   - receiver:    not paused but held for a failing receiver (holdOnFailure, SPEC section 13: 10
 *                  failures recorded), its jobs held as the engine holds them; released by the
 *                  end of the hold (webhookHoldEnd, as a successful probe ends it).
 * Also printed: the time to hold the jobs, and to release them on resume.
 */
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { holdProjectJobs, releaseProjectJobs } from '../src/maintenance/project-holds.js';
import { openStore } from '../src/store/open-store.js';
import { machineLine, positiveNumber } from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';
import { insertProject, withFreshDatabase } from './store-fixtures.js';
import { claimRule } from '../src/delivery/capacity-rules.js';
import { FAILING_AFTER } from '../src/store/event-store.js';

const PAUSED_JOBS = Math.round(positiveNumber('BENCH_PAUSED_JOBS', 100_000) / 500) * 500;
const CLAIMS = 20;
type Case = 'none' | 'stepped' | 'held' | 'vacuumed' | 'receiver';

const answer = { kind: 'single' as const, statusCode: 201, body: '{}' };

async function run(kind: Case): Promise<string> {
  return withFreshDatabase('pause-claims', async (url) => {
    const store = await openStore(loadConfig({ DATABASE_URL: url, PUNCTUAL_SECRET_KEY: 'x'.repeat(40) }).database, {});
    try {
      await store.migrate();
      const past = Date.now() - 3_600_000;
      const paused = await insertProject(store, 'prj_paused', past);
      const live = await insertProject(store, 'prj_live', past);
      const jobs = kind === 'none' ? 0 : PAUSED_JOBS;
      for (let i = 0; i < jobs; i += 500) {
        const batch = Array.from({ length: 500 }, (_, j) => ({ id: `job_p${i + j}`, payload: '{}', scheduledFor: null, runAt: past + i + j, maxRetries: 0 }));
        await store.jobCreate({ projectId: paused.id, teamId: paused.teamId, now: past, jobs: batch, quota: null, idempotency: null, answer });
      }
      if (kind === 'receiver') {
        await store.projectUpdate({ projectId: paused.id, patch: { holdOnFailure: true } });
        const outcomes = Array.from({ length: FAILING_AFTER }, (_, i) => ({ failed: true, error: 'HTTP 503', at: past + i, eventId: `evt_f${i}`, heldEventId: `evt_h${i}` }));
        if (!(await store.webhookHealthRecord({ projectId: paused.id, outcomes })).held) throw new Error('receiver: the project was not held');
      } else await store.projectUpdate({ projectId: paused.id, patch: { paused: true } });
      let extra = '';
      if (kind === 'held' || kind === 'vacuumed' || kind === 'receiver') {
        const started = performance.now();
        await holdProjectJobs(store, paused.id);
        extra = `, held in ${(performance.now() - started).toFixed(0)} ms`;
      }
      if (kind === 'vacuumed') {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query('VACUUM ANALYZE jobs');
        await client.end();
      }
      const times: number[] = [];
      for (let k = 0; k < CLAIMS; k++) {
        const now = Date.now();
        await store.jobCreate({ projectId: live.id, teamId: live.teamId, now, jobs: [{ id: `job_l${k}`, payload: '{}', scheduledFor: null, runAt: now, maxRetries: 0 }], quota: null, idempotency: null, answer });
        const started = performance.now();
        const claimed = await store.jobClaimDue({ now, dueBy: now, limit: 100, workerId: 'wrk_bench', leaseExtraMs: 1_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        times.push(performance.now() - started);
        if (claimed.length !== 1) throw new Error(`${kind}: claimed ${claimed.length} jobs, expected the live project's one`);
      }
      times.sort((a, b) => a - b);
      if (kind === 'held' || kind === 'vacuumed' || kind === 'receiver') {
        const started = performance.now();
        if (kind === 'receiver') await store.webhookHoldEnd({ projectId: paused.id, now: Date.now(), eventId: 'evt_recovered' });
        else await store.projectUpdate({ projectId: paused.id, patch: { paused: false } });
        const released = await releaseProjectJobs(store, paused.id, () => {});
        extra += `, ${released} released in ${(performance.now() - started).toFixed(0)} ms`;
      }
      return `${kind.padEnd(9)} ${String(jobs).padStart(8)} paused due jobs: claim median ${times[CLAIMS / 2]!.toFixed(2)} ms, max ${times[CLAIMS - 1]!.toFixed(2)} ms${extra}`;
    } finally {
      await store.close();
    }
  });
}

const cases: Case[] = postgresUrlFromEnv() ? ['none', 'stepped', 'held', 'vacuumed', 'receiver'] : ['none', 'stepped', 'held', 'receiver'];
console.log(`${machineLine()}; ${postgresUrlFromEnv() ? 'PostgreSQL' : 'SQLite'}; ${CLAIMS} claims per case`);
for (const kind of cases) console.log(await run(kind));
