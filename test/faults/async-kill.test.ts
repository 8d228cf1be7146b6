import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { testDatabase, TEST_STORE } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { projectByCli, runCli, startReadyServer, type RunningServer } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';

const TIMEOUT_MS = 10_000;

/**
 * SPEC section 11's deadline "lives in the store like a lease": jobs whose 202 was recorded are
 * waiting for their reports when `punctual serve` is killed with SIGKILL. Started again, it takes
 * their reports with the tokens sent before the kill, and ends the unreported one as timeout at
 * its deadline: not at the restart (the embedded store's start takes over every worker's lease),
 * and not never.
 */
describe(`async completion through a kill -9 (${TEST_STORE})`, () => {
  const dir = makeTempDir();
  let receiver: TestReceiver;
  let database: { url: string; drop: () => Promise<void> };
  let server: RunningServer | null = null;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer({ status: 202, body: 'working on it' });
    database = await testDatabase(join(dir.path, 'punctual.db'));
  });
  afterAll(async () => {
    await server?.stop('SIGKILL');
    await receiver.close();
    await database.drop();
    dir.remove();
  });

  it('honours the reports and the deadline of attempts accepted before the kill', async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'async-kill-secret-key-0123456789abcd', PUNCTUAL_ADMIN_TOKEN: 'async-kill-admin-0123456789', LOG_LEVEL: 'warn' };
    const { projectId, key } = projectByCli(env, receiver.url);
    const settings = { asyncCompletion: true, asyncCompletionTimeoutMs: TIMEOUT_MS, retryPolicy: { maxRetries: 1, initialDelayMs: 1_000, factor: 1 } };
    expect(runCli(['projects', 'update', projectId, '--json', JSON.stringify(settings)], env).status).toBe(0);
    let started = await startReadyServer(env);
    server = started.server;
    const api = (path: string, init: { method?: string; bearer?: string; body?: unknown } = {}) =>
      fetch(`${started.base}${path}`, {
        method: init.method ?? 'GET',
        headers: { authorization: `Bearer ${init.bearer ?? key}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      });
    const jobIds: string[] = [];
    for (const name of ['success', 'failure', 'running', 'silent']) {
      const res = await api('/api/jobs/dispatch', { method: 'POST', body: { payload: { name } } });
      expect(res.status).toBe(201);
      jobIds.push(((await res.json()) as { jobId: string }).jobId);
    }
    type Attempt = { attemptId: string; acceptedAt: string | null; outcome: string | null; finishedAt: string | null };
    const attempts = async (jobId: string) => ((await (await api(`/api/jobs/${jobId}/attempts`)).json()) as { attempts: Attempt[] }).attempts;
    for (const jobId of jobIds) await eventually(() => attempts(jobId), { what: `${jobId} accepted`, until: (a) => a.length === 1 && a[0]!.acceptedAt !== null });
    const acceptedAt = new Map<string, number>();
    for (const jobId of jobIds) acceptedAt.set(jobId, Date.parse((await attempts(jobId))[0]!.acceptedAt!));
    const delivery = (jobId: string) => receiver.forJob(jobId)[0]!.json as { attemptId: string; callbackToken: string };

    await server.stop('SIGKILL');
    started = await startReadyServer(env);
    server = started.server;
    const [success, failure, running, silent] = jobIds as [string, string, string, string];
    // The restart's take-over did not end them: every one still waits for its report.
    for (const jobId of jobIds) expect(((await (await api(`/api/jobs/${jobId}`)).json()) as { status: string }).status, jobId).toBe('STARTED');
    expect(Date.now() - Math.max(...acceptedAt.values())).toBeLessThan(TIMEOUT_MS);

    const report = (jobId: string, body: unknown) =>
      api(`/api/jobs/${jobId}/attempts/${delivery(jobId).attemptId}/result`, { method: 'POST', bearer: delivery(jobId).callbackToken, body });
    const done = await report(success, { outcome: 'success' });
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ status: 'COMPLETED' });
    const failed = await report(failure, { outcome: 'failure', error: 'gave up' });
    expect(await failed.json()).toMatchObject({ status: 'QUEUED', lastError: 'gave up' });
    const runningReportSentAt = Date.now();
    const stillRunning = await report(running, { outcome: 'running' });
    expect(await stillRunning.json()).toMatchObject({ status: 'STARTED' });

    // The failure is retried after its backoff; the silent one times out at its deadline and is retried too.
    await receiver.waitFor(() => receiver.forJob(failure).length === 2 && receiver.forJob(silent).length === 2, 30_000);
    const timedOut = (await attempts(silent))[0]!;
    expect(timedOut.outcome).toBe('timeout');
    expect(receiver.forJob(silent)[1]!.arrivedAt - acceptedAt.get(silent)!).toBeGreaterThanOrEqual(TIMEOUT_MS + 1_000);
    // "running" moved its deadline: it timed out only after asyncCompletionTimeoutMs from that report.
    const [extended] = await eventually(() => attempts(running), { what: 'the running job timed out', until: (a) => a[0]!.outcome === 'timeout', withinMs: 30_000 });
    expect(Date.parse(extended!.finishedAt!)).toBeGreaterThanOrEqual(runningReportSentAt + TIMEOUT_MS);
    expect(receiver.forJob(success)).toHaveLength(1);
  });
});
