import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { openSnapshotter, type DatabaseSnapshotter } from '../support/database-snapshot.js';
import { setJobState } from '../support/job-fixtures.js';
import { ADMIN_TOKEN, makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Every job endpoint that takes a job id, with a body it would accept from the job's own key. */
const JOB_ID_CALLS: { method: Method; path: (jobId: string) => string; payload?: unknown }[] = [
  { method: 'GET', path: (id) => `/api/jobs/${id}` },
  { method: 'DELETE', path: (id) => `/api/jobs/${id}` },
  { method: 'PATCH', path: (id) => `/api/jobs/${id}`, payload: { scheduledFor: null } },
  { method: 'GET', path: (id) => `/api/jobs/${id}/attempts` },
  { method: 'POST', path: (id) => `/api/jobs/${id}/retry` },
  { method: 'POST', path: (id) => `/api/jobs/${id}/attempts/att_0000000000000000000000000000/result`, payload: { outcome: 'success' } },
];

/**
 * SPEC section 1 and 2: a key never sees another project's jobs (404, exactly as a job that does
 * not exist), a revoked key and the admin token are refused under /api/ (401 first, whatever the
 * path), and an API key is refused on the management API. Nothing refused changes anything.
 */
describe(`tenant isolation (${TEST_STORE})`, () => {
  let t: TestApp;
  let mine: TestProject;
  let sameTeam: TestProject;
  let otherTeam: TestProject;
  let revokedKey: string;
  let queuedJob: string;
  let failedJob: string;
  let snapshotter: DatabaseSnapshotter;

  beforeAll(async () => {
    t = await makeTestApp();
    mine = await t.makeProject();
    const secondProject = await t.services.manage.createProject(mine.teamId, { name: 'second', webhookUrl: 'http://127.0.0.1:9/hook' });
    sameTeam = { ...mine, projectId: secondProject.projectId, key: (await t.services.manage.createKey(secondProject.projectId, { name: 'k' })).key };
    otherTeam = await t.makeProject();
    const revoked = await t.services.manage.createKey(mine.projectId, { name: 'revoked' });
    await t.services.manage.revokeKey(revoked.keyId);
    revokedKey = revoked.key;
    const tags = { order: 'secret-order' };
    queuedJob = (await t.api(mine.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { secret: 1 }, scheduledFor: '2027-06-01T00:00:00Z', tags } })).json().jobId;
    failedJob = (await t.api(mine.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { secret: 2 }, scheduledFor: '2027-06-01T00:00:00Z', tags } })).json().jobId;
    await setJobState(t.databaseUrl, failedJob, { status: 'FAILED', attemptCount: 1, lastError: 'HTTP 500', failedAt: t.clock.now() });
    snapshotter = await openSnapshotter(t.databaseUrl);
  });
  afterAll(async () => {
    await snapshotter.close();
    await t.close();
  });

  const call = (authorization: string | undefined, options: InjectOptions): Promise<LightMyRequestResponse> =>
    t.app.inject({ ...options, headers: { ...(authorization && { authorization }), 'content-type': 'application/json', ...options.headers } });
  /** The same id with its last character changed: same length, same shape, never stored. */
  const unknownLike = (id: string) => id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A');

  it('another project\'s job, in the same team or another, answers exactly as a job that does not exist', async () => {
    const before = await snapshotter.snapshot();
    for (const stranger of [sameTeam, otherTeam]) {
      for (const jobId of [queuedJob, failedJob]) {
        for (const c of JOB_ID_CALLS) {
          const existing = await call(`Bearer ${stranger.key}`, { method: c.method, url: c.path(jobId), payload: c.payload as InjectOptions['payload'] });
          const missing = await call(`Bearer ${stranger.key}`, { method: c.method, url: c.path(unknownLike(jobId)), payload: c.payload as InjectOptions['payload'] });
          expectContractError(existing, 404, 'NOT_FOUND');
          // Same status, same body but for the id itself, same headers but for the request id.
          expect(existing.body.replaceAll(jobId, '<id>')).toBe(missing.body.replaceAll(unknownLike(jobId), '<id>'));
          const headerNames = (res: LightMyRequestResponse) => Object.keys(res.headers).filter((h) => h !== 'x-request-id' && h !== 'date').sort();
          expect(headerNames(existing)).toEqual(headerNames(missing));
        }
      }
      const listed = (await call(`Bearer ${stranger.key}`, { method: 'GET', url: '/api/jobs' })).json().jobs as { jobId: string }[];
      expect(listed.map((j) => j.jobId)).not.toContain(queuedJob);
      // Bulk replay reaches the caller's own project only: the failed job above stays FAILED.
      const replay = await call(`Bearer ${stranger.key}`, { method: 'POST', url: '/api/jobs/retry', payload: { status: 'FAILED', limit: 10_000 } });
      expect(replay.json()).toEqual({ retried: 0, hasMore: false });
      // Nor does the one filter (SPEC section 14): by the owner's tags, status or windows, nothing is seen, counted or changed.
      expect((await call(`Bearer ${stranger.key}`, { method: 'GET', url: '/api/jobs?tag=order:secret-order' })).json().jobs).toEqual([]);
      expect((await call(`Bearer ${stranger.key}`, { method: 'GET', url: '/api/jobs?dueAfter=2027-01-01T00:00:00Z' })).json().jobs).toEqual([]);
      for (const payload of [
        { action: 'cancel', filter: { tags: { order: 'secret-order' } } },
        { action: 'cancel', filter: { status: 'QUEUED' }, dryRun: true },
        { action: 'reschedule', filter: { dueBefore: '2028-01-01T00:00:00Z' }, scheduledFor: null },
        { action: 'retry', filter: { tags: { order: 'secret-order' } } },
        { action: 'retry', filter: { status: 'FAILED' }, limit: 10_000 },
      ]) {
        const bulk = await call(`Bearer ${stranger.key}`, { method: 'POST', url: '/api/jobs/bulk', payload });
        expect(bulk.json(), JSON.stringify(payload)).toEqual({ matched: 0, changed: 0, hasMore: false });
      }
    }
    expect(await snapshotter.snapshot()).toEqual(before);
    // The owner still sees both, unchanged.
    expect((await t.api(mine.key, { method: 'GET', url: `/api/jobs/${queuedJob}` })).json()).toMatchObject({ status: 'QUEUED' });
    expect((await t.api(mine.key, { method: 'GET', url: `/api/jobs/${failedJob}` })).json()).toMatchObject({ status: 'FAILED' });
  });

  it('a revoked key, the admin token and no key at all get 401 on every /api/ endpoint, even for a job that exists', async () => {
    const before = await snapshotter.snapshot();
    const calls: { method: Method; url: string; payload?: unknown }[] = [
      { method: 'POST' as const, url: '/api/jobs/dispatch', payload: { payload: {} } },
      { method: 'POST' as const, url: '/api/jobs/dispatch/batch', payload: { jobs: [{ payload: {} }] } },
      { method: 'GET' as const, url: '/api/jobs' },
      { method: 'POST' as const, url: '/api/jobs/retry', payload: { status: 'FAILED' } },
      { method: 'POST' as const, url: '/api/jobs/bulk', payload: { action: 'cancel', filter: { status: 'QUEUED' } } },
      ...JOB_ID_CALLS.map((c) => ({ method: c.method, url: c.path(queuedJob), payload: c.payload })),
      ...JOB_ID_CALLS.map((c) => ({ method: c.method, url: c.path(unknownLike(queuedJob)), payload: c.payload })),
    ];
    for (const authorization of [`Bearer ${revokedKey}`, `Bearer ${ADMIN_TOKEN}`, undefined, `Bearer ${mine.key.toLowerCase()}`]) {
      const bodies = new Set<string>();
      for (const c of calls) {
        const res = await call(authorization, { method: c.method, url: c.url, payload: c.payload as InjectOptions['payload'] });
        expectContractError(res, 401, 'UNAUTHORIZED');
        bodies.add(res.body);
      }
      // One answer for all of them: nothing tells an existing job from a missing one.
      expect(bodies.size).toBe(1);
    }
    expect(await snapshotter.snapshot()).toEqual(before);
  });

  it('an API key (of any project) gets 401 on every management endpoint, for its own team and project too', async () => {
    const before = await snapshotter.snapshot();
    const routes: [Method, string, unknown?][] = [
      ['POST', '/manage/v1/teams', { name: 'mine now' }],
      ['GET', `/manage/v1/teams/${mine.teamId}`],
      ['PATCH', `/manage/v1/teams/${mine.teamId}`, { plan: 'unlimited' }],
      ['GET', `/manage/v1/teams/${mine.teamId}/projects`],
      ['POST', `/manage/v1/teams/${mine.teamId}/projects`, { name: 'x' }],
      ['GET', `/manage/v1/teams/${mine.teamId}/usage`],
      ['GET', `/manage/v1/projects/${mine.projectId}`],
      ['PATCH', `/manage/v1/projects/${mine.projectId}`, { webhookUrl: 'http://127.0.0.1:1/stolen' }],
      ['GET', `/manage/v1/projects/${mine.projectId}/keys`],
      ['POST', `/manage/v1/projects/${mine.projectId}/keys`, { name: 'backdoor' }],
      ['GET', `/manage/v1/projects/${mine.projectId}/webhook-secrets`],
      ['POST', `/manage/v1/projects/${mine.projectId}/webhook-secret/rotate`],
      ['POST', `/manage/v1/projects/${mine.projectId}/test-delivery`],
      ['PATCH', `/manage/v1/projects/${mine.projectId}`, { paused: true }],
      ['GET', `/manage/v1/projects/${mine.projectId}/events`],
      ['DELETE', '/manage/v1/keys/key_unknown'],
      ['GET', `/manage/v1/teams/${otherTeam.teamId}`],
      ['GET', '/manage/v1/teams/team_unknown'],
    ];
    for (const key of [mine.key, otherTeam.key, revokedKey]) {
      const bodies = new Set<string>();
      for (const [method, url, payload] of routes) {
        const res = await call(`Bearer ${key}`, { method, url, payload: payload as InjectOptions['payload'] });
        expectContractError(res, 401, 'UNAUTHORIZED');
        bodies.add(res.body);
      }
      expect(bodies.size).toBe(1);
    }
    expect(await snapshotter.snapshot()).toEqual(before);
  });

  it("a dashboard session of one team gets, for another team's team, project and key ids, exactly the answers for unknown ids, on every management endpoint", async () => {
    const member = await t.services.users.create({ email: 'member@example.com', password: 'correct horse battery', teamIds: [mine.teamId], operator: false });
    const { token, session } = await t.services.sessions.start(member.userId);
    const theirKeyId = (await t.services.manage.listKeys(otherTeam.projectId)).keys[0]!.keyId;
    const headers = { cookie: `punctual_session=${token}`, 'x-csrf-token': session.csrfToken };
    const routes: [Method, (ids: { team: string; project: string; key: string }) => string, unknown?][] = [
      ['GET', (ids) => `/manage/v1/teams/${ids.team}`],
      ['PATCH', (ids) => `/manage/v1/teams/${ids.team}`, { name: 'taken over' }],
      ['GET', (ids) => `/manage/v1/teams/${ids.team}/projects`],
      ['POST', (ids) => `/manage/v1/teams/${ids.team}/projects`, { name: 'planted' }],
      ['GET', (ids) => `/manage/v1/teams/${ids.team}/usage`],
      ['GET', (ids) => `/manage/v1/projects/${ids.project}`],
      ['PATCH', (ids) => `/manage/v1/projects/${ids.project}`, { webhookUrl: 'http://127.0.0.1:1/stolen' }],
      ['GET', (ids) => `/manage/v1/projects/${ids.project}/keys`],
      ['POST', (ids) => `/manage/v1/projects/${ids.project}/keys`, { name: 'backdoor' }],
      ['GET', (ids) => `/manage/v1/projects/${ids.project}/webhook-secrets`],
      ['POST', (ids) => `/manage/v1/projects/${ids.project}/webhook-secret/rotate`],
      ['POST', (ids) => `/manage/v1/projects/${ids.project}/test-delivery`],
      ['PATCH', (ids) => `/manage/v1/projects/${ids.project}`, { paused: true }],
      ['PATCH', (ids) => `/manage/v1/projects/${ids.project}`, { eventsUrl: 'http://127.0.0.1:1/listening' }],
      ['GET', (ids) => `/manage/v1/projects/${ids.project}/events`],
      ['DELETE', (ids) => `/manage/v1/keys/${ids.key}`],
    ];
    const theirs = { team: otherTeam.teamId, project: otherTeam.projectId, key: theirKeyId };
    const unknown = { team: unknownLike(theirs.team), project: unknownLike(theirs.project), key: unknownLike(theirs.key) };
    const masked = (body: string, ids: typeof theirs) => body.replaceAll(ids.team, '<team>').replaceAll(ids.project, '<project>').replaceAll(ids.key, '<key>');
    const before = await snapshotter.snapshot();
    for (const [method, path, payload] of routes) {
      const existing = await call(undefined, { method, url: path(theirs), headers, payload: payload as InjectOptions['payload'] });
      const missing = await call(undefined, { method, url: path(unknown), headers, payload: payload as InjectOptions['payload'] });
      expectContractError(existing, 404, 'NOT_FOUND');
      expect(masked(existing.body, theirs), `${method} ${path(theirs)}`).toBe(masked(missing.body, unknown));
    }
    expect(await snapshotter.snapshot()).toEqual(before);
    // The same session does reach its own team's project: the refusals above are about the team.
    expect((await call(undefined, { method: 'GET', url: `/manage/v1/projects/${mine.projectId}`, headers })).statusCode).toBe(200);
  });
});
