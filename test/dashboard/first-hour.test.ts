import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { FAILING_AFTER } from '../../src/store/event-store.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const PASSWORD = 'first hour password 1';

async function signIn(t: TestApp<Clock>, email: string): Promise<{ cookie: string; csrf: string }> {
  const login = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: new URLSearchParams({ email, password: PASSWORD }).toString() });
  expect(login.statusCode).toBe(303);
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } })).body)![1]!;
  return { cookie, csrf };
}

/**
 * The dashboard of a new user's first hour (issue 30), through app.inject on both stores: what is
 * wrong shows where they land, and the everyday actions need no curl.
 */
describe('dashboard: the first hour', () => {
  let t: TestApp;
  let p: TestProject;
  let cookie: string;
  let csrf: string;
  const T = Date.parse('2027-01-01T00:00:00.000Z');

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie } });
  const post = (url: string, fields: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie }, payload: new URLSearchParams({ _csrf: csrf, ...fields }).toString() });
  const failures = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ failed: true, error: 'HTTP 503: upstream down', at: from + i, eventId: `evt_f${from + i}`, heldEventId: `evt_fh${from + i}` }));

  beforeAll(async () => {
    t = await makeTestApp({ now: T });
    p = await t.makeProject({ webhookUrl: 'https://93.184.216.34/hook' });
    await t.services.users.create({ email: 'first@example.com', password: PASSWORD, teamIds: [p.teamId], operator: false });
    ({ cookie, csrf } = await signIn(t, 'first@example.com'));
  });
  afterAll(() => t.close());

  describe('what is wrong, where people land', () => {
    it("lists each project with its status and its last 24 hours' success rate, and a failing receiver in red", async () => {
      const broken = await t.services.manage.createProject(p.teamId, { name: 'Broken', webhookUrl: 'https://93.184.216.34/down' });
      const quiet = await t.services.manage.createProject(p.teamId, { name: 'Quiet' });
      // Deliveries of the broken project: a job, its attempts as the engine records them, and its run of failures.
      const key = await t.services.manage.createKey(broken.projectId, { name: 'k' });
      const jobId = (await t.api(key.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { n: 1 }, maxRetries: 0 } })).json().jobId as string;
      const { claimRule } = await import('../../src/delivery/capacity-rules.js');
      await t.store.jobClaimDue({ now: T, dueBy: T, limit: 1, workerId: 'wrk_t', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
      await t.store.attemptStart({ jobId, attemptId: 'att_first0000000000000', workerId: 'wrk_t', now: T, leaseExpiresAt: T + 60_000 });
      await t.store.attemptFinish({ jobId, attemptId: 'att_first0000000000000', workerId: 'wrk_t', now: T + 10, result: { outcome: 'http_error', statusCode: 503, durationMs: 10, error: 'HTTP 503: upstream down', responseBody: 'down' }, next: { kind: 'fail' } });
      await t.store.webhookHealthRecord({ projectId: broken.projectId, outcomes: failures(FAILING_AFTER + 2, T) });
      t.clock.set(T + 60_000);

      const list = (await get(`/teams/${p.teamId}`)).body;
      const row = (id: string) => new RegExp(`<tr data-testid="project-${id}">([^]*?)</tr>`).exec(list)![1]!;
      expect(row(broken.projectId)).toContain('<span class="badge badge-failing">failing</span>');
      expect(row(broken.projectId)).toContain('12 attempts in a row failed since <time datetime="2027-01-01T00:00:00.000Z">');
      expect(row(broken.projectId)).toMatch(/<strong class="rate-bad">0%<\/strong>\s*<span class="muted small">of 1 attempt<\/span>/);
      expect(row(quiet.projectId)).toContain('<span class="badge badge-paused">no webhook URL</span>');
      expect(row(quiet.projectId)).toContain('no attempts');
      expect(row(p.projectId)).toContain('no jobs yet');
    });

    it('puts a banner on a failing project\'s overview that says since when, the last error and what to do, and no green "running"', async () => {
      const broken = (await t.services.manage.listProjects(p.teamId)).projects.find((project) => project.name === 'Broken')!;
      const page = (await get(`/projects/${broken.projectId}`)).body;
      expect(page).toContain('data-testid="failing-banner"');
      expect(page).toMatch(/Deliveries are failing<\/h2>\s*<p>The last <strong>12 attempts in a row<\/strong> failed, since <time/);
      expect(page).toContain('The last error: <code>HTTP 503: upstream down</code>.');
      expect(page).toContain(`action="/projects/${broken.projectId}/webhook/test"`);
      expect(page).not.toContain('<span class="badge badge-completed">running</span>');
      expect(page).toContain('running, failing');
      // Healthy again after a success: no banner.
      await t.store.webhookHealthRecord({ projectId: broken.projectId, outcomes: [{ failed: false, error: null, at: T + 70_000, eventId: 'evt_ok', heldEventId: 'evt_okh' }] });
      expect((await get(`/projects/${broken.projectId}`)).body).not.toContain('failing-banner');
      expect((await get(`/teams/${p.teamId}`)).body).not.toContain('badge-failing">failing');
    });
  });

  describe('a held receiver (SPEC section 13)', () => {
    it('shows a held project on the list and its overview, with the next probe and Probe now, which ends the hold', async () => {
      const receiver = await new TestReceiver().start();
      try {
        const held = await t.services.manage.createProject(p.teamId, { name: 'Held', webhookUrl: receiver.url, holdOnFailure: true });
        expect((await t.store.webhookHealthRecord({ projectId: held.projectId, outcomes: failures(FAILING_AFTER, T + 1_000) })).held).toBe(true);
        const list = (await get(`/teams/${p.teamId}`)).body;
        const row = new RegExp(`<tr data-testid="project-${held.projectId}">([^]*?)</tr>`).exec(list)![1]!;
        expect(row).toContain('<span class="badge badge-failing">held</span>');
        expect(row).toContain('next probe <time datetime="2027-01-01T00:00:31.009Z">');
        const page = (await get(`/projects/${held.projectId}`)).body;
        expect(page).toContain('Deliveries are held: the receiver is failing');
        expect(page).toContain('Due jobs wait QUEUED with their retries intact');
        expect(page).toContain(`action="/projects/${held.projectId}/webhook/probe"`);
        expect(page).toContain('data-testid="probe-now"');
        expect((await get(`/projects/${held.projectId}/settings`)).body).toMatch(/name="holdOnFailure" type="checkbox" value="true" checked/);
        // Probe now: answered 200, the hold ends, the banner goes.
        const probed = await post(`/projects/${held.projectId}/webhook/probe`);
        expect(probed.statusCode).toBe(200);
        expect(receiver.requests.map((r) => r.json.probe)).toEqual([true]);
        expect((await t.services.manage.health(held.projectId)).state).toBe('healthy');
        expect((await get(`/projects/${held.projectId}`)).body).not.toContain('failing-banner');
      } finally {
        await receiver.close();
      }
    });
  });

  describe('everyday actions without curl', () => {
    it('shows a schedule in words and its next runs on its own clock before it is saved, then creates it', async () => {
      const form = (await get(`/projects/${p.projectId}/schedules/new`)).body;
      expect(form).toContain('Type a cron expression to see what it does and its next runs.');
      expect(form).toContain('<option value="Europe/Paris"></option>');
      const fields = { cron: '30 2 * * *', timezone: 'europe/paris', name: 'nightly report', payload: '{"report": "nightly"}', maxRetries: '', catchUp: 'latest', overlap: 'skip', tags: 'report:nightly' };
      const preview = await post(`/projects/${p.projectId}/schedules`, { ...fields, intent: 'preview' });
      expect(preview.statusCode).toBe(200);
      expect(preview.body).toContain('<p class="cron-words" data-testid="cron-words"><strong>every day at 02:30, Europe/Paris</strong></p>');
      // 02:30 in Paris, 01:30 UTC in winter, from the day after the clock's 2027-01-01 00:01 UTC.
      expect(preview.body).toContain('<time datetime="2027-01-01T01:30:00.000Z" title="2027-01-01 01:30:00 UTC">Fri, 1 Jan 2027, 02:30 CET</time>');
      expect(preview.body.match(/<li><time datetime=/g)).toHaveLength(5);
      // What was typed stays.
      expect(preview.body).toContain('value="nightly report"');
      // The script's fragment says the same.
      const fragment = await get(`/projects/${p.projectId}/schedules/preview?cron=${encodeURIComponent('*/15 9-17 * * MON-FRI')}&timezone=UTC`);
      expect(fragment.body).toContain('every 15 minutes from 09:00 to 17:59, Monday to Friday, UTC');
      expect((await get(`/projects/${p.projectId}/schedules/preview?cron=${encodeURIComponent('0 0 30 2 *')}&timezone=UTC`)).body).toContain('data-testid="preview-error">cron &quot;0 0 30 2 *&quot; never fires');

      const created = await post(`/projects/${p.projectId}/schedules`, { ...fields, intent: 'create' });
      expect(created.statusCode).toBe(303);
      expect(created.headers.location).toBe(`/projects/${p.projectId}/schedules?done=schedule-created`);
      const ctx = await t.services.schedules.projectContext(p.projectId);
      const [schedule] = (await t.services.schedules.list(ctx, {})).schedules;
      expect(schedule).toMatchObject({ name: 'nightly report', cron: '30 2 * * *', timezone: 'Europe/Paris', overlap: 'skip', payload: { report: 'nightly' }, tags: { report: 'nightly' } });
      const list = (await get(`/projects/${p.projectId}/schedules?done=schedule-created`)).body;
      expect(list).toContain('Schedule created.');
      expect(list).toContain('<span class="cron-words">every day at 02:30, Europe/Paris</span>');
      expect(list).toContain('Fri, 1 Jan 2027, 02:30 CET');
    });

    it('refuses a schedule beside the field at fault, keeping what was typed', async () => {
      const fields = { cron: '61 * * * *', timezone: 'UTC', name: '', payload: '{}', maxRetries: '', catchUp: 'latest', overlap: 'allow', tags: '', intent: 'create' };
      const badCron = await post(`/projects/${p.projectId}/schedules`, fields);
      expect(badCron.statusCode).toBe(400);
      expect(badCron.body).toMatch(/<p class="error" id="f-cron-error">cron &quot;61 \* \* \* \*&quot; is not a valid expression: 61 is outside the minute field&#39;s 0-59<\/p>/);
      expect(badCron.body).toContain('value="61 * * * *"');
      const badJson = await post(`/projects/${p.projectId}/schedules`, { ...fields, cron: '@daily', payload: '{"a": ' });
      expect(badJson.statusCode).toBe(400);
      expect(badJson.body).toMatch(/id="f-payload-error">payload is not valid JSON \(/);
      const badZone = await post(`/projects/${p.projectId}/schedules`, { ...fields, cron: '@daily', timezone: 'Mars/Olympus' });
      expect(badZone.body).toContain('id="f-timezone-error">');
    });

    it('sends a test job from the jobs page and opens its page; a refusal stays in the form', async () => {
      const jobs = `/projects/${p.projectId}/jobs`;
      const page = (await get(jobs)).body;
      expect(page).toContain('Send a test job…');
      expect(page).toContain('{&quot;test&quot;: true}</textarea>');
      const sent = await post(`${jobs}/send`, { payload: '{"hello": "dashboard"}', scheduledFor: '2027-01-05 09:30' });
      expect(sent.statusCode).toBe(303);
      const jobId = /\/jobs\/(job_[^?]+)\?done=test-job-sent$/.exec(sent.headers.location as string)![1]!;
      expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json()).toMatchObject({ status: 'QUEUED', payload: { hello: 'dashboard' }, scheduledFor: '2027-01-05T09:30:00.000Z' });
      expect((await get(sent.headers.location as string)).body).toContain('Test job queued.');

      const notAnObject = await post(`${jobs}/send`, { payload: '[1, 2]', scheduledFor: '' });
      expect(notAnObject.statusCode).toBe(400);
      expect(notAnObject.body).toContain('id="f-send-payload-error">payload must be a JSON object (not an array, string, number, boolean or null)</p>');
      expect(notAnObject.body).toContain('<details class="send-job" open>');
      expect(notAnObject.body).toContain('[1, 2]</textarea>');
      const badTime = await post(`${jobs}/send`, { payload: '{}', scheduledFor: 'tomorrow' });
      expect(badTime.body).toContain('id="f-send-scheduledFor-error">scheduledFor must be a date and time in UTC');
    });

    it('lists jobs with a payload preview, on one line, and their schedule by name', async () => {
      const long = 'x'.repeat(200);
      await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { order: 1042, note: long } } });
      const page = (await get(`/projects/${p.projectId}/jobs`)).body;
      expect(page).toContain('<th scope="col">Payload</th>');
      expect(page).toMatch(/<td data-label="Payload"><code class="one-line payload-preview" title="\{&quot;order&quot;:1042,&quot;note&quot;:&quot;x{200}&quot;\}">\{&quot;order&quot;:1042,&quot;note&quot;:&quot;x+…<\/code><\/td>/);
      expect(page).toMatch(/<select id="f-scheduleId" name="scheduleId"[^>]*>\s*<option value="">Any, or none<\/option>\s*<option value="sch_[^"]+">nightly report \(30 2 \* \* \*\)<\/option>/);
    });

    it('keeps the first curl on the API keys tab, its key masked, with a way to make a new key that fills it in', async () => {
      const keys = `/projects/${p.projectId}/keys`;
      // The project has jobs now: the command is folded away, still there.
      const page = (await get(keys)).body;
      expect(page).toContain('<details class="card first-job" data-testid="first-job"><summary><strong>The curl command that dispatches a job</strong></summary>');
      const prefix = p.key.slice(0, 11);
      expect(page).toContain(`-H &quot;Authorization: Bearer ${prefix}${'•'.repeat(29)}&quot;`);
      expect(page).not.toContain(p.key);
      expect(page).toContain('Make a new key for this command');
      const made = await post(keys, { name: 'curl' });
      expect(made.statusCode).toBe(201);
      const key = /id="new-key" class="secret">(pk_[A-Za-z0-9]+)</.exec(made.body)![1]!;
      expect(made.body).toContain(`<section class="card first-job" aria-labelledby="first-job-title" data-testid="first-job">`);
      expect(made.body).toContain(`-H &quot;Authorization: Bearer ${key}&quot;`);
      expect((await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { hello: 'world' } } })).statusCode).toBe(201);
    });

    it('shows the curl of a project without a webhook URL too, saying what to set first', async () => {
      const bare = await t.services.manage.createProject(p.teamId, { name: 'No URL yet' });
      await t.services.manage.createKey(bare.projectId, { name: 'default' });
      const page = (await get(`/projects/${bare.projectId}/keys`)).body;
      expect(page).toContain('data-testid="curl-needs-webhook"');
      expect(page).toMatch(/<pre id="first-curl" class="code" data-testid="first-curl">curl -X POST [^<]+\/api\/jobs\/dispatch/);
      expect(page).toContain(`href="/projects/${bare.projectId}/webhook">Set the webhook URL</a> first; the command stays here.`);
    });

    it('shows the retry schedule the settings give, in words, and follows the values typed', async () => {
      const settings = `/projects/${p.projectId}/settings`;
      expect((await get(settings)).body).toContain(
        "With 3 retries (the plan&#39;s cap), a failed job is retried after about 30 s, 2 min and 8 min; if the last retry fails too, it is FAILED, about 10 min 30 s after its first attempt.",
      );
      const typed = new URLSearchParams({
        'retryPolicy.maxRetries': '2',
        'retryPolicy.initialDelayMs': '1',
        'retryPolicy.initialDelayMs.unit': 'min',
        'retryPolicy.factor': '10',
        'retryPolicy.maxDelayMs': '5',
        'retryPolicy.maxDelayMs.unit': 'min',
      });
      expect((await get(`${settings}/retry-schedule?${typed}`)).body).toBe(
        'With 2 retries, a failed job is retried after about 1 min and 5 min; if the last retry fails too, it is FAILED, about 6 min after its first attempt.',
      );
      typed.set('retryPolicy.maxRetries', '0');
      expect((await get(`${settings}/retry-schedule?${typed}`)).body).toBe('With 0 retries, a failed attempt is not retried: the job is FAILED at once.');
    });
  });
});
