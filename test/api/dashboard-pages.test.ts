import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

/** Dashboard pages through app.inject, on both stores: filters, validation shown beside fields. */
describe('dashboard pages', () => {
  let t: TestApp;
  let p: TestProject;
  let cookie: string;
  let csrf: string;
  const jobIds: string[] = [];
  const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

  beforeAll(async () => {
    // Private webhooks refused, as in production, so the URL check has something to refuse.
    t = await makeTestApp({ allowPrivateWebhooks: false });
    p = await t.makeProject({ webhookUrl: 'https://93.184.216.34/hook' });
    await t.services.users.create({ email: 'pages@example.com', password: 'pages password 1', teamIds: [p.teamId], operator: false });
    const login = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: 'email=pages%40example.com&password=pages+password+1' });
    cookie = String(login.headers['set-cookie']).split(';')[0]!;
    csrf = /name="_csrf" value="([^"]+)"/.exec((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } })).body)![1]!;
    // Three jobs an hour apart: 00:00, 01:00, 02:00 on 2027-01-01 (the test clock).
    for (let i = 0; i < 3; i += 1) {
      const response = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: i }, scheduledFor: '2027-06-01T00:00:00Z' } });
      jobIds.push(response.json().jobId);
      t.clock.advance(3_600_000);
    }
  });
  afterAll(() => t.close());

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
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
});
