import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { testDatabase } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { freePort, runCli, runOnTerminal, startFirstServer, type FirstStart } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';

/**
 * The CLI beside a running `punctual serve` on the same database, as an operator uses it: jobs
 * dispatched over HTTP read with `jobs get|attempts`, failures seen with `events list`, deliveries
 * held and let go with `projects pause|resume`; readable tables on a terminal.
 */
describe('punctual CLI beside a running server', () => {
  const dir = makeTempDir();
  const env: Record<string, string> = { PUNCTUAL_SECRET_KEY: 'cli-server-test-secret-key-0123456789', HOST: '127.0.0.1', LOG_FORMAT: 'json' };
  let receiver: TestReceiver;
  let started: FirstStart;
  let drop = async () => {};

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => ((request.json.payload as { fail?: boolean } | undefined)?.fail ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
    const database = await testDatabase(join(dir.path, 'cli.db'));
    drop = database.drop;
    Object.assign(env, { DATABASE_URL: database.url, PORT: String(await freePort()) });
    started = await startFirstServer(env, { webhookUrl: receiver.url, eventsUrl: `${receiver.url}/events`, retryPolicy: { maxRetries: 0 } });
  });
  afterAll(async () => {
    await started?.server.stop();
    await receiver?.close();
    await drop();
    dir.remove();
  });

  const cli = (args: string[]) => {
    const result = runCli(args, env);
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const dispatch = async (payload: Record<string, unknown>, scheduledFor: string | null = null): Promise<string> => {
    const response = await fetch(`${started.base}/api/jobs/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${started.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payload, scheduledFor }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { jobId: string }).jobId;
  };
  const jobStatus = (jobId: string, status: string) =>
    eventually(() => cli(['jobs', 'get', jobId, '--project', started.projectId]), { what: `${jobId} ${status}`, until: (job) => job.status === status, everyMs: 50 });

  it('reads a job and its attempts as the job API answers them', async () => {
    const jobId = await dispatch({ orderId: 1234 });
    const job = await jobStatus(jobId, 'COMPLETED');
    const api = await (await fetch(`${started.base}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${started.key}` } })).json();
    expect(job).toEqual(api);
    const { attempts } = cli(['jobs', 'attempts', jobId, '--project', started.projectId]);
    expect(attempts).toEqual([expect.objectContaining({ attemptNumber: 1, outcome: 'success', statusCode: 200, responseBody: 'ok' })]);
    const table = runCli(['jobs', 'attempts', jobId, '--project', started.projectId, '--table'], env).stdout.split('\n');
    expect(table[0]).toMatch(/^attemptNumber\s+startedAt\s+outcome\s+statusCode\s+durationMs\s+error$/);
    expect(table[1]).toMatch(/^1\s+\S+Z\s+success\s+200\s+\d+\s+-$/);
    // A job of another project is not found, as through the API.
    const other = runCli(['jobs', 'get', jobId, '--project', 'prj_nope'], env);
    expect(other.status).toBe(1);
    expect(JSON.parse(other.stderr)).toMatchObject({ error: 'NOT_FOUND' });
  });

  it("lists a project's events, newest first, a page at a time", async () => {
    const failed = await dispatch({ fail: true });
    await jobStatus(failed, 'FAILED');
    const events = await eventually(() => cli(['events', 'list', '--project', started.projectId]).events as { type: string; data: { jobId?: string }; status: string }[], {
      what: 'the job.failed event delivered',
      until: (list) => list.some((event) => event.type === 'job.failed' && event.data.jobId === failed && event.status === 'DELIVERED'),
      everyMs: 50,
    });
    expect(events[0]).toMatchObject({ eventId: expect.stringMatching(/^evt_/), projectId: started.projectId });
    const page = cli(['events', 'list', '--project', started.projectId, '--limit', '1']);
    expect(page.events).toHaveLength(1);
    const bad = runCli(['events', 'list', '--project', started.projectId, '--limit', '0'], env);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stderr)).toMatchObject({ error: 'INVALID_REQUEST' });
  });

  it('pauses a project, whose jobs then wait QUEUED, and resumes it', async () => {
    expect(cli(['projects', 'pause', started.projectId])).toMatchObject({ projectId: started.projectId, paused: true });
    const waiting = await dispatch({ n: 'paused' });
    expect(cli(['jobs', 'get', waiting, '--project', started.projectId]).status).toBe('QUEUED');
    expect(receiver.forJob(waiting)).toEqual([]);
    expect(cli(['projects', 'resume', started.projectId])).toMatchObject({ paused: false });
    // A server on the embedded store hears of a change made beside it at its next look, within
    // 30 s or when a scheduled job comes due, as this one does (on PostgreSQL, at once).
    const next = await dispatch({ n: 'after' }, new Date(Date.now() + 300).toISOString());
    await jobStatus(next, 'COMPLETED');
    await jobStatus(waiting, 'COMPLETED');
  });

  it('prints tables and field lines on a terminal by default, JSON through a pipe', () => {
    const piped = runCli(['keys', 'list', '--project', started.projectId], env);
    expect(JSON.parse(piped.stdout).keys).toHaveLength(1);
    const onTerminal = runOnTerminal(['keys', 'list', '--project', started.projectId], env);
    expect(onTerminal, 'needs util-linux script(1)').not.toBeNull();
    const lines = onTerminal!.output.split(/\r?\n/);
    expect(lines[0]).toMatch(/^keyId\s+name\s+prefix\s+createdAt\s+lastUsedAt\s+revokedAt$/);
    expect(lines[1]).toMatch(/^key_\S+\s+default\s+pk_\S+/);
    const project = runOnTerminal(['projects', 'get', started.projectId], env)!.output;
    expect(project).toMatch(new RegExp(`^projectId\\s+${started.projectId}\\r?$`, 'm'));
    expect(project).toMatch(/^retryPolicy\s+\{"maxRetries":0,/m);
    expect(runOnTerminal(['projects', 'get', 'prj_nope'], env)!.output).toBe('NOT_FOUND: No project prj_nope\r\n');
  });
});
