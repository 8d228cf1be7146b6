/**
 * What bench:pause and bench:health measure alike: a second project's backlog of due jobs that its
 * project may not deliver (paused, SPEC section 10; held for its receiver, section 13), beside the
 * first project's deliveries, and how fast it drains once released. Embedded store, Punctual as a
 * user runs it, the bare pipe in the same run for scale.
 *
 * In one run (bench/delivery-harness.ts):
 *   1. a warm-up, then the lateness run of bench:lateness, for the bare pipe and for Punctual;
 *   2. the second project is created and stopped (the case's `stop`), then `jobs` jobs due at once
 *      are dispatched to it (batch endpoint): they wait, QUEUED;
 *   3. the lateness run again on Punctual's first project, with that backlog due and waiting;
 *   4. the case's `release`: the time for the backlog to reach the receiver.
 * Checks: no backlog job arrived before the release, every one after it, and the case's own.
 * Goal: Punctual's p99 with the backlog within the case's `goalMs` of its p99 without. The run's
 * exit code is non-zero when it is not met.
 */
import {
  clean,
  describeLateness,
  insertBacklog,
  latenessOptions,
  latenessRun,
  machineLine,
  manage,
  ms,
  payloadFiller,
  printLatenessTable,
  sleep,
  startAll,
  type LatenessRun,
  type PunctualSystem,
  type System,
} from './delivery-harness.js';
import { postgresUrlFromEnv } from './pg-bench.js';

/** What is left of a release once the backlog has drained: a line to print, and whether its own checks hold. */
interface Released {
  said: string;
  afterDrain: () => Promise<{ said: string; ok: boolean }>;
}

export interface StoppedBacklogCase {
  /** The benchmark's name (bench:<name>), and the word for the backlog's state: 'paused', 'held'. */
  name: string;
  state: string;
  jobs: number;
  goalMs: number;
  /** The second project's settings beyond its name. */
  settings: (first: Record<string, unknown>) => Record<string, unknown>;
  /** Stops the second project (its API key at hand) before its backlog is dispatched. */
  stop: (api: ProjectApi) => Promise<void>;
  /** Ends the stop; resolves once its request is answered. */
  release: (api: ProjectApi, first: Record<string, unknown>) => Promise<Released>;
}

/** The second project, as the cases drive it. */
export interface ProjectApi {
  projectId: string;
  /** Punctual with the second project's API key. */
  system: System;
  manage: (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;
}

export async function stoppedBacklogBench(c: StoppedBacklogCase): Promise<number> {
  const o = latenessOptions();
  if (postgresUrlFromEnv()) throw new Error(`bench:${c.name} runs on the embedded store only: unset DATABASE_URL`);
  const { receiver, bare, punctual, meter, close } = await startAll();
  try {
    console.log(describeLateness(o));
    console.log(`${c.state} backlog: ${c.jobs} jobs due at once, dispatched to a ${c.state} second project`);
    console.log(`${machineLine()}, SQLite synchronous=${punctual.synchronous}`);
    console.log('');
    const common = { connections: o.connections, filler: o.filler, leadMs: o.leadMs, meter };
    const runs: LatenessRun[] = [];
    for (const system of [bare, punctual]) {
      runs.push(await latenessRun(receiver, system, { ...common, phase: `${system.name}warm`, jobs: o.warmupJobs, windowMs: 1_000 }));
      runs.push(await latenessRun(receiver, system, { ...common, phase: system.name, jobs: o.jobs, windowMs: o.windowMs }));
    }

    const api = await secondProject(punctual, c);
    await c.stop(api);
    const inserted = Date.now();
    const rate = await insertBacklog(api.system, { phase: c.state, jobs: c.jobs, connections: 16, filler: payloadFiller(256), aheadMs: 0, chunk: c.jobs, progress: () => {} });
    console.log(`${c.state} backlog dispatched: ${c.jobs} jobs at ${rate.toFixed(0)} jobs/s in ${((Date.now() - inserted) / 1000).toFixed(1)} s`);

    runs.push(await latenessRun(receiver, punctual, { ...common, phase: `punctual-${c.state}`, jobs: o.jobs, windowMs: o.windowMs }));
    const leaked = (await receiver.count(c.state)).deliveries;

    const first = await api.manage('GET', `/manage/v1/projects/${punctual.projectId}`);
    const releasedAt = Date.now();
    const released = await c.release(api, first);
    const answeredMs = Date.now() - releasedAt;
    let drained = 0;
    while (drained < c.jobs && Date.now() - releasedAt < 600_000) {
      await sleep(200);
      drained = (await receiver.count(c.state)).unique;
    }
    const drainMs = Date.now() - releasedAt;
    const after = await released.afterDrain();

    console.log('');
    printLatenessTable(runs);
    console.log('');
    const without = runs[3]!;
    const withBacklog = runs[4]!;
    const delta = withBacklog.stats.p99 - without.stats.p99;
    console.log(`punctual p99 without / with a ${c.state} backlog of ${c.jobs}: ${ms(without.stats.p99)} / ${ms(withBacklog.stats.p99)} ms (delta ${ms(delta)} ms)`);
    console.log(`bare p99 in the same run: ${ms(runs[1]!.stats.p99)} ms`);
    console.log(`backlog jobs delivered while ${c.state}: ${leaked}`);
    console.log(
      `${released.said}, answered in ${answeredMs} ms; ${drained} of ${c.jobs} delivered ${(drainMs / 1000).toFixed(1)} s after it ` +
        `(${(drained / (drainMs / 1000)).toFixed(0)} jobs/s)${after.said}`,
    );
    const met = clean(runs) && leaked === 0 && drained === c.jobs && after.ok && delta <= c.goalMs;
    console.log(`goal (p99 within ${c.goalMs} ms, nothing delivered while ${c.state}, all after): ${met ? 'met' : 'NOT met'}`);
    return met ? 0 : 1;
  } finally {
    await close();
  }
}

/** A second project in the first one's team, with the case's settings, and an API key of its own. */
async function secondProject(punctual: PunctualSystem, c: StoppedBacklogCase): Promise<ProjectApi> {
  const { origin, adminToken } = punctual;
  const manageAs = (method: string, path: string, body?: unknown) => manage(origin, adminToken, method, path, body);
  const first = await manageAs('GET', `/manage/v1/projects/${punctual.projectId}`);
  const second = await manageAs('POST', `/manage/v1/teams/${first.teamId as string}/projects`, { name: c.state, ...c.settings(first) });
  const projectId = second.projectId as string;
  const key = (await manageAs('POST', `/manage/v1/projects/${projectId}/keys`, { name: 'bench' })).key as string;
  return { projectId, system: { ...punctual, headers: { ...punctual.headers, authorization: `Bearer ${key}` } }, manage: manageAs };
}
