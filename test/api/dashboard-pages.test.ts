import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/clock.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function signIn(t: TestApp<Clock>, email: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const form = new URLSearchParams({ email, password }).toString();
  const login = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form });
  expect(login.statusCode).toBe(303);
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } })).body)![1]!;
  return { cookie, csrf };
}

/** Dashboard pages through app.inject, on both stores: filters, validation shown beside fields. */
describe('dashboard pages', () => {
  let t: TestApp;
  let p: TestProject;
  let cookie: string;
  let csrf: string;
  const jobIds: string[] = [];

  beforeAll(async () => {
    // Private webhooks refused, as in production, so the URL check has something to refuse.
    t = await makeTestApp({ allowPrivateWebhooks: false });
    p = await t.makeProject({ webhookUrl: 'https://93.184.216.34/hook' });
    await t.services.users.create({ email: 'pages@example.com', password: 'pages password 1', teamIds: [p.teamId], operator: false });
    ({ cookie, csrf } = await signIn(t, 'pages@example.com', 'pages password 1'));
    // Three jobs an hour apart: 00:00, 01:00, 02:00 on 2027-01-01 (the test clock).
    for (let i = 0; i < 3; i += 1) {
      const response = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: i }, scheduledFor: '2027-06-01T00:00:00Z' } });
      jobIds.push(response.json().jobId);
      t.clock.advance(3_600_000);
    }
  });
  afterAll(() => t.close());

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
  const post = (url: string, fields: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
  const listed = (body: string) => jobIds.filter((id) => body.includes(`/jobs/${id}"`));

  it('filters jobs by creation time (UTC) and status, and goes straight to a job by id', async () => {
    const base = `/projects/${p.projectId}/jobs`;
    expect(listed((await get(base)).body)).toEqual(jobIds);
    expect(listed((await get(`${base}?from=2027-01-01T01:00&to=2027-01-01T02:00`)).body)).toEqual([jobIds[1]]);
    expect(listed((await get(`${base}?from=2027-01-01T00:30`)).body)).toEqual([jobIds[1], jobIds[2]]);
    expect(listed((await get(`${base}?status=CANCELLED`)).body)).toEqual([]);
    const byId = await get(`${base}?jobId=${jobIds[0]}`);
    expect(byId.statusCode).toBe(303);
    expect(byId.headers.location).toBe(`${base}/${jobIds[0]}`);
    expect((await get(`${base}?jobId=job_nothere0000000000`)).body).toContain('No job job_nothere0000000000 in this project.');
    const bad = await get(`${base}?from=yesterday`);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('from must be a date and time, e.g. 2027-01-05T09:30');
  });

  it('pages through jobs with the API cursor', async () => {
    // 25 per page: make enough for a second page.
    for (let i = 0; i < 24; i += 1) await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { more: i } } });
    const first = await get(`/projects/${p.projectId}/jobs`);
    const next = /href="([^"]+cursor=[^"]+)" rel="next"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    const second = await get(next);
    expect(listed(second.body)).toEqual([jobIds[0], jobIds[1]]);
    expect(second.body).not.toContain('rel="next"');
  });

  it('shows the service\'s refusal next to the field: a private webhook URL, an empty key name', async () => {
    const url = await t.app.inject({
      method: 'POST',
      url: `/projects/${p.projectId}/webhook`,
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ _csrf: csrf, webhookUrl: 'http://127.0.0.1:8080/hook' }).toString(),
    });
    expect(url.statusCode).toBe(400);
    expect(url.body).toMatch(/id="f-webhookUrl-error">webhookUrl [^<]*private/);
    expect(url.body).toContain('value="http://127.0.0.1:8080/hook"');
    expect((await t.services.manage.getProject(p.projectId)).webhookUrl).toBe('https://93.184.216.34/hook');
    const key = await t.app.inject({
      method: 'POST',
      url: `/projects/${p.projectId}/keys`,
      headers: { ...FORM, cookie },
      payload: new URLSearchParams({ _csrf: csrf, name: '  ' }).toString(),
    });
    expect(key.statusCode).toBe(400);
    expect(key.body).toContain('id="f-name-error">name must be a non-empty string of at most 200 characters');
  });

  it('refuses to cancel a job that is no longer QUEUED, saying why', async () => {
    const cancel = () =>
      t.app.inject({
        method: 'POST',
        url: `/projects/${p.projectId}/jobs/${jobIds[2]}/cancel`,
        headers: { ...FORM, cookie },
        payload: new URLSearchParams({ _csrf: csrf }).toString(),
      });
    expect((await cancel()).statusCode).toBe(303);
    const again = await cancel();
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain('Only a QUEUED job can be changed or cancelled; this one is CANCELLED');
  });

  it('revokes a key, after which the API answers 401 to it', async () => {
    const created = await post(`/projects/${p.projectId}/keys`, { name: 'to revoke' });
    expect(created.statusCode).toBe(201);
    const key = /<code id="new-key" class="secret">(pk_[A-Za-z0-9]+)<\/code>/.exec(created.body)![1]!;
    expect((await t.api(key, { method: 'GET', url: `/api/jobs/${jobIds[0]}` })).statusCode).toBe(200);
    const keyId = (await t.services.manage.listKeys(p.projectId)).keys.find((k) => k.name === 'to revoke')!.keyId;
    expect(created.body).toContain(`action="/projects/${p.projectId}/keys/${keyId}/revoke"`);
    const revoked = await post(`/projects/${p.projectId}/keys/${keyId}/revoke`);
    expect(revoked.statusCode).toBe(303);
    expect(revoked.headers.location).toBe(`/projects/${p.projectId}?done=key-revoked`);
    const refused = await t.api(key, { method: 'GET', url: `/api/jobs/${jobIds[0]}` });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toBe('UNAUTHORIZED');
    const page = await get(revoked.headers.location as string);
    expect(page.body).toContain('The key is revoked: requests with it now answer 401.');
    expect(page.body).toMatch(/<td data-label="Name">to revoke<\/td>[^]*?<span class="badge badge-cancelled">revoked<\/span>/);
  });

  it('reschedules a queued job to a time typed as UTC', async () => {
    const url = `/projects/${p.projectId}/jobs/${jobIds[1]}`;
    const done = await post(`${url}/reschedule`, { scheduledFor: '2027-07-04T09:30' });
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe(`${url}?done=rescheduled`);
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobIds[1]}` })).json()).toMatchObject({ status: 'QUEUED', scheduledFor: '2027-07-04T09:30:00.000Z' });
    const page = await get(done.headers.location as string);
    expect(page.body).toContain('Job rescheduled.');
    expect(page.body).toContain('<time datetime="2027-07-04T09:30:00.000Z">');
  });

  it('saves a valid webhook URL', async () => {
    const saved = await post(`/projects/${p.projectId}/webhook`, { webhookUrl: ' https://93.184.216.34/new-hook ' });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`/projects/${p.projectId}/webhook?done=url-saved`);
    expect((await t.services.manage.getProject(p.projectId)).webhookUrl).toBe('https://93.184.216.34/new-hook');
    expect((await get(saved.headers.location as string)).body).toContain('value="https://93.184.216.34/new-hook"');
  });

  it('saves accept-any-2xx, the timeout and the concurrency, and clears accept-any-2xx when unchecked', async () => {
    const retry = { 'retryPolicy.maxRetries': '', 'retryPolicy.initialDelayMs': '30000', 'retryPolicy.factor': '4', 'retryPolicy.maxDelayMs': '3600000' };
    const url = `/projects/${p.projectId}/settings`;
    const saved = await post(url, { ...retry, deliveryTimeoutMs: '5000', deliveryConcurrency: '7', acceptAny2xx: 'true' });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`${url}?done=settings-saved`);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ deliveryTimeoutMs: 5000, deliveryConcurrency: 7, acceptAny2xx: true });
    const page = (await get(url)).body;
    expect(page).toMatch(/name="deliveryTimeoutMs"[^>]*value="5000"|value="5000"[^>]*name="deliveryTimeoutMs"/);
    expect(page).toMatch(/name="deliveryConcurrency"[^>]*value="7"|value="7"[^>]*name="deliveryConcurrency"/);
    expect(page).toMatch(/<input[^>]*name="acceptAny2xx"[^>]*checked/);
    expect((await post(url, { ...retry, deliveryTimeoutMs: '5000', deliveryConcurrency: '7' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).acceptAny2xx).toBe(false);
  });

  it("lists a project's schedules with their next five runs and last job, pauses, resumes, runs now and deletes them; the job links back", async () => {
    const created = await t.api(p.key, {
      method: 'POST',
      url: '/api/schedules',
      payload: { name: 'nightly report', cron: '30 2 * * *', timezone: 'Europe/Paris', payload: { r: 1 } },
    });
    expect(created.statusCode).toBe(201);
    const { scheduleId } = created.json() as { scheduleId: string };
    const base = `/projects/${p.projectId}/schedules`;
    const page = (await get(base)).body;
    expect(page).toContain('nightly report');
    expect(page).toContain('Europe/Paris');
    // The next five runs: 02:30 in Paris (01:30 UTC in winter) from 2027-01-02 on (the clock is at 2027-01-01T03:00Z).
    for (const day of ['02', '03', '04', '05', '06']) expect(page).toContain(`2027-01-${day}T01:30:00.000Z`);
    expect(page).not.toContain('2027-01-07T01:30:00.000Z');
    expect((await post(`${base}/${scheduleId}/pause`)).headers.location).toBe(`${base}?done=schedule-pause`);
    expect((await t.services.schedules.get(await t.services.schedules.projectContext(p.projectId), scheduleId)).paused).toBe(true);
    expect((await get(`${base}?done=schedule-pause`)).body).toContain('Schedule paused');
    expect((await post(`${base}/${scheduleId}/resume`)).statusCode).toBe(303);
    expect((await post(`${base}/${scheduleId}/trigger`)).statusCode).toBe(303);
    const jobs = (await t.api(p.key, { method: 'GET', url: '/api/jobs?limit=100' })).json().jobs as { jobId: string; scheduleId?: string }[];
    const triggered = jobs.find((job) => job.scheduleId === scheduleId)!;
    expect(triggered).toBeDefined();
    expect((await get(`/projects/${p.projectId}/jobs/${triggered.jobId}`)).body).toContain(`href="${base}#${scheduleId}"`);
    expect((await post(`${base}/${scheduleId}/delete`)).statusCode).toBe(303);
    expect((await get(base)).body).not.toContain('nightly report');
    expect((await t.store.jobGet({ projectId: p.projectId, jobId: triggered.jobId }))!.status).toBe('CANCELLED');
  });

  it("saves the project's retention, shows the server's default when it is empty, and refuses one out of range", async () => {
    const fields = { 'retryPolicy.maxRetries': '', 'retryPolicy.initialDelayMs': '30000', 'retryPolicy.factor': '4', 'retryPolicy.maxDelayMs': '3600000', deliveryTimeoutMs: '5000', deliveryConcurrency: '7' };
    const url = `/projects/${p.projectId}/settings`;
    expect((await post(url, { ...fields, retentionDays: '14' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).retentionDays).toBe(14);
    expect((await get(url)).body).toMatch(/name="retentionDays"[^>]*value="14"|value="14"[^>]*name="retentionDays"/);
    const refused = await post(url, { ...fields, retentionDays: '0' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('retentionDays must be an integer from 1 to 3650');
    expect((await t.services.manage.getProject(p.projectId)).retentionDays).toBe(14);
    expect((await post(url, { ...fields, retentionDays: '' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).retentionDays).toBeNull();
    expect((await get(url)).body).toContain("Empty means the server&#39;s default (30 days)");
  });

  // PostgreSQL refuses U+0000 in a query parameter where SQLite finds nothing: both must answer as for any unknown or invalid value.
  it('answers U+0000 in a filter or a form field as an unknown or invalid value, not a failure', async () => {
    const jobs = `/projects/${p.projectId}/jobs`;
    for (const query of ['jobId=job_%00', 'cursor=%00', 'status=QUEUED%00', 'jobId=job_1&jobId=job_%00']) {
      const response = await get(`${jobs}?${query}`);
      expect(response.statusCode, query).toBe(404);
      expect(response.body).toContain('Not found');
    }
    const keysBefore = (await t.services.manage.listKeys(p.projectId)).keys.length;
    const projectBefore = await t.services.manage.getProject(p.projectId);
    for (const [url, fields] of [
      [`/projects/${p.projectId}/keys`, { name: 'a\u0000b' }],
      [`/projects/${p.projectId}/webhook`, { webhookUrl: 'https://exa\u0000mple.com/hook' }],
      [`/projects/${p.projectId}/jobs/${jobIds[0]}/reschedule`, { scheduledFor: '2027-07-04T09:30\u0000' }],
      [`/teams/${p.teamId}/projects`, { name: 'nul\u0000project' }],
    ] as const) {
      const response = await post(url, fields);
      expect(response.statusCode, url).toBe(400);
      expect(response.body).toContain('A form field holds the character U+0000, which no field accepts');
    }
    expect((await t.services.manage.listKeys(p.projectId)).keys).toHaveLength(keysBefore);
    expect(await t.services.manage.getProject(p.projectId)).toEqual(projectBefore);
    expect((await t.services.manage.listProjects(p.teamId)).projects).toHaveLength(1);
  });
});

/**
 * Pages over real deliveries (the delivery engine, the real clock and a real receiver), on both
 * stores: what a payload and a receiver's answer look like on the job page, and every form of one
 * team tried by a user of another.
 */
describe('dashboard pages over real deliveries', () => {
  let t: TestApp<Clock>;
  let receiver: TestReceiver;
  let victim: TestProject;
  let intruderProject: TestProject;
  let owner: { cookie: string; csrf: string };
  let intruder: { cookie: string; csrf: string };
  let queuedJobId: string;
  let failedJobId: string;
  let victimKeyId: string;
  const PASSWORD = 'pages password 2';

  async function dispatch(project: TestProject, body: Record<string, unknown>): Promise<string> {
    const response = await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body });
    expect(response.statusCode).toBe(201);
    return response.json().jobId;
  }

  async function statusOf(jobId: string): Promise<string | undefined> {
    return (await t.store.jobGet({ projectId: victim.projectId, jobId }))?.status;
  }

  /** Polls the job's row to a deadline (expect.poll cannot run in beforeAll). */
  async function waitForStatus(jobId: string, status: string): Promise<void> {
    await eventually(() => statusOf(jobId), { what: `${jobId} ${status}`, until: (now) => now === status, everyMs: 20 });
  }

  beforeAll(async () => {
    t = await makeTestApp({ clock: systemClock, delivery: true });
    receiver = await new TestReceiver().start();
    receiver.answer((request) => {
      const payload = request.json.payload as { answer?: string; fail?: boolean } | undefined;
      return payload?.fail ? { status: 500, body: 'no' } : { status: 200, body: payload?.answer ?? 'ok' };
    });
    victim = await t.makeProject({ webhookUrl: receiver.url });
    intruderProject = await t.makeProject({ webhookUrl: receiver.url });
    await t.services.users.create({ email: 'owner@example.com', password: PASSWORD, teamIds: [victim.teamId], operator: false });
    await t.services.users.create({ email: 'intruder@example.com', password: PASSWORD, teamIds: [intruderProject.teamId], operator: false });
    owner = await signIn(t, 'owner@example.com', PASSWORD);
    intruder = await signIn(t, 'intruder@example.com', PASSWORD);
    queuedJobId = await dispatch(victim, { payload: { later: true }, scheduledFor: new Date(Date.now() + 30 * 86_400_000).toISOString() });
    failedJobId = await dispatch(victim, { payload: { fail: true }, maxRetries: 0 });
    await waitForStatus(failedJobId, 'FAILED');
    victimKeyId = (await t.services.manage.listKeys(victim.projectId)).keys[0]!.keyId;
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it("refuses another team's user every schedule action with the page of an unknown schedule, changing nothing", async () => {
    const created = await t.api(victim.key, { method: 'POST', url: '/api/schedules', payload: { cron: '0 0 1 1 *', payload: { yearly: true } } });
    const { scheduleId } = created.json() as { scheduleId: string };
    const before = await t.store.scheduleGet({ projectId: victim.projectId, scheduleId });
    const post = (url: string, who: { cookie: string; csrf: string }) =>
      t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: who.cookie }, payload: new URLSearchParams({ _csrf: who.csrf }).toString() });
    for (const action of ['pause', 'resume', 'trigger', 'delete']) {
      const refused = await post(`/projects/${victim.projectId}/schedules/${scheduleId}/${action}`, intruder);
      const absent = await post(`/projects/prj_doesnotexist0000/schedules/${scheduleId}/${action}`, intruder);
      expect(refused.statusCode, action).toBe(404);
      expect(refused.body).toBe(absent.body);
      // Their own project, the victim's schedule: not found either.
      expect((await post(`/projects/${intruderProject.projectId}/schedules/${scheduleId}/${action}`, intruder)).statusCode).toBe(404);
    }
    const page = await t.app.inject({ method: 'GET', url: `/projects/${victim.projectId}/schedules`, headers: { cookie: intruder.cookie } });
    expect(page.statusCode).toBe(404);
    expect(await t.store.scheduleGet({ projectId: victim.projectId, scheduleId })).toEqual(before);
  });

  it('shows a payload and a response body holding <script> as text on the job page', async () => {
    const jobId = await dispatch(victim, { payload: { note: '<script>alert(1)</script>', answer: '<script>alert(2)</script>' } });
    await waitForStatus(jobId, 'COMPLETED');
    const page = await t.app.inject({ method: 'GET', url: `/projects/${victim.projectId}/jobs/${jobId}`, headers: { cookie: owner.cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('<script>alert');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.body).toMatch(/<tr class="attempt">[^]*&lt;script&gt;alert\(2\)&lt;\/script&gt;[^]*<\/tr>/);
  });

  it("answers every form of another team's project with the 404 of an unknown id, and changes nothing", async () => {
    const unknown = { teamId: 'team_unknown0000000000', projectId: 'prj_unknown0000000000', jobId: 'job_unknown00000000000000000000', keyId: 'key_unknown0000000000' };
    const theirs = { teamId: victim.teamId, projectId: victim.projectId, queuedJobId, failedJobId, keyId: victimKeyId };
    const settings = { 'retryPolicy.initialDelayMs': '1', 'retryPolicy.factor': '1', 'retryPolicy.maxDelayMs': '1', deliveryTimeoutMs: '1000', deliveryConcurrency: '1', acceptAny2xx: 'true' };
    type Ids = { teamId: string; projectId: string; queuedJobId: string; failedJobId: string; keyId: string };
    const forms = (ids: Ids): [string, Record<string, string>][] => [
      [`/projects/${ids.projectId}/jobs/${ids.queuedJobId}/cancel`, {}],
      [`/projects/${ids.projectId}/jobs/${ids.queuedJobId}/reschedule`, { scheduledFor: '2099-02-01T00:00' }],
      [`/projects/${ids.projectId}/jobs/${ids.failedJobId}/retry`, {}],
      [`/projects/${ids.projectId}/keys`, { name: 'intruder' }],
      [`/projects/${ids.projectId}/keys/${ids.keyId}/revoke`, {}],
      [`/projects/${ids.projectId}/settings`, settings],
      [`/projects/${ids.projectId}/webhook`, { webhookUrl: 'https://93.184.216.34/stolen' }],
      [`/projects/${ids.projectId}/webhook/reveal`, {}],
      [`/projects/${ids.projectId}/webhook/rotate`, {}],
      [`/projects/${ids.projectId}/webhook/test`, {}],
      [`/teams/${ids.teamId}/projects`, { name: 'intruder', webhookUrl: 'https://93.184.216.34/stolen' }],
    ];
    // Their job or key under the intruder's own project, beside an unknown one there.
    const mixed = (ids: Pick<Ids, 'queuedJobId' | 'failedJobId' | 'keyId'>) =>
      forms({ teamId: intruderProject.teamId, projectId: intruderProject.projectId, ...ids }).filter(([url]) => /\/(jobs|keys)\/[^/]+\//.test(url));

    const snapshot = async () => ({
      project: await t.services.manage.getProject(victim.projectId),
      keys: await t.services.manage.listKeys(victim.projectId),
      secrets: await t.services.manage.listWebhookSecrets(victim.projectId),
      projects: await t.services.manage.listProjects(victim.teamId),
      queued: await t.store.jobGet({ projectId: victim.projectId, jobId: queuedJobId }),
      failed: await t.store.jobGet({ projectId: victim.projectId, jobId: failedJobId }),
      delivered: receiver.requests.length,
    });
    const before = await snapshot();
    const post = (url: string, fields: Record<string, string>) =>
      t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: intruder.cookie }, payload: new URLSearchParams({ _csrf: intruder.csrf, ...fields }).toString() });

    const pairs = [
      ...forms(theirs).map((form, i) => [form, forms({ ...unknown, queuedJobId: unknown.jobId, failedJobId: unknown.jobId })[i]!] as const),
      ...mixed(theirs).map((form, i) => [form, mixed({ queuedJobId: unknown.jobId, failedJobId: unknown.jobId, keyId: unknown.keyId })[i]!] as const),
    ];
    expect(pairs).toHaveLength(11 + 4);
    for (const [[url, fields], [unknownUrl, sameFields]] of pairs) {
      const refused = await post(url, fields);
      const absent = await post(unknownUrl, sameFields);
      expect(refused.statusCode, url).toBe(404);
      expect(refused.body, url).toBe(absent.body);
      expect(refused.body).not.toContain('whsec_');
    }
    // A test delivery or a retry would have reached the receiver by now if either had been let through.
    expect(await snapshot()).toEqual(before);
    expect(await statusOf(failedJobId)).toBe('FAILED');
  });
});
