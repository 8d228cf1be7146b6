import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { TEST_STORE } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { projectByCli, runCli, sharedDatabase } from '../support/spawn-punctual.js';

const TIMEOUT_MS = 2_000;
const REPORTED_TIMEOUT_MS = 60_000;

/**
 * SPEC section 11's async completion across instances: two `punctual serve` processes on one
 * PostgreSQL. Every job is accepted with 202 by whichever instance sent it; half are reported to
 * the other instance, which takes the report; the rest are never reported and time out at their
 * deadline, ended by whichever instance's lease rescue comes first, each once.
 */
describe.runIf(TEST_STORE === 'postgres')('async completion on two instances', () => {
  const database = sharedDatabase();
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer({ status: 202 });
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.close();
  });

  it('takes a report on either instance, and ends an unreported attempt at its deadline once', { timeout: 60_000 }, async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'async-instances-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: 'async-instances-admin-0123', LOG_LEVEL: 'warn' };
    // Reports go to a project whose deadline is far (a loaded machine must not time them out
    // first); the silent jobs to one whose deadline is short, so that the test sees it pass.
    const projectWithDeadline = (asyncCompletionTimeoutMs: number) => {
      const { projectId, key } = projectByCli(env, receiver.url);
      const settings = { asyncCompletion: true, asyncCompletionTimeoutMs, retryPolicy: { maxRetries: 0 } };
      expect(runCli(['projects', 'update', projectId, '--json', JSON.stringify(settings)], env).status).toBe(0);
      return key;
    };
    const reportedKey = projectWithDeadline(REPORTED_TIMEOUT_MS);
    const silentKey = projectWithDeadline(TIMEOUT_MS);
    const bases: string[] = [];
    for (let i = 0; i < 2; i++) bases.push((await database.start(env)).base);
    const call = (base: string, path: string, init: { method?: string; bearer: string; body?: unknown }) =>
      fetch(`${base}${path}`, {
        method: init.method ?? 'GET',
        headers: { authorization: `Bearer ${init.bearer}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
    const jobs: { jobId: string; dispatchedTo: number; key: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const key = i % 2 === 0 ? reportedKey : silentKey;
      const res = await call(bases[i % 2]!, '/api/jobs/dispatch', { method: 'POST', bearer: key, body: { payload: { i } } });
      expect(res.status).toBe(201);
      jobs.push({ jobId: ((await res.json()) as { jobId: string }).jobId, dispatchedTo: i % 2, key });
    }
    type Attempt = { acceptedAt: string | null; outcome: string | null; finishedAt: string | null; reportedAt: string | null };
    const attemptsOf = async (jobId: string, key: string) => ((await (await call(bases[0]!, `/api/jobs/${jobId}/attempts`, { bearer: key })).json()) as { attempts: Attempt[] }).attempts;
    for (const { jobId, key } of jobs) await eventually(() => attemptsOf(jobId, key), { what: `${jobId} accepted`, until: (a) => a.length === 1 && a[0]!.acceptedAt !== null });

    const reported = jobs.filter((_, i) => i % 2 === 0);
    const silent = jobs.filter((_, i) => i % 2 === 1);
    for (const { jobId, dispatchedTo } of reported) {
      const body = receiver.forJob(jobId)[0]!.json as { attemptId: string; callbackToken: string };
      // To the instance that did not take the dispatch.
      const res = await call(bases[1 - dispatchedTo]!, `/api/jobs/${jobId}/attempts/${body.attemptId}/result`, { method: 'POST', bearer: body.callbackToken, body: { outcome: 'success' } });
      expect(res.status, jobId).toBe(200);
      expect(await res.json()).toMatchObject({ status: 'COMPLETED' });
    }
    for (const { jobId, key } of silent) {
      const [attempt] = await eventually(() => attemptsOf(jobId, key), { what: `${jobId} timed out`, until: (a) => a[0]!.outcome !== null, withinMs: 20_000 });
      expect(attempt).toMatchObject({ outcome: 'timeout', reportedAt: null });
      expect(Date.parse(attempt!.finishedAt!) - Date.parse(attempt!.acceptedAt!)).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(((await (await call(bases[0]!, `/api/jobs/${jobId}`, { bearer: key })).json()) as { status: string }).status).toBe('FAILED');
    }
    for (const { jobId, key } of jobs) {
      expect(receiver.forJob(jobId), jobId).toHaveLength(1);
      expect(await attemptsOf(jobId, key), jobId).toHaveLength(1);
    }
  });
});
