import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import { testDatabase } from '../support/make-app.js';
import { runCli, runOnTerminal } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';

// Each test runs its commands as processes of their own (up to about thirty, each a Node start): the
// bound is on a hang, with room for a loaded machine, not on speed.
describe('punctual CLI', { timeout: 120_000 }, () => {
  const dir = makeTempDir();
  const env: Record<string, string> = { PUNCTUAL_SECRET_KEY: 'cli-test-secret-key-0123456789abcdef' };
  let drop = async () => {};
  beforeAll(async () => {
    const database = await testDatabase(join(dir.path, 'cli.db'));
    env.DATABASE_URL = database.url;
    drop = database.drop;
  });
  afterAll(async () => {
    await drop();
    dir.remove();
  });
  const json = (args: string[]) => {
    const result = runCli(args, env);
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };

  it('manages teams, projects, keys, secrets and usage, printing JSON', () => {
    const team = json(['teams', 'create', '--name', 'Acme', '--plan', 'pro']);
    expect(team).toMatchObject({ teamId: expect.stringMatching(/^team_/), name: 'Acme', plan: 'pro' });
    const project = json(['projects', 'create', '--team', team.teamId, '--name', 'Shop', '--webhook-url', 'http://127.0.0.1:9999/hook']);
    expect(project).toMatchObject({ projectId: expect.stringMatching(/^prj_/), webhookUrl: 'http://127.0.0.1:9999/hook', webhookSecret: expect.stringMatching(/^whsec_/) });
    expect(json(['projects', 'list', '--team', team.teamId]).projects.map((x: { projectId: string }) => x.projectId)).toEqual([project.projectId]);
    const key = json(['keys', 'create', '--project', project.projectId, '--name', 'ci']);
    expect(key.key).toMatch(/^pk_/);
    expect(json(['keys', 'list', '--project', project.projectId]).keys).toHaveLength(1);
    const revoked = json(['keys', 'revoke', key.keyId]);
    expect(revoked).toMatchObject({ keyId: key.keyId, revokedAt: expect.any(String) });
    const rotated = json(['secret', 'rotate', '--project', project.projectId]);
    expect(rotated.webhookSecret).toMatch(/^whsec_/);
    expect(json(['secret', 'list', '--project', project.projectId]).webhookSecrets).toHaveLength(2);
    // --json '<object>' is --body's older spelling, still read as a body.
    const updated = json(['projects', 'update', project.projectId, '--json', '{"deliveryConcurrency": 5}']);
    expect(updated.deliveryConcurrency).toBe(5);
    const usage = json(['usage', '--team', team.teamId]);
    expect(usage).toMatchObject({ plan: 'pro', jobsCreated: 0, quota: 100000, rateLimit: { requestsPerSecond: 100, burst: 200 } });
    expect(json(['projects', 'overview', project.projectId])).toMatchObject({
      jobsByStatus: { QUEUED: 0, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 },
      deliveries: { attempts: 0, failedAttempts: 0, perMinute: [] },
      lateness: { firstAttempts: 0, p50Ms: null, p99Ms: null },
      recentFailures: [],
    });
  });

  it('creates, lists, pauses, resumes, triggers and deletes a project\'s schedules', () => {
    const team = json(['teams', 'create', '--name', 'Cron']);
    const project = json(['projects', 'create', '--team', team.teamId, '--name', 'Nightly', '--webhook-url', 'http://127.0.0.1:9999/hook']);
    const created = json(['schedules', 'create', '--project', project.projectId, '--body', '{"cron":"30 2 * * *","timezone":"Europe/Paris","payload":{"a":1}}']);
    expect(created).toMatchObject({ scheduleId: expect.stringMatching(/^sch_/), cron: '30 2 * * *', timezone: 'Europe/Paris', paused: false });
    const listed = json(['schedules', 'list', '--project', project.projectId]);
    expect(listed.schedules.map((x: { scheduleId: string }) => x.scheduleId)).toEqual([created.scheduleId]);
    expect(json(['schedules', 'pause', created.scheduleId, '--project', project.projectId]).paused).toBe(true);
    expect(json(['schedules', 'resume', created.scheduleId, '--project', project.projectId]).paused).toBe(false);
    expect(json(['schedules', 'trigger', created.scheduleId, '--project', project.projectId])).toMatchObject({ jobId: expect.stringMatching(/^job_/), status: 'QUEUED' });
    expect(json(['schedules', 'delete', created.scheduleId, '--project', project.projectId]).scheduleId).toBe(created.scheduleId);
    const gone = runCli(['schedules', 'get', created.scheduleId, '--project', project.projectId], env);
    expect(gone.status).toBe(1);
    expect(JSON.parse(gone.stderr)).toMatchObject({ error: 'SCHEDULE_NOT_FOUND' });
    const bad = runCli(['schedules', 'create', '--project', project.projectId, '--json', '{"cron":"0 0 30 2 *","payload":{}}'], env);
    expect(JSON.parse(bad.stderr)).toMatchObject({ error: 'INVALID_CRON', data: { field: 'cron' } });
  });

  it('creates dashboard users (a generated password printed once), adds them to teams and resets passwords', () => {
    const team = json(['teams', 'create', '--name', 'Users']);
    const user = json(['users', 'create', '--email', 'Dev@Example.com', '--team', team.teamId]);
    expect(user).toEqual({
      userId: expect.stringMatching(/^usr_/),
      email: 'dev@example.com',
      operator: false,
      teams: [team.teamId],
      createdAt: expect.any(String),
      password: expect.stringMatching(/^[A-Za-z0-9]{20}$/),
    });
    const chosen = json(['users', 'create', '--email', 'ops@example.com', '--operator', '--password', 'chosen password 1']);
    expect(chosen).toMatchObject({ operator: true, teams: [] });
    expect(chosen.password).toBeUndefined();
    const other = json(['teams', 'create', '--name', 'Other']);
    expect(json(['users', 'add-team', '--email', 'dev@example.com', '--team', other.teamId]).teams).toEqual([team.teamId, other.teamId]);
    expect(json(['users', 'list']).users.map((u: { email: string }) => u.email)).toEqual(expect.arrayContaining(['dev@example.com', 'ops@example.com']));
    expect(json(['users', 'reset-password', '--email', 'dev@example.com']).password).toMatch(/^[A-Za-z0-9]{20}$/);
    const taken = runCli(['users', 'create', '--email', 'dev@example.com'], env);
    expect(taken.status).toBe(1);
    expect(JSON.parse(taken.stderr)).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'email' } });
    const short = runCli(['users', 'create', '--email', 'x@example.com', '--password', 'short'], env);
    expect(JSON.parse(short.stderr)).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'password' } });
  });

  it('prune --dry-run counts what retention would delete now; prune deletes it', async () => {
    const team = json(['teams', 'create', '--name', 'Old']);
    const project = json(['projects', 'create', '--team', team.teamId, '--name', 'Old jobs']);
    const DAY = 86_400_000;
    const now = Date.now();
    // Two jobs cancelled two days ago, written as the server would have written them then.
    const store = await openStore(loadConfig(env).database);
    try {
      await store.jobCreate({
        projectId: project.projectId,
        teamId: team.teamId,
        now: now - 3 * DAY,
        jobs: ['job_cli_old1', 'job_cli_old2'].map((id) => ({ id, payload: '{}', scheduledFor: null, runAt: now + DAY, maxRetries: 0 })),
        quota: null,
        idempotency: null,
        answer: { kind: 'single', statusCode: 201, body: '{}' },
      });
      for (const jobId of ['job_cli_old1', 'job_cli_old2']) await store.jobCancelIfQueued({ projectId: project.projectId, jobId, now: now - 2 * DAY });
    } finally {
      await store.close();
    }
    const oneDay = { ...env, PUNCTUAL_RETENTION_DAYS: '1' };
    const run = (args: string[], environment: Record<string, string> = oneDay) => {
      const result = runCli(args, environment);
      expect(result.status, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    expect(run(['prune', '--dry-run'])).toMatchObject({ dryRun: true, jobs: 2, attempts: 0 });
    // Kept 30 days by default; and a project's own setting wins over PUNCTUAL_RETENTION_DAYS.
    expect(run(['prune', '--dry-run'], env)).toMatchObject({ jobs: 0 });
    expect(json(['projects', 'update', project.projectId, '--body', '{"retentionDays": 3}']).retentionDays).toBe(3);
    expect(run(['prune', '--dry-run'])).toMatchObject({ jobs: 0 });
    json(['projects', 'update', project.projectId, '--body', '{"retentionDays": null}']);
    // On a terminal: a progress line on stderr as batches go, then the answer as field lines.
    const onTerminal = runOnTerminal(['prune'], oneDay);
    expect(onTerminal, 'needs util-linux script(1)').not.toBeNull();
    expect(onTerminal!.output).toMatch(/deleted 2 jobs, 0 attempts, 0 idempotency keys, 0 usage days, 0 events so far\r?\n/);
    expect(onTerminal!.output).toMatch(/^dryRun\s+false\r?$/m);
    expect(onTerminal!.output).toMatch(/^jobs\s+2\r?$/m);
    expect(onTerminal!.status).toBe(0);
    expect(run(['prune', '--dry-run'])).toMatchObject({ jobs: 0 });
    expect(run(['prune'])).toMatchObject({ dryRun: false, jobs: 0 });
    const bad = runCli(['prune'], { ...env, PUNCTUAL_RETENTION_DAYS: '0' });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('PUNCTUAL_RETENTION_DAYS must be a number of days from 0.001 to 3650, got "0"');
  });

  it('jobs list|cancel|reschedule|retry: the one filter of SPEC section 14 by flags, a dry run, a limit, and the API\'s refusals', async () => {
    const team = json(['teams', 'create', '--name', 'Orders']);
    const project = json(['projects', 'create', '--team', team.teamId, '--name', 'Shop', '--webhook-url', 'http://127.0.0.1:9999/hook']);
    const other = json(['projects', 'create', '--team', team.teamId, '--name', 'Elsewhere', '--webhook-url', 'http://127.0.0.1:9999/hook']);
    const now = Date.now();
    const inADay = now + 86_400_000;
    // Jobs as a dispatch with tags stores them (the CLI has no dispatch: it works beside the server).
    const store = await openStore(loadConfig(env).database);
    try {
      const create = (projectId: string, jobs: { id: string; tags: string }[]) =>
        store.jobCreate({
          projectId,
          teamId: team.teamId,
          now,
          jobs: jobs.map(({ id, tags }) => ({ id, payload: '{}', scheduledFor: inADay, runAt: inADay, maxRetries: 0, tags })),
          quota: null,
          idempotency: null,
          answer: { kind: 'single', statusCode: 201, body: '{}' },
        });
      await create(project.projectId, [1, 2, 3].map((i) => ({ id: `job_cli_o5_${i}`, tags: '{"order":"5","env":"prod=eu"}' })));
      await create(project.projectId, [{ id: 'job_cli_o6', tags: '{"order":"6"}' }]);
      await create(other.projectId, [{ id: 'job_cli_theirs', tags: '{"order":"5"}' }]);
    } finally {
      await store.close();
    }
    const P = ['--project', project.projectId];
    const listed = json(['jobs', 'list', ...P, '--tag', 'order=5']);
    expect(listed.jobs.map((job: { jobId: string }) => job.jobId)).toEqual(['job_cli_o5_3', 'job_cli_o5_2', 'job_cli_o5_1']);
    expect(listed.jobs[0].tags).toEqual({ order: '5', env: 'prod=eu' });
    // A value may hold "=": the key ends at the first one.
    expect(json(['jobs', 'list', ...P, '--tag', 'env=prod=eu', '--status', 'QUEUED', '--limit', '2']).jobs).toHaveLength(2);
    expect(json(['jobs', 'cancel', ...P, '--tag', 'order=5', '--dry-run'])).toEqual({ action: 'cancel', dryRun: true, matched: 3, changed: 0, hasMore: false });
    expect(json(['jobs', 'cancel', ...P, '--tag', 'order=5', '--limit', '2'])).toEqual({ action: 'cancel', dryRun: false, matched: 2, changed: 2, hasMore: true });
    expect(json(['jobs', 'list', ...P, '--status', 'CANCELLED']).jobs.map((job: { jobId: string }) => job.jobId)).toEqual(['job_cli_o5_2', 'job_cli_o5_1']);
    const moved = json(['jobs', 'reschedule', ...P, '--tag', 'order=6', '--scheduled-for', 'now']);
    expect(moved).toEqual({ action: 'reschedule', dryRun: false, matched: 1, changed: 1, hasMore: false });
    expect(json(['jobs', 'list', ...P, '--due-before', new Date(now + 1).toISOString()]).jobs.map((job: { jobId: string }) => job.jobId)).toEqual(['job_cli_o6']);
    expect(json(['jobs', 'retry', ...P, '--tag', 'order=5'])).toMatchObject({ matched: 0, changed: 0 });
    expect(json(['jobs', 'list', '--project', other.projectId, '--tag', 'order=5']).jobs[0]).toMatchObject({ jobId: 'job_cli_theirs', status: 'QUEUED' });

    // The API's refusals, in its shape; flag mistakes with the usage.
    const everything = runCli(['jobs', 'cancel', ...P], env);
    expect(everything.status).toBe(1);
    expect(JSON.parse(everything.stderr)).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'filter' } });
    const noTime = runCli(['jobs', 'reschedule', ...P, '--tag', 'order=5'], env);
    expect(JSON.parse(noTime.stderr)).toMatchObject({ error: 'INVALID_SCHEDULE', data: { field: 'scheduledFor' } });
    const badTag = runCli(['jobs', 'list', ...P, '--tag', 'order'], env);
    expect(badTag.status).toBe(2);
    expect(badTag.stderr).toContain('--tag must be key=value');
    expect(runCli(['jobs', 'cancel', ...P, '--tag', 'order=5', '--tag', 'order=6'], env).stderr).toContain('is given twice');
    expect(runCli(['jobs', 'list', '--tag', 'order=5'], env).stderr).toContain('--project is required');
    expect(json(['jobs', 'list', ...P, '--tag', 'order=5', '--status', 'QUEUED']).jobs.map((job: { jobId: string }) => job.jobId)).toEqual(['job_cli_o5_3']);
  });

  it('prints errors in the API shape, on one line, and exits 1', () => {
    const result = runCli(['usage', '--team', 'team_nope'], env);
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('{"error":"NOT_FOUND","data":{"message":"No team team_nope"}}\n');
    expect(runCli(['usage', '--team', 'team_nope', '--table'], env).stderr).toBe('NOT_FOUND: No team team_nope\n');
    const bad = runCli(['teams', 'create', '--name', 'x', '--plan', 'gold'], env);
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stderr)).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'plan' } });
  });

  it('explains usage mistakes with exit code 2 and the command\'s usage', () => {
    const missing = runCli(['teams', 'create'], env);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^--name is required\n\nUsage:\n\n {2}teams create --name <name>/);
    const unknown = runCli(['frobnicate'], env);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('Unknown command: frobnicate');
    const stray = runCli(['teams', 'get', 'team_x', '--project', 'prj_x'], env);
    expect(stray.status).toBe(2);
    expect(stray.stderr).toContain('teams get does not take --project');
    const badOption = runCli(['teams', 'get', '--colour'], env);
    expect(badOption.status).toBe(2);
    expect(badOption.stderr).toContain("Unknown option '--colour'");
    expect(runCli(['--help'], env).stdout).toContain('Usage: punctual');
    expect(runCli([], env).status).toBe(2);
    const jobsHelp = runCli(['jobs', '--help'], env);
    expect(jobsHelp.status).toBe(0);
    expect(jobsHelp.stdout.split('\n').filter((line) => line.startsWith('  jobs '))).toHaveLength(6);
  });

  it('refuses to start with a PUNCTUAL_SECRET_KEY other than the one the database was set up with', () => {
    const result = runCli(['usage', '--team', 'x'], { ...env, PUNCTUAL_SECRET_KEY: 'a-different-secret-key-0123456789abcdef' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/Configuration error: PUNCTUAL_SECRET_KEY is not the key this database's webhook secrets were encrypted with/);
  });

  it('refuses a bad PUNCTUAL_PLANS file at start with exit code 1', () => {
    const result = runCli(['usage', '--team', 'x'], { ...env, PUNCTUAL_PLANS: join(dir.path, 'missing.json') });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/Configuration error: PUNCTUAL_PLANS: cannot read/);
  });
});
