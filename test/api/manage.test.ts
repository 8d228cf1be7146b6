import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';

describe('/manage/v1', () => {
  let t: TestApp;
  const iso = (ms: number) => new Date(ms).toISOString();
  const post = (url: string, payload?: unknown) => t.admin({ method: 'POST', url, ...(payload !== undefined && { payload: payload as Record<string, unknown> }) });
  const patch = (url: string, payload: unknown) => t.admin({ method: 'PATCH', url, payload: payload as Record<string, unknown> });
  const get = (url: string) => t.admin({ method: 'GET', url });

  beforeAll(async () => {
    t = await makeTestApp();
  });
  afterAll(() => t.close());

  it('creates, reads and changes a team', async () => {
    const created = await post('/manage/v1/teams', { name: 'Acme' });
    expect(created.statusCode).toBe(201);
    const team = created.json();
    expect(team).toEqual({ teamId: expect.stringMatching(/^team_/), name: 'Acme', plan: 'unlimited', createdAt: iso(t.clock.now()) });
    expect((await get(`/manage/v1/teams/${team.teamId}`)).json()).toEqual(team);
    const changed = await patch(`/manage/v1/teams/${team.teamId}`, { plan: 'pro' });
    expect(changed.json()).toEqual({ ...team, plan: 'pro' });
    expect((await patch(`/manage/v1/teams/${team.teamId}`, { plan: 'gold' })).json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'plan' } });
    expect((await post('/manage/v1/teams', { name: '' })).json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'name' } });
    expect((await post('/manage/v1/teams', {})).json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'name' } });
    expect((await get('/manage/v1/teams/team_nope')).statusCode).toBe(404);
  });

  it('refuses names PostgreSQL could not keep as sent (U+0000, lone surrogates) on both stores alike', async () => {
    for (const name of ['a\u0000b', 'x\ud800', '\udfffy']) {
      const res = await post('/manage/v1/teams', { name });
      expect(res.statusCode, JSON.stringify(name)).toBe(400);
      expect(res.json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'name' } });
    }
    expect((await post('/manage/v1/teams', { name: 'emoji 😀 ok' })).statusCode).toBe(201);
  });

  it('answers 404, not 500, for an id holding U+0000 (PostgreSQL refuses it as a parameter)', async () => {
    for (const url of ['/manage/v1/teams/team_%00', '/manage/v1/projects/%00/keys', '/manage/v1/projects/prj_%00']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toMatchObject({ error: 'NOT_FOUND' });
    }
    const project = await t.makeProject();
    const deleted = await t.api(project.key, { method: 'DELETE', url: '/api/jobs/job_%00' });
    expect(deleted.statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: '/api/jobs/job_%00' })).statusCode).toBe(401);
  });

  it('creates a project with a webhook secret, reads it without the secret, and patches it', async () => {
    const team = (await post('/manage/v1/teams', { name: 'Proj', plan: 'free' })).json();
    const created = await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'Shop', webhookUrl: 'https://example.com/hook' });
    expect(created.statusCode).toBe(201);
    const project = created.json();
    expect(project.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(project.webhookSecret.slice(6), 'base64')).toHaveLength(32);
    const { webhookSecret: _secret, ...withoutSecret } = project;
    expect(withoutSecret).toEqual({
      projectId: expect.stringMatching(/^prj_/),
      teamId: team.teamId,
      name: 'Shop',
      webhookUrl: 'https://example.com/hook',
      retryPolicy: { maxRetries: null, initialDelayMs: 30000, factor: 4, maxDelayMs: 3600000, stopOn: [] },
      deliveryTimeoutMs: 30000,
      deliveryConcurrency: 100,
      acceptAny2xx: false,
      paused: false,
      deliveryRatePerSecond: null,
      asyncCompletion: false,
      asyncCompletionTimeoutMs: 3_600_000,
      keyConcurrency: 1,
      eventsUrl: null,
      eventsFormat: 'json',
      retentionDays: null,
      holdOnFailure: false,
      eventTypes: ['job.failed', 'webhook.failing', 'webhook.recovered', 'schedule.skipped', 'webhook.held'],
      health: { state: 'healthy', since: null, consecutiveFailures: 0, nextProbeAt: null },
      createdAt: iso(t.clock.now()),
    });
    expect((await get(`/manage/v1/projects/${project.projectId}`)).json()).toEqual(withoutSecret);
    expect((await get(`/manage/v1/teams/${team.teamId}/projects`)).json()).toEqual({ projects: [withoutSecret] });

    const changed = await patch(`/manage/v1/projects/${project.projectId}`, {
      retryPolicy: { factor: 2, maxRetries: 1 },
      deliveryTimeoutMs: 5000,
      deliveryConcurrency: 7,
      acceptAny2xx: true,
      webhookUrl: null,
      paused: true,
      eventsUrl: 'https://example.com/events',
      eventsFormat: 'slack',
    });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({
      webhookUrl: null,
      retryPolicy: { maxRetries: 1, initialDelayMs: 30000, factor: 2, maxDelayMs: 3600000 },
      deliveryTimeoutMs: 5000,
      deliveryConcurrency: 7,
      acceptAny2xx: true,
      paused: true,
      eventsUrl: 'https://example.com/events',
      eventsFormat: 'slack',
    });
    expect((await get(`/manage/v1/projects/${project.projectId}`)).json()).toEqual(changed.json());
  });

  it.each([
    ['eventsUrl that is not a URL', { eventsUrl: 'not a url' }, 'INVALID_WEBHOOK_URL', 'eventsUrl'],
    ['eventsUrl with a scheme other than http(s)', { eventsUrl: 'ftp://example.com/x' }, 'INVALID_WEBHOOK_URL', 'eventsUrl'],
    ['eventsFormat other than json or slack', { eventsFormat: 'xml' }, 'INVALID_REQUEST', 'eventsFormat'],
    ['paused as a string', { paused: 'true' }, 'INVALID_REQUEST', 'paused'],
  ])('refuses a PATCH with %s, changing nothing', async (_what, body, code, field) => {
    const team = (await post('/manage/v1/teams', { name: 'Bad', plan: 'free' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P' })).json();
    const res = await patch(`/manage/v1/projects/${project.projectId}`, { ...body, deliveryConcurrency: 3 });
    expectContractError(res, 400, code);
    expect(res.json().data.field).toBe(field);
    expect((await get(`/manage/v1/projects/${project.projectId}`)).json()).toMatchObject({ deliveryConcurrency: 100, eventsUrl: null, paused: false });
  });

  it.each([
    [{ retryPolicy: { factor: 0 } }, 'INVALID_REQUEST', 'retryPolicy.factor'],
    [{ retryPolicy: { factor: '2' } }, 'INVALID_REQUEST', 'retryPolicy.factor'],
    [{ retryPolicy: { maxRetries: 2 } }, 'INVALID_REQUEST', 'retryPolicy.maxRetries'], // the free plan caps at 1
    [{ retryPolicy: { initialDelayMs: -1 } }, 'INVALID_REQUEST', 'retryPolicy.initialDelayMs'],
    [{ deliveryTimeoutMs: 999 }, 'INVALID_REQUEST', 'deliveryTimeoutMs'],
    [{ deliveryTimeoutMs: 300001 }, 'INVALID_REQUEST', 'deliveryTimeoutMs'],
    [{ deliveryConcurrency: 0 }, 'INVALID_REQUEST', 'deliveryConcurrency'],
    [{ deliveryConcurrency: 1001 }, 'INVALID_REQUEST', 'deliveryConcurrency'],
    [{ acceptAny2xx: 'yes' }, 'INVALID_REQUEST', 'acceptAny2xx'],
    [{ webhookUrl: 'ftp://example.com/x' }, 'INVALID_WEBHOOK_URL', 'webhookUrl'],
    [{ webhookUrl: '/relative' }, 'INVALID_WEBHOOK_URL', 'webhookUrl'],
    [{ webhookUrl: 42 }, 'INVALID_WEBHOOK_URL', 'webhookUrl'],
  ])('refuses the project change %j as %s naming %s, changing nothing', async (body, code, field) => {
    const team = (await post('/manage/v1/teams', { name: 'V', plan: 'free' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P' })).json();
    const before = (await get(`/manage/v1/projects/${project.projectId}`)).body;
    const res = await patch(`/manage/v1/projects/${project.projectId}`, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: code, data: { field } });
    expect((await get(`/manage/v1/projects/${project.projectId}`)).body).toBe(before);
  });

  it('creates, lists and revokes API keys; revoking twice keeps the first revokedAt', async () => {
    const team = (await post('/manage/v1/teams', { name: 'Keys' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P', webhookUrl: 'http://127.0.0.1:1/x' })).json();
    const created = await post(`/manage/v1/projects/${project.projectId}/keys`, { name: 'production' });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key).toEqual({ keyId: expect.stringMatching(/^key_/), name: 'production', key: expect.stringMatching(/^pk_[A-Za-z0-9]{32,}$/), createdAt: iso(t.clock.now()) });
    const listed = (await get(`/manage/v1/projects/${project.projectId}/keys`)).json();
    expect(listed).toEqual({ keys: [{ keyId: key.keyId, name: 'production', prefix: key.key.slice(0, 11), createdAt: key.createdAt, lastUsedAt: null, revokedAt: null }] });
    expect(JSON.stringify(listed)).not.toContain(key.key);

    await t.api(key.key, { method: 'GET', url: '/api/jobs' });
    // lastUsedAt is written in the background, after the answer: poll for it to a deadline.
    const lastUsedAt = async () => (await get(`/manage/v1/projects/${project.projectId}/keys`)).json().keys[0].lastUsedAt as string | null;
    const deadline = Date.now() + 5_000;
    while ((await lastUsedAt()) === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(await lastUsedAt()).toBe(iso(t.clock.now()));

    const revokedAt = iso(t.clock.now());
    const revoked = await t.admin({ method: 'DELETE', url: `/manage/v1/keys/${key.keyId}` });
    expect(revoked.json()).toEqual({ keyId: key.keyId, revokedAt });
    t.clock.advance(1000);
    expect((await t.admin({ method: 'DELETE', url: `/manage/v1/keys/${key.keyId}` })).json()).toEqual({ keyId: key.keyId, revokedAt });
    expect((await t.api(key.key, { method: 'GET', url: '/api/jobs' })).statusCode).toBe(401);
    expect((await t.admin({ method: 'DELETE', url: '/manage/v1/keys/key_nope' })).statusCode).toBe(404);
  });

  it('rotates webhook secrets with a 24 h overlap, never more than two active', async () => {
    const team = (await post('/manage/v1/teams', { name: 'Secrets' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P' })).json();
    const url = `/manage/v1/projects/${project.projectId}`;
    const start = t.clock.now();
    expect((await get(`${url}/webhook-secrets`)).json()).toEqual({ webhookSecrets: [{ webhookSecret: project.webhookSecret, createdAt: iso(start), expiresAt: null }] });

    t.clock.advance(1000);
    const second = (await post(`${url}/webhook-secret/rotate`)).json().webhookSecret;
    expect(second).toMatch(/^whsec_/);
    expect((await get(`${url}/webhook-secrets`)).json().webhookSecrets).toEqual([
      { webhookSecret: second, createdAt: iso(start + 1000), expiresAt: null },
      { webhookSecret: project.webhookSecret, createdAt: iso(start), expiresAt: iso(start + 1000 + 86_400_000) },
    ]);

    t.clock.advance(1000);
    const third = (await post(`${url}/webhook-secret/rotate`)).json().webhookSecret;
    const active = (await get(`${url}/webhook-secrets`)).json().webhookSecrets;
    expect(active.map((s: { webhookSecret: string }) => s.webhookSecret)).toEqual([third, second]);

    t.clock.advance(86_400_000 + 1);
    expect((await get(`${url}/webhook-secrets`)).json().webhookSecrets.map((s: { webhookSecret: string }) => s.webhookSecret)).toEqual([third]);
  });

  it('stores webhook secrets encrypted, never in clear', async () => {
    const team = (await post('/manage/v1/teams', { name: 'Enc' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P' })).json();
    const rows = await t.store.webhookSecretListActive({ projectId: project.projectId, now: t.clock.now() });
    expect(rows[0]!.ciphertext).not.toContain(project.webhookSecret.slice(6, 20));
    expect(rows[0]!.ciphertext).toMatch(/^v1\./);
  });

  it('reports usage for the current month, day by day', async () => {
    const team = (await post('/manage/v1/teams', { name: 'Usage', plan: 'pro' })).json();
    const project = (await post(`/manage/v1/teams/${team.teamId}/projects`, { name: 'P', webhookUrl: 'http://127.0.0.1:1/x' })).json();
    const key = (await post(`/manage/v1/projects/${project.projectId}/keys`, { name: 'k' })).json().key;
    for (let i = 0; i < 3; i++) await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    const usage = (await get(`/manage/v1/teams/${team.teamId}/usage`)).json();
    const today = iso(t.clock.now()).slice(0, 10);
    expect(usage).toMatchObject({ plan: 'pro', jobsCreated: 3, quota: 100000, rateLimit: { requestsPerSecond: 100, burst: 200 } });
    expect(usage.daily.at(-1)).toEqual({ date: today, jobsCreated: 3 });
    expect(usage.period.start.slice(0, 8)).toBe(today.slice(0, 8));
    expect((await get('/manage/v1/teams/team_nope/usage')).statusCode).toBe(404);
  });
});
