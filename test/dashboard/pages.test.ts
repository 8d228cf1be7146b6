import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/clock.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';
import { setJobState } from '../support/job-fixtures.js';

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
    // The fields take UTC as people write it: a space, " UTC", a date alone for its midnight, or a timestamp with its own zone.
    expect(listed((await get(`${base}?from=${encodeURIComponent('2027-01-01 01:00')}&to=${encodeURIComponent('2027-01-01 02:00 UTC')}`)).body)).toEqual([jobIds[1]]);
    expect(listed((await get(`${base}?from=${encodeURIComponent('2027-01-01T02:00:00+01:00')}&to=2027-01-01T02:00`)).body)).toEqual([jobIds[1]]);
    expect(listed((await get(`${base}?to=2027-01-02`)).body)).toHaveLength(3);
    expect((await get(`${base}?from=2027-01-01`)).body).toMatch(/id="f-from" name="from" type="text" value="2027-01-01" aria-describedby="f-from-hint" inputmode="numeric" autocomplete="off" placeholder="YYYY-MM-DD HH:MM">/);
    expect(listed((await get(`${base}?status=CANCELLED`)).body)).toEqual([]);
    const byId = await get(`${base}?jobId=${jobIds[0]}`);
    expect(byId.statusCode).toBe(303);
    expect(byId.headers.location).toBe(`${base}/${jobIds[0]}`);
    expect((await get(`${base}?jobId=job_nothere0000000000`)).body).toContain('No job job_nothere0000000000 in this project.');
    const bad = await get(`${base}?from=yesterday`);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('from must be a date and time in UTC, such as 2027-01-05 09:30');
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
    expect(revoked.headers.location).toBe(`/projects/${p.projectId}/keys?done=key-revoked`);
    const refused = await t.api(key, { method: 'GET', url: `/api/jobs/${jobIds[0]}` });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error).toBe('UNAUTHORIZED');
    const page = await get(revoked.headers.location as string);
    expect(page.body).toContain('The key is revoked: requests with it now answer 401.');
    expect(page.body).toMatch(/<td data-label="Name">to revoke<\/td>[^]*?<span class="badge badge-cancelled">revoked<\/span>/);
  });

  it("shows the trace id a job's deliveries continue, and no trace for a job dispatched without one", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traced = await t.api(p.key, {
      method: 'POST',
      url: '/api/jobs/dispatch',
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      payload: { payload: {}, scheduledFor: '2027-06-01T00:00:00Z' },
    });
    const tracedPage = await get(`/projects/${p.projectId}/jobs/${traced.json().jobId}`);
    expect(tracedPage.body).toMatch(new RegExp(`<dt>Trace</dt><dd><code title="[^"]+">${traceId}</code></dd>`));
    const untraced = await get(`/projects/${p.projectId}/jobs/${jobIds[0]}`);
    expect(untraced.statusCode).toBe(200);
    expect(untraced.body).not.toContain('<dt>Trace</dt>');
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
    // A duration is shown in the unit that says it: 5000 ms as 5 seconds.
    expect(page).toMatch(/name="deliveryTimeoutMs" type="number" min="0" step="any" required value="5"[^]*?<option value="s" selected>seconds<\/option>/);
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

  it('saves a delivery rate, clears it when emptied, and refuses one out of range beside the field', async () => {
    const fields = { 'retryPolicy.maxRetries': '', 'retryPolicy.initialDelayMs': '30000', 'retryPolicy.factor': '4', 'retryPolicy.maxDelayMs': '3600000', deliveryTimeoutMs: '5000', deliveryConcurrency: '7' };
    const url = `/projects/${p.projectId}/settings`;
    expect((await post(url, { ...fields, deliveryRatePerSecond: '2.5' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).deliveryRatePerSecond).toBe(2.5);
    expect((await get(url)).body).toMatch(/name="deliveryRatePerSecond"[^>]*value="2.5"|value="2.5"[^>]*name="deliveryRatePerSecond"/);
    const refused = await post(url, { ...fields, deliveryRatePerSecond: '0.01' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('deliveryRatePerSecond must be null (no limit) or a number from 0.1 to 10000');
    expect(refused.body).toMatch(/name="deliveryRatePerSecond"[^>]*value="0.01"|value="0.01"[^>]*name="deliveryRatePerSecond"/);
    expect((await t.services.manage.getProject(p.projectId)).deliveryRatePerSecond).toBe(2.5);
    expect((await post(url, { ...fields, deliveryRatePerSecond: '' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).deliveryRatePerSecond).toBeNull();
  });

  it('saves async completion and its report timeout, refuses a timeout out of range beside its field, and clears async completion when unchecked', async () => {
    const fields = { 'retryPolicy.maxRetries': '', 'retryPolicy.initialDelayMs': '30000', 'retryPolicy.factor': '4', 'retryPolicy.maxDelayMs': '3600000', deliveryTimeoutMs: '5000', deliveryConcurrency: '7' };
    const url = `/projects/${p.projectId}/settings`;
    const before = (await get(url)).body;
    expect(before).toMatch(/<input id="f-asyncCompletion" name="asyncCompletion" type="checkbox" value="true" aria-describedby/);
    expect(before).not.toMatch(/<input[^>]*name="asyncCompletion"[^>]*checked/);
    expect(before).toMatch(/name="asyncCompletionTimeoutMs"[^>]*value="1"[^]*?<option value="h" selected>hours<\/option>/);
    expect(before).toContain('callbackToken');
    expect(before).toContain('1 s to 7 d.');

    const saved = await post(url, { ...fields, asyncCompletion: 'true', asyncCompletionTimeoutMs: '120000' });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`${url}?done=settings-saved`);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ asyncCompletion: true, asyncCompletionTimeoutMs: 120_000 });
    const page = (await get(url)).body;
    expect(page).toMatch(/<input[^>]*name="asyncCompletion"[^>]*checked/);
    expect(page).toMatch(/name="asyncCompletionTimeoutMs"[^>]*value="2"[^]*?<option value="min" selected>minutes<\/option>/);
    // A number in a unit: 3 hours.
    expect((await post(url, { ...fields, asyncCompletion: 'true', asyncCompletionTimeoutMs: '3', 'asyncCompletionTimeoutMs.unit': 'h' })).statusCode).toBe(303);
    expect((await t.services.manage.getProject(p.projectId)).asyncCompletionTimeoutMs).toBe(10_800_000);
    expect((await post(url, { ...fields, asyncCompletion: 'true', asyncCompletionTimeoutMs: '120000' })).statusCode).toBe(303);

    const refused = await post(url, { ...fields, asyncCompletion: 'true', asyncCompletionTimeoutMs: '999' });
    expect(refused.statusCode).toBe(400);
    // Said in the form's terms: its label and its range in words, not the API's milliseconds.
    expect(refused.body).toContain('id="f-asyncCompletionTimeoutMs-error">Wait for a report at most must be from 1 s to 7 d</p>');
    expect(refused.body).toMatch(/name="asyncCompletionTimeoutMs"[^>]*value="999"[^>]*aria-describedby="f-asyncCompletionTimeoutMs-hint f-asyncCompletionTimeoutMs-error" aria-invalid="true"/);
    // What was typed stays, the checkbox included.
    expect(refused.body).toMatch(/<input[^>]*name="asyncCompletion"[^>]*checked/);
    expect((await t.services.manage.getProject(p.projectId)).asyncCompletionTimeoutMs).toBe(120_000);

    // Unchecked, the box sends nothing: off. A form without the timeout leaves it as it was.
    expect((await post(url, fields)).statusCode).toBe(303);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ asyncCompletion: false, asyncCompletionTimeoutMs: 120_000 });
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

  it('pauses deliveries after a confirmation, shows the paused banner on every project tab, and resumes back to the tab it was on', async () => {
    const base = `/projects/${p.projectId}`;
    const running = (await get(base)).body;
    expect(running).toMatch(/<details class="confirm">\s*<summary class="button button-danger">Pause deliveries…<\/summary>[^]*?action="\/projects\/[^"]+\/pause"/);
    expect(running).not.toContain('data-testid="paused-banner"');
    const paused = await post(`${base}/pause`);
    expect(paused.statusCode).toBe(303);
    expect(paused.headers.location).toBe(`${base}?done=project-paused`);
    expect((await t.services.manage.getProject(p.projectId)).paused).toBe(true);
    const overview = (await get(paused.headers.location as string)).body;
    expect(overview).toContain('Deliveries paused. Dispatches are still accepted: the jobs wait, QUEUED, until you resume.');
    expect(overview).not.toContain(`action="${base}/pause"`);
    for (const tab of ['', '/keys', '/webhook', '/settings', '/jobs', '/schedules', '/events']) {
      const page = (await get(`${base}${tab}`)).body;
      expect(page, tab).toMatch(/data-testid="paused-banner">[^]*Deliveries paused[^]*Jobs are accepted and wait, QUEUED/);
      expect(page, tab).toContain(`action="${base}/resume"`);
      expect(page, tab).toContain(`name="back" value="${tab.slice(1) || 'overview'}"`);
    }
    // Dispatches are still accepted while paused.
    expect((await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { paused: true }, scheduledFor: '2027-06-01T00:00:00Z' } })).statusCode).toBe(201);
    const resumed = await post(`${base}/resume`, { back: 'jobs' });
    expect(resumed.statusCode).toBe(303);
    expect(resumed.headers.location).toBe(`${base}/jobs?done=project-resumed`);
    expect((await t.services.manage.getProject(p.projectId)).paused).toBe(false);
    const jobsPage = (await get(resumed.headers.location as string)).body;
    expect(jobsPage).toContain('Deliveries resumed. The jobs that waited go out now, earliest due first.');
    expect(jobsPage).not.toContain('data-testid="paused-banner"');
    // Only a tab's name leads back to it: anything else lands on the overview.
    expect((await post(`${base}/pause`, { back: '//evil.example/x' })).headers.location).toBe(`${base}?done=project-paused`);
    expect((await post(`${base}/resume`, { back: '__proto__' })).headers.location).toBe(`${base}?done=project-resumed`);
    expect((await t.services.manage.getProject(p.projectId)).paused).toBe(false);
  });

  it('saves the Events URL and format, refuses a private URL or an unknown format beside its field, and clears the URL when emptied', async () => {
    const fields = { 'retryPolicy.maxRetries': '', 'retryPolicy.initialDelayMs': '30000', 'retryPolicy.factor': '4', 'retryPolicy.maxDelayMs': '3600000', deliveryTimeoutMs: '5000', deliveryConcurrency: '7' };
    const url = `/projects/${p.projectId}/settings`;
    const blank = (await get(url)).body;
    expect(blank).toMatch(/<label for="f-eventsUrl">Events URL<\/label>/);
    expect(blank).toMatch(/<label for="f-eventsFormat">Events format<\/label>/);
    for (const type of ['job.failed', 'webhook.failing', 'webhook.recovered', 'schedule.skipped']) expect(blank).toContain(`<code>${type}</code>`);
    expect(blank).toContain('signed exactly as deliveries');
    const saved = await post(url, { ...fields, eventsUrl: ' https://93.184.216.34/events ', eventsFormat: 'slack' });
    expect(saved.statusCode).toBe(303);
    expect(saved.headers.location).toBe(`${url}?done=settings-saved`);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ eventsUrl: 'https://93.184.216.34/events', eventsFormat: 'slack' });
    const page = (await get(url)).body;
    expect(page).toMatch(/id="f-eventsUrl" name="eventsUrl" type="url" value="https:\/\/93\.184\.216\.34\/events"/);
    expect(page).toMatch(/<option value="slack" selected>/);

    const refused = await post(url, { ...fields, eventsUrl: 'http://127.0.0.1:8080/events', eventsFormat: 'json' });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(/id="f-eventsUrl-error">eventsUrl [^<]*private/);
    expect(refused.body).toMatch(/id="f-eventsUrl"[^>]*value="http:\/\/127\.0\.0\.1:8080\/events"[^>]*aria-invalid="true"/);
    const format = await post(url, { ...fields, eventsUrl: 'https://93.184.216.34/events', eventsFormat: 'xml' });
    expect(format.statusCode).toBe(400);
    expect(format.body).toContain('id="f-eventsFormat-error">eventsFormat must be one of json, slack');
    expect(format.body).toMatch(/<select id="f-eventsFormat"[^>]*aria-invalid="true"/);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ eventsUrl: 'https://93.184.216.34/events', eventsFormat: 'slack' });

    expect((await post(url, { ...fields, eventsUrl: '  ', eventsFormat: 'json' })).statusCode).toBe(303);
    expect(await t.services.manage.getProject(p.projectId)).toMatchObject({ eventsUrl: null, eventsFormat: 'json' });
  });

  it("lists a project's events newest first with what happened, links to the job and schedule, their delivery state, and pages with the cursor", async () => {
    const { projectId } = await t.services.manage.createProject(p.teamId, { name: 'with events', webhookUrl: 'https://93.184.216.34/hook' });
    const key = (await t.services.manage.createKey(projectId, { name: 'k' })).key;
    const url = `/projects/${projectId}/events`;
    // No Events URL and no event yet: the page says what it lists and how to have them sent.
    const empty = (await get(url)).body;
    expect(empty).toContain('No events yet');
    expect(empty).toContain('listed here as they happen');
    expect(empty).toContain(`href="/projects/${projectId}/settings"`);
    expect(empty).toContain('aria-current="page">Events</a>');
    // An event without an Events URL is listed, not sent (the Events tab is an activity feed).
    const quiet = await t.services.manage.createProject(p.teamId, { name: 'no events URL' });
    expect(await t.store.eventInsert({ id: 'evt_dashnone00000000000', projectId: quiet.projectId, type: 'job.failed', occurredAt: t.clock.now(), data: '{}' })).toBe(true);
    const unsent = (await get(`/projects/${quiet.projectId}/events`)).body;
    expect(unsent).toContain('events are listed here but not sent');
    expect(unsent).toContain('not sent</span>');

    await t.services.manage.updateProject(projectId, { eventsUrl: 'https://93.184.216.34/events' });
    expect((await get(url)).body).toContain('No events yet.');
    const jobId = (await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, scheduledFor: '2027-06-01T00:00:00Z' } })).json().jobId as string;
    const scheduleId = 'sch_dashevents00000000';
    const insert = async (id: string, type: 'job.failed' | 'webhook.failing' | 'webhook.recovered' | 'schedule.skipped', data: Record<string, unknown>) => {
      expect(await t.store.eventInsert({ id, projectId, type, occurredAt: t.clock.now(), data: JSON.stringify(data) })).toBe(true);
      t.clock.advance(1000);
    };
    // 24 older ones, then one of each type: 28 in all, 25 a page.
    const fillers = Array.from({ length: 24 }, (_, i) => `evt_dashfill${String(i).padStart(10, '0')}`);
    for (const id of fillers) await insert(id, 'webhook.recovered', { failingSince: '2027-01-01T00:00:00.000Z' });
    await insert('evt_dashjobfailed00000', 'job.failed', { jobId, attemptCount: 4, lastError: '<b>HTTP 500</b>', scheduleId });
    await insert('evt_dashfailing0000000', 'webhook.failing', { consecutiveFailures: 10, lastError: 'HTTP 503', since: '2027-01-01T01:00:00.000Z' });
    await insert('evt_dashskipped0000000', 'schedule.skipped', { scheduleId, fireAt: '2027-01-01T02:00:00.000Z' });
    await insert('evt_dashrecovered00000', 'webhook.recovered', { failingSince: '2027-01-01T01:00:00.000Z' });

    const first = await get(url);
    expect(first.statusCode).toBe(200);
    const rows = [...first.body.matchAll(/<tr class="event" id="(evt_[^"]+)">/g)].map((m) => m[1]);
    expect(rows).toEqual(['evt_dashrecovered00000', 'evt_dashskipped0000000', 'evt_dashfailing0000000', 'evt_dashjobfailed00000', ...fillers.slice(3).reverse()]);
    const row = (id: string) => new RegExp(`<tr class="event" id="${id}">([^]*?)</tr>`).exec(first.body)![1]!;
    const failed = row('evt_dashjobfailed00000');
    expect(failed).toContain('<strong>job.failed</strong>');
    expect(failed).toContain(`<a href="/projects/${projectId}/jobs/${jobId}"><code>${jobId}</code></a> failed after 4 attempts`);
    expect(failed).toContain('&lt;b&gt;HTTP 500&lt;/b&gt;');
    expect(failed).toContain(`href="/projects/${projectId}/schedules#${scheduleId}"`);
    expect(failed).toContain('<span class="badge badge-pending">PENDING</span>');
    expect(row('evt_dashskipped0000000')).toMatch(new RegExp(`href="/projects/${projectId}/schedules#${scheduleId}">schedule <code>${scheduleId}</code></a> skipped its fire at <time datetime="2027-01-01T02:00:00.000Z">`));
    expect(row('evt_dashfailing0000000')).toContain('10 attempts in a row failed since <time datetime="2027-01-01T01:00:00.000Z">');
    expect(row('evt_dashrecovered00000')).toContain('Deliveries succeed again (failing since <time datetime="2027-01-01T01:00:00.000Z">');
    expect(first.body).toContain('Sent to <code>https://93.184.216.34/events</code> as JSON');

    const next = /href="([^"]+cursor=[^"]+)" rel="next">Older events/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    const second = (await get(next)).body;
    expect([...second.matchAll(/<tr class="event" id="(evt_[^"]+)">/g)].map((m) => m[1])).toEqual(fillers.slice(0, 3).reverse());
    expect(second).not.toContain('rel="next"');
    expect(second).toContain(`href="${url}">← Newest</a>`);
    expect((await get(`${url}?cursor=nonsense`)).statusCode).toBe(400);

    // The URL unset later: the events recorded stay listed, with a note that new ones are not sent.
    await t.services.manage.updateProject(projectId, { eventsUrl: null });
    const unset = (await get(url)).body;
    expect(unset).toContain('No Events URL is set: events are listed here but not sent.');
    expect(unset).toContain('id="evt_dashrecovered00000"');
  });

  it("filters jobs by schedule, and each schedule and a schedule's job link to its jobs", async () => {
    const created = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { name: 'hourly sync', cron: '0 * * * *', payload: { s: 1 } } });
    const { scheduleId } = created.json() as { scheduleId: string };
    const fired: string[] = [];
    for (let i = 0; i < 2; i += 1) fired.push((await t.api(p.key, { method: 'POST', url: `/api/schedules/${scheduleId}/trigger` })).json().jobId);
    await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { plain: true }, scheduledFor: '2027-06-01T00:00:00Z' } });
    const filtered = (await get(`/projects/${p.projectId}/jobs?scheduleId=${scheduleId}`)).body;
    expect([...filtered.matchAll(/<a href="\/projects\/[^/]+\/jobs\/(job_[^"]+)">/g)].map((m) => m[1])).toEqual([...fired].reverse());
    // The schedule is chosen by its name, not a pasted id.
    expect(filtered).toContain(`<option value="${scheduleId}" selected>hourly sync (0 * * * *)</option>`);
    expect(filtered).toContain(`Jobs of <a href="/projects/${p.projectId}/schedules#${scheduleId}">schedule <strong>hourly sync</strong></a>`);
    expect((await get(`/projects/${p.projectId}/jobs?scheduleId=sch_unknown000000000`)).body).toContain('No jobs match these filters.');
    const schedules = (await get(`/projects/${p.projectId}/schedules`)).body;
    expect(schedules).toContain(`href="/projects/${p.projectId}/jobs?scheduleId=${scheduleId}" aria-label="Jobs of hourly sync">Jobs</a>`);
    expect((await get(`/projects/${p.projectId}/jobs/${fired[0]}`)).body).toContain(`href="/projects/${p.projectId}/jobs?scheduleId=${scheduleId}">its jobs</a>`);
    await t.api(p.key, { method: 'DELETE', url: `/api/schedules/${scheduleId}` });
  });

  it('retries all FAILED jobs of the filter after a confirmation that counts them (a dry run), and says how many were queued again', async () => {
    const { projectId } = await t.services.manage.createProject(p.teamId, { name: 'replay', webhookUrl: 'https://93.184.216.34/hook' });
    const key = (await t.services.manage.createKey(projectId, { name: 'k' })).key;
    const jobs = `/projects/${projectId}/jobs`;
    // Four jobs created an hour apart from 2027-01-01T05:00Z (the session, from 00:00, lasts 12 hours); the first three FAILED.
    t.clock.set(Date.UTC(2027, 0, 1, 5));
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      ids.push((await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { i }, scheduledFor: '2027-06-01T00:00:00Z' } })).json().jobId);
      t.clock.advance(3_600_000);
    }
    for (const [i, id] of ids.slice(0, 3).entries()) await setJobState(t.databaseUrl, id, { status: 'FAILED', attemptCount: 1, lastError: 'HTTP 500', failedAt: t.clock.now() + i });
    const status = async (id: string) => (await t.store.jobGet({ projectId, jobId: id }))!.status;

    const all = (await get(`${jobs}?status=FAILED`)).body;
    expect(all).toContain('<summary class="button button-secondary">Retry all failed that match…</summary>');
    expect(all).toContain('Queue again <strong>3 failed jobs</strong> of this project? Each gets a fresh retry budget');
    expect(all).toContain('Retry 3 jobs</button>');
    // Cancel and reschedule act on QUEUED jobs: not offered for a list of FAILED ones.
    expect(all).not.toContain('Cancel all that match…');
    // Any status, no filter: the same offer for the FAILED jobs; nothing that would act on every queued job.
    const unfiltered = (await get(jobs)).body;
    expect(unfiltered).toContain('Queue again <strong>3 failed jobs</strong>');
    expect(unfiltered).not.toContain('Cancel all that match…');
    const window = (await get(`${jobs}?status=FAILED&from=2027-01-01T06:00&to=2027-01-01T08:00`)).body;
    expect(window).toContain(
      'Queue again <strong>2 failed jobs</strong> created between <time datetime="2027-01-01T06:00:00.000Z">2027-01-01 06:00:00 UTC</time> and <time datetime="2027-01-01T08:00:00.000Z">2027-01-01 08:00:00 UTC</time>?',
    );
    // The form carries the list's own filter, which the action reads again.
    expect(window).toMatch(new RegExp(`action="${jobs}/bulk"[^]*name="action" value="retry"[^]*name="filter" value="status=FAILED&amp;from=2027-01-01T06%3A00&amp;to=2027-01-01T08%3A00"`));
    expect((await get(`${jobs}?status=FAILED&to=2027-01-01T06:00`)).body).toContain('Queue again <strong>1 failed job</strong> created before');
    // Nothing to retry, another status, or a schedule none of whose jobs failed: no offer.
    for (const query of ['status=FAILED&from=2027-01-01T09:00', 'status=QUEUED', 'status=FAILED&scheduleId=sch_any0000000000000']) {
      expect((await get(`${jobs}?${query}`)).body, query).not.toContain('Retry all failed that match…');
    }

    // A schedule's filter: only its failed jobs are counted and replayed.
    const schedule = (await t.api(key, { method: 'POST', url: '/api/schedules', payload: { cron: '0 0 1 1 *', payload: {} } })).json().scheduleId as string;
    const fired = (await t.api(key, { method: 'POST', url: `/api/schedules/${schedule}/trigger` })).json().jobId as string;
    await setJobState(t.databaseUrl, fired, { status: 'FAILED', attemptCount: 1, lastError: 'HTTP 500', failedAt: t.clock.now() });
    const ofSchedule = (await get(`${jobs}?status=FAILED&scheduleId=${schedule}`)).body;
    expect(ofSchedule).toContain(`Queue again <strong>1 failed job</strong> made by schedule <code>${schedule}</code>?`);
    expect((await post(`${jobs}/bulk`, { action: 'retry', filter: `scheduleId=${schedule}` })).statusCode).toBe(303);
    expect(await status(fired)).toBe('QUEUED');
    expect(await Promise.all(ids.map(status))).toEqual(['FAILED', 'FAILED', 'FAILED', 'QUEUED']);

    const retried = await post(`${jobs}/bulk`, { action: 'retry', filter: 'from=2027-01-01T06:00&to=2027-01-01T08:00' });
    expect(retried.statusCode).toBe(303);
    expect(retried.headers.location).toBe(`${jobs}?from=2027-01-01T06%3A00&to=2027-01-01T08%3A00&done=failed-retried&count=2`);
    expect(await Promise.all(ids.map(status))).toEqual(['FAILED', 'QUEUED', 'QUEUED', 'QUEUED']);
    const after = (await get(retried.headers.location as string)).body;
    expect(after).toContain('2 failed jobs queued again, each with a fresh retry budget.');
    expect(after).not.toContain('Retry all failed that match…');
    // The count is digits only, or no notice at all.
    for (const count of ['<b>2</b>', '2 hacked', '']) expect((await get(`${jobs}?done=failed-retried&count=${encodeURIComponent(count)}`)).body).not.toContain('queued again');
    // A window that is not a date and time is refused, and nothing is retried.
    const bad = await post(`${jobs}/bulk`, { action: 'retry', filter: 'from=yesterday' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('from must be a date and time');
    expect(await status(ids[0]!)).toBe('FAILED');
    const rest = await post(`${jobs}/bulk`, { action: 'retry' });
    expect(rest.headers.location).toBe(`${jobs}?done=failed-retried&count=1`);
    expect((await get(rest.headers.location as string)).body).toContain('1 failed job queued again');
    expect(await status(ids[0]!)).toBe('QUEUED');
  });

  it("shows a job's concurrencyKey on its page and in the list's Key column, filters by key, and lists the busiest keys on the overview (SPEC section 15)", async () => {
    const { projectId } = await t.services.manage.createProject(p.teamId, { name: 'keys', webhookUrl: 'https://93.184.216.34/hook' });
    const key = (await t.services.manage.createKey(projectId, { name: 'k' })).key;
    const jobs = `/projects/${projectId}/jobs`;
    const dispatch = async (body: Record<string, unknown>) => (await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, scheduledFor: '2028-01-01T00:00:00Z', ...body } })).json().jobId as string;
    const keyed = await dispatch({ concurrencyKey: 'customer-42' });
    const plain = await dispatch({});
    expect((await get(`${jobs}/${keyed}`)).body).toContain('<dt>Concurrency key</dt><dd><code class="concurrency-key">customer-42</code>');
    expect((await get(`${jobs}/${plain}`)).body).not.toContain('Concurrency key');
    const list = (await get(jobs)).body;
    expect(list).toContain('<th scope="col">Key</th>');
    expect(list).toContain('<td data-label="Key"><code class="concurrency-key">customer-42</code></td>');
    expect(list).toContain('<td data-label="Key"></td>');
    // The list's Key field: that key's jobs alone, and the bulk actions on them.
    const other = await dispatch({ concurrencyKey: 'customer-7' });
    expect((await get(`${jobs}/${keyed}`)).body).toContain(`(<a href="${jobs}?concurrencyKey=customer-42">its jobs</a>)`);
    const byKey = (await get(`${jobs}?concurrencyKey=customer-42`)).body;
    expect(byKey).toContain(`/jobs/${keyed}"`);
    expect(byKey).not.toContain(`/jobs/${plain}"`);
    expect(byKey).not.toContain(`/jobs/${other}"`);
    expect(byKey).toContain('id="f-concurrencyKey" name="concurrencyKey" type="search" value="customer-42"');
    expect(byKey).toContain('Cancel <strong>1 queued job</strong> of key <code>customer-42</code>?');
    // The overview's busiest keys: most waiting first, each a link to its jobs.
    await dispatch({ concurrencyKey: 'customer-7' });
    await dispatch({ concurrencyKey: 'customer-7' });
    const overview = (await get(`/projects/${projectId}`)).body;
    const rows = [...overview.matchAll(/<td data-label="Key"><a href="([^"]+)"><code class="concurrency-key">([^<]+)<\/code><\/a><\/td>\s*<td data-label="Waiting">(\d+)<\/td>\s*<td data-label="Running">(\d+)<\/td>/g)];
    expect(rows.map((r) => [r[1], r[2], r[3], r[4]])).toEqual([
      [`${jobs}?concurrencyKey=customer-7`, 'customer-7', '3', '0'],
      [`${jobs}?concurrencyKey=customer-42`, 'customer-42', '1', '0'],
    ]);
    const cancelled = await post(`${jobs}/bulk`, { action: 'cancel', filter: 'concurrencyKey=customer-42' });
    expect(cancelled.headers.location).toBe(`${jobs}?concurrencyKey=customer-42&done=bulk-cancelled&count=1`);
    expect((await t.store.jobGet({ projectId, jobId: keyed }))!.status).toBe('CANCELLED');
    expect((await t.store.jobGet({ projectId, jobId: other }))!.status).toBe('QUEUED');
    expect((await get(`/projects/${projectId}`)).body).not.toContain('customer-42');
    expect((await get(`/projects/${p.projectId}`)).body).not.toContain('Busiest keys');
  });

  it("filters by tag and due window, shows each job's tags, and cancels or reschedules all that match after a dry run's count", async () => {
    const { projectId } = await t.services.manage.createProject(p.teamId, { name: 'tags', webhookUrl: 'https://93.184.216.34/hook' });
    const key = (await t.services.manage.createKey(projectId, { name: 'k' })).key;
    const otherProject = await t.services.manage.createProject(p.teamId, { name: 'tags elsewhere', webhookUrl: 'https://93.184.216.34/hook' });
    const otherKey = (await t.services.manage.createKey(otherProject.projectId, { name: 'k' })).key;
    const jobs = `/projects/${projectId}/jobs`;
    t.clock.set(Date.UTC(2027, 0, 1, 5));
    const dispatch = async (body: Record<string, unknown>, apiKey = key) => (await t.api(apiKey, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, ...body } })).json().jobId as string;
    const a = await dispatch({ tags: { order: '123', env: 'prod' }, scheduledFor: '2027-01-01T09:00:00Z' });
    const b = await dispatch({ tags: { order: '123' }, scheduledFor: '2027-01-01T11:00:00Z' });
    const c = await dispatch({ tags: { order: '456' }, scheduledFor: '2027-01-01T09:30:00Z' });
    const theirs = await dispatch({ tags: { order: '123' }, scheduledFor: '2027-01-01T09:00:00Z' }, otherKey);
    const status = async (id: string, project = projectId) => (await t.store.jobGet({ projectId: project, jobId: id }))!;

    const byTag = (await get(`${jobs}?tag=order:123`)).body;
    expect(byTag).toContain(b);
    expect(byTag).toContain(a);
    expect(byTag).not.toContain(c);
    expect(byTag).toContain('<ul class="tags" aria-label="Tags"><li><code>order:123</code></li><li><code>env:prod</code></li></ul>');
    expect(byTag).toContain('id="f-tag-0" name="tag" type="search" value="order:123"');
    expect(byTag).toContain('Cancel <strong>2 queued jobs</strong> tagged <code>order:123</code>? They will never be delivered.');
    expect(byTag).toContain('Move <strong>2 queued jobs</strong> tagged <code>order:123</code> to a new time?');
    expect((await get(`${jobs}?tag=order:123&tag=env:prod`)).body).toContain('Cancel <strong>1 queued job</strong> tagged <code>order:123</code> and <code>env:prod</code>?');
    const due = (await get(`${jobs}?dueFrom=2027-01-01T09:00&dueTo=2027-01-01T10:00`)).body;
    expect(due).toContain(a);
    expect(due).toContain(c);
    expect(due).not.toContain(b);
    expect(due).toContain('Cancel <strong>2 queued jobs</strong> due between <time datetime="2027-01-01T09:00:00.000Z">');
    const refused = await get(`${jobs}?tag=order`);
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('tag must be &lt;key&gt;:&lt;value&gt;');
    expect((await get(`${jobs}/${a}`)).body).toMatch(new RegExp(`<dt>Tags</dt><dd><ul class="tags"[^]*href="${jobs}\\?tag=order%3A123&amp;tag=env%3Aprod">jobs with the same tags</a>`));

    const moved = await post(`${jobs}/bulk`, { action: 'reschedule', filter: 'tag=order:123', scheduledFor: '2027-01-02T08:00' });
    expect(moved.headers.location).toBe(`${jobs}?tag=order%3A123&done=bulk-rescheduled&count=2`);
    expect((await get(moved.headers.location as string)).body).toContain('2 queued jobs rescheduled.');
    expect(await status(a)).toMatchObject({ status: 'QUEUED', runAt: Date.UTC(2027, 0, 2, 8) });
    const cancelled = await post(`${jobs}/bulk`, { action: 'cancel', filter: 'tag=order:123&tag=env:prod' });
    expect(cancelled.headers.location).toBe(`${jobs}?tag=order%3A123&tag=env%3Aprod&done=bulk-cancelled&count=1`);
    expect((await get(cancelled.headers.location as string)).body).toContain('1 queued job cancelled: it will not be delivered.');
    expect([(await status(a)).status, (await status(b)).status, (await status(c)).status]).toEqual(['CANCELLED', 'QUEUED', 'QUEUED']);
    expect((await status(theirs, otherProject.projectId)).status).toBe('QUEUED');
    // Never every job: a cancel or reschedule with no filter is refused, and changes nothing.
    for (const action of ['cancel', 'reschedule']) {
      const unfiltered = await post(`${jobs}/bulk`, { action, filter: '' });
      expect(unfiltered.statusCode, action).toBe(400);
      expect(unfiltered.body).toContain('Filter the list first');
    }
    expect((await status(b)).status).toBe('QUEUED');
  });

  it('refuses the new forms (pause, resume, retry all failed, events settings) without the CSRF token, changing nothing', async () => {
    const before = await t.services.manage.getProject(p.projectId);
    const failed = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, scheduledFor: '2027-06-01T00:00:00Z' } })).json().jobId as string;
    await setJobState(t.databaseUrl, failed, { status: 'FAILED', attemptCount: 1, lastError: 'HTTP 500', failedAt: t.clock.now() });
    const settings = { 'retryPolicy.initialDelayMs': '1', 'retryPolicy.factor': '1', 'retryPolicy.maxDelayMs': '1', deliveryTimeoutMs: '1000', deliveryConcurrency: '1', eventsUrl: 'https://93.184.216.34/stolen', eventsFormat: 'slack' };
    for (const [url, fields] of [
      [`/projects/${p.projectId}/pause`, {}],
      [`/projects/${p.projectId}/resume`, {}],
      [`/projects/${p.projectId}/jobs/bulk`, { action: 'retry' }],
      [`/projects/${p.projectId}/settings`, settings],
    ] as const) {
      for (const token of [null, 'wrong']) {
        const response = await t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: new URLSearchParams({ ...(token !== null && { _csrf: token }), ...fields }).toString() });
        expect(response.statusCode, url).toBe(403);
        expect(response.body).toContain('This form could not be accepted');
      }
    }
    expect(await t.services.manage.getProject(p.projectId)).toEqual(before);
    expect((await t.store.jobGet({ projectId: p.projectId, jobId: failed }))!.status).toBe('FAILED');
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
      const payload = request.json.payload as { answer?: string; fail?: boolean; accept?: boolean } | undefined;
      if (payload?.accept) return { status: 202, body: 'accepted' };
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

  it("shows a job whose attempt was accepted with 202 as waiting for the receiver's report, until the report ends it", async () => {
    const TIMEOUT = 10 * 60_000;
    const asyncProject = await t.makeProject({ webhookUrl: receiver.url, settings: { asyncCompletion: true, asyncCompletionTimeoutMs: TIMEOUT } });
    await t.services.users.create({ email: 'async@example.com', password: PASSWORD, teamIds: [asyncProject.teamId], operator: false });
    const jobId = await dispatch(asyncProject, { payload: { accept: true } });
    await receiver.waitFor(() => receiver.forJob(jobId).length === 1);
    const { attemptId, callbackToken } = receiver.forJob(jobId)[0]!.json as { attemptId: string; callbackToken: string };
    const accepted = await eventually(async () => (await t.store.attemptListByJob(jobId))[0], { what: 'the 202 recorded', until: (a) => a?.acceptedAt != null });
    const iso = (ms: number) => new Date(ms).toISOString();
    const url = `/projects/${asyncProject.projectId}/jobs/${jobId}`;
    const viewer = await signIn(t, 'async@example.com', PASSWORD);
    const page = async () => (await t.app.inject({ method: 'GET', url, headers: { cookie: viewer.cookie } })).body;
    const notice = (body: string) => /<section class="alert alert-note"[^>]*data-testid="awaiting-report">[^]*?<\/section>/.exec(body)?.[0];

    const waiting = await page();
    expect(waiting).toContain('<span class="badge badge-started">STARTED</span>');
    const box = notice(waiting)!;
    expect(box).toContain("Waiting for the receiver's report");
    expect(box).toContain(`<dt>Accepted</dt><dd><time datetime="${iso(accepted!.acceptedAt!)}">`);
    expect(box).not.toContain('Last report');
    // The deadline the store keeps.
    expect(accepted!.reportBy).toBe(accepted!.acceptedAt! + TIMEOUT);
    expect(box).toContain(`<dt>Times out at</dt><dd><time datetime="${iso(accepted!.reportBy!)}">`);
    // Near the top: before the job's cards.
    expect(waiting.indexOf('data-testid="awaiting-report"')).toBeLessThan(waiting.indexOf('<h2>Schedule</h2>'));
    expect(waiting).toMatch(/<td data-label="Accepted"><time datetime="[^"]+">/);
    expect(waiting).toContain('<td data-label="Outcome"><span class="muted">waiting for the receiver&#39;s report</span>');

    const report = (outcome: string) =>
      t.app.inject({ method: 'POST', url: `/api/jobs/${jobId}/attempts/${attemptId}/result`, headers: { authorization: `Bearer ${callbackToken}` }, payload: { outcome } });
    expect((await report('running')).statusCode).toBe(200);
    const running = (await t.store.attemptListByJob(jobId))[0]!;
    const moved = notice(await page())!;
    expect(moved).toContain(`<dt>Last report</dt><dd><time datetime="${iso(running.reportedAt!)}">`);
    expect(moved).toContain(`<dt>Times out at</dt><dd><time datetime="${iso(running.reportBy!)}">`);

    expect((await report('success')).statusCode).toBe(200);
    const done = await page();
    expect(done).toContain('<span class="badge badge-completed">COMPLETED</span>');
    expect(notice(done)).toBeUndefined();
    expect(done).not.toContain("Waiting for the receiver's report");
    const ended = (await t.store.attemptListByJob(jobId))[0]!;
    expect(done).toMatch(new RegExp(`<td data-label="Reported"><time datetime="${iso(ended.reportedAt!)}">`));
    expect(done).toMatch(/<td data-label="Outcome"><span class="badge badge-completed">success<\/span>/);
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
      [`/projects/${ids.projectId}/pause`, {}],
      [`/projects/${ids.projectId}/resume`, { back: 'jobs' }],
      [`/projects/${ids.projectId}/jobs/bulk`, { action: 'retry' }],
      [`/projects/${ids.projectId}/jobs/bulk`, { action: 'cancel', filter: 'status=QUEUED' }],
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
    expect(pairs).toHaveLength(15 + 4);
    for (const [[url, fields], [unknownUrl, sameFields]] of pairs) {
      const refused = await post(url, fields);
      const absent = await post(unknownUrl, sameFields);
      expect(refused.statusCode, url).toBe(404);
      expect(refused.body, url).toBe(absent.body);
      expect(refused.body).not.toContain('whsec_');
    }
    // Nor are the victim's events or jobs pages shown.
    for (const page of ['events', 'jobs?status=FAILED']) {
      const refused = await t.app.inject({ method: 'GET', url: `/projects/${victim.projectId}/${page}`, headers: { cookie: intruder.cookie } });
      const absent = await t.app.inject({ method: 'GET', url: `/projects/${unknown.projectId}/${page}`, headers: { cookie: intruder.cookie } });
      expect(refused.statusCode, page).toBe(404);
      expect(refused.body).toBe(absent.body);
    }
    // A test delivery or a retry would have reached the receiver by now if either had been let through.
    expect(await snapshot()).toEqual(before);
    expect(await statusOf(failedJobId)).toBe('FAILED');
  });
});
