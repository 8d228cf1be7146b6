import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../src/clock.js';
import { makeTestApp, TEST_STORE, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';
import { freePort } from '../support/spawn-punctual.js';

/**
 * The dashboard end to end: Debian's chromium, driven by playwright-core, against a real Punctual
 * (HTTP on 127.0.0.1, delivery engine running, real clock) and a real webhook receiver. One browser
 * for the file; the steps run in order and share the signed-in page. Each page is saved as a
 * screenshot under test-artifacts/dashboard/ for a person to look at.
 */
const CHROMIUM = process.env.PUNCTUAL_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  if (process.env.CI) throw new Error(`${CHROMIUM} is missing in CI: .ci/run installs the chromium package`);
  console.warn(`\nSKIPPING the dashboard browser tests: ${CHROMIUM} is missing (apt-get install chromium).\n`);
}

// One folder per store: both vitest projects run this file.
const ARTIFACTS = new URL(`../../test-artifacts/dashboard/${TEST_STORE}/`, import.meta.url).pathname;
const EMAIL = 'dev@example.com';
const PASSWORD = 'a sturdy password 42';

describe.runIf(haveChromium)('dashboard in a real browser', () => {
  let t: TestApp<Clock>;
  let receiver: TestReceiver;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  let teamId: string;
  let projectId = '';
  let apiKey = '';
  let otherJobUrl = '';
  let otherKey = '';
  let dispatched = 0;

  const shot = (name: string, target: Page = page) => target.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

  async function dispatch(body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${base}/api/jobs/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(201);
    dispatched += 1;
    return ((await response.json()) as { jobId: string }).jobId;
  }

  /** Reloads a job's page until its status badge reads `status`, to a deadline (server-rendered, it changes only on reload). */
  async function reloadUntil(url: string, status: string, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await page.goto(url);
      if ((await page.locator('h1 .badge').innerText()).trim() === status) return;
      if (Date.now() > deadline) throw new Error(`${url} never showed status "${status}"`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function logIn(email: string, password: string): Promise<void> {
    await page.goto(`${base}/login`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in' }).click();
  }

  /**
   * Wrong passwords for EMAIL from this address (as the browser's), each sent once the throttle's
   * Retry-After has passed, until the wait it answers is at least `seconds`: past five wrong
   * passwords the throttle delays rather than locks (1 s, 2 s, 4 s …), and the browser needs a
   * wait long enough that its next login surely falls inside it.
   */
  async function guessUntilTheWaitIs(seconds: number): Promise<void> {
    for (;;) {
      const response = await fetch(`${base}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: EMAIL, password: 'another wrong guess' }).toString(),
        redirect: 'manual',
      });
      if (response.status !== 429) {
        expect(response.status).toBe(401);
        continue;
      }
      const wait = Number(response.headers.get('retry-after'));
      if (wait >= seconds) return;
      await new Promise((r) => setTimeout(r, wait * 1000));
    }
  }

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await makeTestApp({ clock: systemClock, delivery: true, env: { PUNCTUAL_PUBLIC_URL: base } });
    await t.app.listen({ host: '127.0.0.1', port });
    receiver = await new TestReceiver().start();
    const team = await t.services.manage.createTeam({ name: 'Acme', plan: 'pro' });
    teamId = team.teamId;
    await t.services.users.create({ email: EMAIL, password: PASSWORD, teamIds: [teamId], operator: false });
    // Another team's job, to look for by URL.
    const other = await t.makeProject({ webhookUrl: receiver.url });
    const theirs = await t.api(other.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { private: 'other team' }, scheduledFor: '2099-01-01T00:00:00Z' } });
    otherJobUrl = `/jobs/${theirs.json().jobId}`;
    otherKey = other.key;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // Fail a step with Playwright's own message well before the test's timeout.
    context.setDefaultTimeout(5_000);
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  it('refuses a wrong password, with the reason on the page', async () => {
    await page.goto(base);
    expect(page.url()).toBe(`${base}/login?next=%2F`);
    // The first Tab reaches the skip link: the page is keyboard-navigable from the top.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await logIn(EMAIL, 'not the password');
    await expect.poll(() => page.locator('[role=alert]').innerText()).toContain('Wrong email or password.');
    await shot('login-refused');
  });

  it('logs in and lands on the team\'s projects', async () => {
    await logIn(EMAIL, PASSWORD);
    await page.waitForURL(`${base}/teams/${teamId}`);
    expect(await page.locator('h1').innerText()).toContain('Acme');
    const cookie = (await context.cookies()).find((c) => c.name === 'punctual_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
    await shot('projects-empty');
  });

  it("creates a project whose page shows the curl command for its first job, with its own key and URL", async () => {
    await page.getByLabel('Name').fill('Shop');
    await page.getByLabel('Webhook URL (optional)').fill(receiver.url);
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForSelector('#new-key');
    apiKey = (await page.locator('#new-key').innerText()).trim();
    expect(apiKey).toMatch(/^pk_[A-Za-z0-9]{40}$/);
    const curl = await page.locator('#first-curl').innerText();
    expect(curl).toContain(`curl -X POST ${base}/api/jobs/dispatch`);
    expect(curl).toContain(`Bearer ${apiKey}`);
    projectId = /\/projects\/(prj_[A-Za-z0-9]+)\/jobs/.exec(await page.locator('main').innerHTML())![1]!;
    await shot('project-created');
  });

  it('creates a key, dispatches with it through the API, and shows the job COMPLETED with its attempt', async () => {
    await page.goto(`${base}/projects/${projectId}`);
    await page.locator('nav.tabs').getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`**/projects/${projectId}/keys`);
    await page.getByLabel('Key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForSelector('#new-key');
    apiKey = (await page.locator('#new-key').innerText()).trim();
    // The button sits beside the field it submits, not across the card.
    const input = (await page.getByLabel('Key name').boundingBox())!;
    const button = (await page.getByRole('button', { name: 'Create key' }).boundingBox())!;
    expect(button.x - (input.x + input.width)).toBeLessThan(32);
    await shot('key-created');
    const jobId = await dispatch({ payload: { order: 1042 } });
    await receiver.waitFor(() => receiver.forJob(jobId).length === 1);
    // The receiver has the request before the outcome is committed: wait for the job's own row
    // (the page also says COMPLETED in its status filter).
    await expect
      .poll(
        async () => {
          await page.goto(`${base}/projects/${projectId}/jobs`);
          return page.locator('tbody tr', { hasText: jobId }).innerText();
        },
        { timeout: 10_000, interval: 100 },
      )
      .toContain('COMPLETED');
    expect(await page.locator(`a[href$="/jobs/${jobId}"]`).count()).toBe(1);
    await shot('jobs');
    await page.locator(`a[href$="/jobs/${jobId}"]`).click();
    await page.waitForURL(`**/jobs/${jobId}`);
    const attempt = page.locator('tr.attempt');
    expect(await attempt.count()).toBe(1);
    expect(await attempt.innerText()).toMatch(/1\s+.*success\s+200/s);
    expect(await page.locator('pre.code').first().innerText()).toContain('"order": 1042');
    await shot('job-completed');
    // The key list shows when it was last used.
    await page.goto(`${base}/projects/${projectId}/keys`);
    // The row whose name is exactly "ci": another key's random prefix may contain those letters.
    const ciKey = page.locator('tr').filter({ has: page.locator('td[data-label="Name"]', { hasText: /^ci$/ }) });
    expect(await ciKey.locator('td[data-label="Last used"]').innerText()).not.toBe('never');
  });

  it('creates a schedule from its form, saying the cron in words and its next runs on its own clock before it is saved', async () => {
    await page.goto(`${base}/projects/${projectId}/schedules`);
    await page.getByRole('link', { name: 'New schedule' }).click();
    await page.waitForURL(`**/projects/${projectId}/schedules/new`);
    await page.getByLabel('Name (optional)').fill('weekday digest');
    await page.getByLabel('Cron expression').fill('0 9 * * 1-5');
    await page.getByLabel('Time zone').fill('Europe/Paris');
    // The preview follows the typing (the page's script asks the server).
    await expect.poll(() => page.getByTestId('cron-words').innerText().catch(() => ''), { timeout: 5_000 }).toBe('Monday to Friday at 09:00, Europe/Paris');
    const runs = await page.getByTestId('preview-runs').locator('li').allInnerTexts();
    expect(runs).toHaveLength(5);
    for (const run of runs) expect(run).toMatch(/^(Mon|Tue|Wed|Thu|Fri), \d{1,2} \w{3} \d{4}, 09:00 CES?T$/);
    await page.getByLabel('Payload (JSON object)').fill('{"digest": "weekday"}');
    await shot('schedule-form');
    await phoneShot(`${base}/projects/${projectId}/schedules/new`, 'schedule-form', async (phone) => {
      await phone.getByLabel('Cron expression').fill('*/15 9-17 * * MON-FRI');
      await phone.getByRole('button', { name: 'Preview next runs' }).click();
      await phone.getByTestId('cron-words').waitFor();
      expect(await phone.getByTestId('cron-words').innerText()).toBe('every 15 minutes from 09:00 to 17:59, Monday to Friday, UTC');
    });
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.waitForURL(`**/projects/${projectId}/schedules?done=schedule-created`);
    const row = page.locator('tr', { hasText: 'weekday digest' });
    expect(await row.innerText()).toContain('Monday to Friday at 09:00, Europe/Paris');
    expect(await row.locator('.runs li').count()).toBe(5);
    await shot('schedule-created');
  });

  it('sends a test job from the jobs page, whose page opens and shows it delivered', async () => {
    await page.goto(`${base}/projects/${projectId}/jobs`);
    await page.getByText('Send a test job…').click();
    await page.getByLabel('Payload (JSON object)').fill('{"hello": "from the dashboard"}');
    await shot('jobs-send-test-job');
    await phoneShot(`${base}/projects/${projectId}/jobs`, 'jobs-send-test-job', (phone) => phone.getByText('Send a test job…').click());
    await page.getByRole('button', { name: 'Send the job' }).click();
    await page.waitForURL(/\/jobs\/job_[^?]+\?done=test-job-sent$/);
    dispatched += 1;
    const jobId = /\/jobs\/(job_[^?]+)/.exec(page.url())![1]!;
    await receiver.waitFor(() => receiver.forJob(jobId).length === 1);
    expect(receiver.forJob(jobId)[0]!.json.payload).toEqual({ hello: 'from the dashboard' });
    await reloadUntil(page.url(), 'COMPLETED');
    // The list shows each job's payload, on one line.
    await page.goto(`${base}/projects/${projectId}/jobs`);
    const preview = page.locator('tbody tr', { hasText: jobId }).locator('td[data-label="Payload"] code');
    expect(await preview.innerText()).toBe('{"hello":"from the dashboard"}');
    const height = (await page.locator('tbody tr', { hasText: jobId }).boundingBox())!.height;
    expect(height).toBeLessThan(60);
  });

  it('keeps the first curl on the API keys tab, the key masked, and makes a new key that fills it in', async () => {
    await page.goto(`${base}/projects/${projectId}/keys`);
    await page.getByText('The curl command that dispatches a job').click();
    const curl = page.getByTestId('first-curl');
    expect(await curl.innerText()).toMatch(/Bearer pk_[A-Za-z0-9]{8}•{29}/);
    await shot('keys-first-curl');
    await page.getByRole('button', { name: 'Make a new key for this command' }).click();
    await page.waitForSelector('#new-key');
    const key = (await page.locator('#new-key').innerText()).trim();
    expect(await page.getByTestId('first-curl').innerText()).toContain(`Bearer ${key}`);
    await shot('keys-first-curl-new-key');
    await phoneShot(`${base}/projects/${projectId}/keys`, 'keys-first-curl', (phone) => phone.getByText('The curl command that dispatches a job').click());
  });

  it('shows a failing receiver where people land: a status and success rate on the projects list, a banner on the overview', async () => {
    const flaky = await t.services.manage.createProject(teamId, { name: 'Flaky', webhookUrl: receiver.url.replace(/\/hook$/, '/flaky') });
    const key = (await t.services.manage.createKey(flaky.projectId, { name: 'k' })).key;
    receiver.answer((request) => (request.url === '/flaky' ? { status: 500, body: 'flaky is down' } : { status: 200, body: 'ok' }));
    const ids: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const sent = await t.api(key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { flaky: i }, maxRetries: 0 } });
      expect(sent.statusCode).toBe(201);
      ids.push(sent.json().jobId);
    }
    dispatched += 10;
    await expect.poll(async () => (await t.services.manage.health(flaky.projectId)).state, { timeout: 10_000, interval: 100 }).toBe('failing');
    await page.goto(`${base}/teams/${teamId}`);
    const row = page.getByTestId(`project-${flaky.projectId}`);
    expect(await row.locator('td[data-label="Status"] .badge').innerText()).toBe('failing');
    expect(await row.locator('td[data-label="Status"]').innerText()).toContain('10 attempts in a row failed since');
    expect(await row.locator('td[data-label="Success, 24 h"]').innerText()).toMatch(/^0%\s+of 10 attempts$/);
    expect(await page.getByTestId(`project-${projectId}`).locator('td[data-label="Status"] .badge').innerText()).toBe('delivering');
    await shot('projects-failing');
    await phoneShot(`${base}/teams/${teamId}`, 'projects-failing');
    await row.getByRole('link', { name: 'Flaky' }).click();
    const banner = page.getByTestId('failing-banner');
    expect(await banner.innerText()).toMatch(/Deliveries are failing\s+The last 10 attempts in a row failed, since .+\. The last error: HTTP 500/);
    expect(await page.getByTestId('success-rate').innerText()).toBe('0%');
    await shot('overview-failing');
    await phoneShot(`${base}/projects/${flaky.projectId}`, 'overview-failing');
    // The banner's test delivery shows the receiver's answer.
    await banner.getByRole('button', { name: 'Send a test delivery' }).click();
    expect(await page.getByTestId('test-result').innerText()).toContain('flaky is down');
    receiver.answer({ status: 200, body: 'ok' });
  });

  it('cancels a scheduled job from its page and finds it under CANCELLED', async () => {
    const jobId = await dispatch({ payload: { later: true }, scheduledFor: new Date(Date.now() + 3_600_000).toISOString() });
    await page.goto(`${base}/projects/${projectId}/jobs/${jobId}`);
    await shot('job-queued');
    await page.getByText('Cancel job…').click();
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.waitForURL(`**/jobs/${jobId}?done=cancelled`);
    expect(await page.locator('h1 .badge').innerText()).toBe('CANCELLED');
    await page.goto(`${base}/projects/${projectId}/jobs`);
    await page.getByLabel('Status').selectOption('CANCELLED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/\/jobs\?status=CANCELLED/);
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toContain(jobId);
    await shot('jobs-cancelled');
  });

  it('shows a schedule with its next five runs, pauses, resumes, runs it now and deletes it', async () => {
    const response = await fetch(`${base}/api/schedules`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'nightly report', cron: '30 2 * * *', timezone: 'Europe/Paris', payload: { report: 'nightly' } }),
    });
    expect(response.status).toBe(201);
    const { scheduleId } = (await response.json()) as { scheduleId: string };
    await page.goto(`${base}/projects/${projectId}`);
    await page.getByRole('link', { name: 'Schedules' }).click();
    const row = page.locator(`tr#${scheduleId}`);
    expect(await row.locator('.runs li').count()).toBe(5);
    expect(await row.innerText()).toContain('Europe/Paris');
    await shot('schedules');
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}/projects/${projectId}/schedules`);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('schedules-list-phone', phone);
    await phone.close();
    await row.getByRole('button', { name: 'Pause' }).click();
    await page.waitForURL('**/schedules?done=schedule-pause');
    expect(await page.locator(`tr#${scheduleId}`).innerText()).toContain('paused');
    await page.locator(`tr#${scheduleId}`).getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL('**/schedules?done=schedule-resume');
    await page.locator(`tr#${scheduleId}`).getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL('**/schedules?done=schedule-trigger');
    // A schedule's job counts toward the month's usage like a dispatch.
    dispatched += 1;
    // The extra job is delivered; the job page links back to its schedule.
    const lastJob = page.locator(`tr#${scheduleId} td[data-label="Last job"]`);
    expect(await lastJob.innerText()).toContain('none yet');
    await page.goto(`${base}/projects/${projectId}/jobs`);
    await page.locator('tbody tr').first().getByRole('link').first().click();
    await page.getByRole('link', { name: `schedule ${scheduleId}` }).click();
    await page.waitForURL(`**/schedules#${scheduleId}`);
    await page.locator(`tr#${scheduleId}`).getByText('Delete…').click();
    await page.getByRole('button', { name: 'Delete schedule' }).click();
    await page.waitForURL('**/schedules?done=schedule-delete');
    expect(await page.locator(`tr#${scheduleId}`).count()).toBe(0);
    await shot('schedules-deleted');
  });

  it('shows every failed attempt when the receiver answers 500, and retries the FAILED job', async () => {
    await page.goto(`${base}/projects/${projectId}/settings`);
    // Durations in a unit, and the retry schedule they give, following the typing.
    expect(await page.getByTestId('retry-schedule').innerText()).toContain('retried after about 30 s, 2 min and 8 min');
    await page.getByLabel('First retry after', { exact: true }).fill('50');
    await page.getByLabel('First retry after: unit').selectOption('ms');
    await page.getByLabel('Longest wait between attempts', { exact: true }).fill('200');
    await page.getByLabel('Longest wait between attempts: unit').selectOption('ms');
    await expect.poll(() => page.getByTestId('retry-schedule').innerText(), { timeout: 5_000 }).toContain('retried after about 50 ms, 200 ms and 200 ms');
    await page.getByLabel('Keep finished jobs for (days)').fill('14');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL('**/settings?done=settings-saved');
    expect(await page.getByLabel('Keep finished jobs for (days)').inputValue()).toBe('14');
    await shot('settings');
    // A value the browser lets through but the service refuses is shown next to its field.
    await page.getByLabel('Backoff factor').fill('1000');
    await page.getByRole('button', { name: 'Save settings' }).click();
    expect(await page.locator('#f-retryPolicy-factor-error').innerText()).toBe('retryPolicy.factor must be a number from 1 to 100');
    expect(await page.getByLabel('Backoff factor').getAttribute('aria-invalid')).toBe('true');
    await shot('settings-refused');

    receiver.answer((request) => (request.json.payload as { fail?: boolean })?.fail ? { status: 500, body: 'database is down' } : { status: 200, body: 'ok' });
    const jobId = await dispatch({ payload: { fail: true }, maxRetries: 1 });
    await reloadUntil(`${base}/projects/${projectId}/jobs/${jobId}`, 'FAILED');
    const attempts = page.locator('tr.attempt');
    expect(await attempts.count()).toBe(2);
    for (let i = 0; i < 2; i += 1) {
      const text = await attempts.nth(i).innerText();
      expect(text).toContain('http_error');
      expect(text).toContain('500');
      expect(text).toContain('database is down');
    }
    await shot('job-failed');
    receiver.answer({ status: 200, body: 'ok' });
    await page.getByRole('button', { name: 'Retry job' }).click();
    await page.waitForURL(`**/jobs/${jobId}?done=retried`);
    await reloadUntil(`${base}/projects/${projectId}/jobs/${jobId}`, 'COMPLETED');
    expect(await page.locator('tr.attempt').count()).toBe(3);
  });

  it('rotates the webhook secret, shows both while both sign, and a test delivery arrives with two signatures', async () => {
    await page.goto(`${base}/projects/${projectId}/webhook`);
    expect(await page.locator('[data-testid=masked-secret]').count()).toBe(1);
    expect(await page.locator('main').innerText()).not.toMatch(/whsec_[A-Za-z0-9+/]{20}/);
    await page.getByText('Rotate secret…').click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    await page.waitForURL('**/webhook?done=rotated');
    expect(await page.locator('[data-testid=masked-secret]').count()).toBe(2);
    await page.getByRole('button', { name: 'Reveal secrets' }).click();
    const secrets = (await page.locator('code.secret').allInnerTexts()).map((s) => s.trim());
    expect(secrets).toHaveLength(2);
    expect(secrets.every((s) => /^whsec_/.test(s))).toBe(true);
    await shot('webhook-revealed');

    const before = receiver.requests.length;
    await page.getByRole('button', { name: 'Send a test delivery' }).click();
    const result = page.locator('[data-testid=test-result]');
    await result.waitFor();
    const text = await result.innerText();
    expect(text).toContain('success');
    expect(text).toContain('200');
    expect(text).toMatch(/Time taken\s+\d/);
    expect(text).toContain('ok');
    const test = receiver.requests.slice(before).find((r) => String(r.json.jobId).startsWith('job_test_'))!;
    expect(String(test.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of secrets) expect(new Webhook(secret).verify(test.body, test.headers as Record<string, string>)).toEqual(test.json);
    expect(test.headers.authorization).toBe(`Bearer ${secrets[0]}`);
    await shot('webhook-test-delivery');
  });

  it("shows this month's usage matching what was dispatched, and the rate limit", async () => {
    await page.goto(`${base}/teams/${teamId}/usage`);
    expect(await page.getByTestId('jobs-created').innerText()).toBe(String(dispatched));
    expect(await page.getByTestId('quota').innerText()).toBe('of 100,000');
    const remaining = Number(await page.getByTestId('rate-remaining').innerText());
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(200);
    const today = new Date().toISOString().slice(0, 10);
    expect(await page.locator('svg.chart title', { hasText: today }).textContent()).toBe(`${today}: ${dispatched} jobs`);
    // At 0% only the track shows: it has a border that stands out from the card (3:1 or more).
    const track = await page.getByLabel('Monthly quota used').evaluate((element) => {
      const style = getComputedStyle(element);
      return { width: style.borderTopWidth, color: style.borderTopColor, appearance: style.appearance };
    });
    expect(track).toEqual({ width: '1px', color: 'rgb(140, 149, 159)', appearance: 'none' });
    await shot('usage');
  });

  it("answers 404 for another team's job by URL, without showing it", async () => {
    const response = await page.goto(`${base}/projects/${projectId}${otherJobUrl}`);
    expect(response!.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('Not found');
    expect(await page.content()).not.toContain('other team');
    await shot('not-found');
  });

  it('refuses a state-changing POST without the CSRF token', async () => {
    const keysBefore = (await t.services.manage.listKeys(projectId)).keys.length;
    const response = await context.request.post(`${base}/projects/${projectId}/keys`, { form: { name: 'forged' } });
    expect(response.status()).toBe(403);
    expect(await response.text()).toContain('This form could not be accepted');
    expect((await t.services.manage.listKeys(projectId)).keys).toHaveLength(keysBefore);
  });

  it('works on a phone-sized screen', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}/projects/${projectId}/jobs`);
    // No sideways scrolling: the jobs table turns into one card per job.
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    // A status badge keeps its own width in its card instead of stretching across it.
    const cell = (await phone.locator('tbody td[data-label="Status"]').first().boundingBox())!;
    const badge = (await phone.locator('tbody td[data-label="Status"] .badge').first().boundingBox())!;
    expect(badge.width).toBeLessThan(cell.width / 2);
    await shot('jobs-phone', phone);
    await phone.goto(`${base}/projects/${projectId}`);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('project-phone', phone);
    await phone.goto(`${base}/projects/${projectId}/schedules`);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('schedules-phone', phone);
    await phone.close();
  });

  /** Opens `url` at phone width, checks nothing scrolls sideways, and saves `<name>-phone.png`; `act` runs first (open a confirmation…). */
  async function phoneShot(url: string, name: string, act?: (phone: Page) => Promise<void>): Promise<void> {
    const phone = await context.newPage();
    try {
      await phone.setViewportSize({ width: 390, height: 844 });
      await phone.goto(url);
      if (act) await act(phone);
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await shot(`${name}-phone`, phone);
    } finally {
      await phone.close();
    }
  }

  it('pauses deliveries from the project page: a job dispatched meanwhile waits QUEUED while another project\'s goes out, and is delivered on resume', async () => {
    await page.goto(`${base}/projects/${projectId}`);
    await page.getByText('Pause deliveries…').click();
    expect(await page.locator('.confirm-box', { hasText: 'Pause deliveries of' }).innerText()).toContain('Dispatches are still accepted');
    await page.getByRole('button', { name: 'Pause deliveries' }).click();
    await page.waitForURL(`**/projects/${projectId}?done=project-paused`);
    expect(await page.getByTestId('paused-banner').innerText()).toContain('Deliveries paused');
    expect(await page.getByRole('status').first().innerText()).toContain('Deliveries paused. Dispatches are still accepted');
    await shot('project-paused');
    await phoneShot(`${base}/projects/${projectId}`, 'project-paused');

    const jobId = await dispatch({ payload: { whilePaused: true } });
    // Another project's job, dispatched after it on the same instance, is delivered; this one is not.
    const marker = await t.api(otherKey, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { marker: true } } });
    expect(marker.statusCode).toBe(201);
    await receiver.waitFor(() => receiver.forJob(marker.json().jobId).length === 1);
    const jobUrl = `${base}/projects/${projectId}/jobs/${jobId}`;
    await page.goto(jobUrl);
    expect(await page.locator('h1 .badge').innerText()).toBe('QUEUED');
    expect(receiver.forJob(jobId)).toHaveLength(0);
    // The banner is on every tab; from the job's page it resumes and goes back to the jobs list.
    expect(await page.getByTestId('paused-banner').isVisible()).toBe(true);
    await shot('job-waiting-paused');
    await page.getByRole('button', { name: 'Resume deliveries' }).click();
    await page.waitForURL(`**/projects/${projectId}/jobs?done=project-resumed`);
    expect(await page.getByTestId('paused-banner').count()).toBe(0);
    await reloadUntil(jobUrl, 'COMPLETED');
    expect(receiver.forJob(jobId)).toHaveLength(1);
  });

  it('retries all failed jobs of the list after a confirmation that counts them, and they are delivered', async () => {
    receiver.answer((request) => ((request.json.payload as { bulk?: boolean } | undefined)?.bulk ? { status: 500, body: 'bulk down' } : { status: 200, body: 'ok' }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push(await dispatch({ payload: { bulk: true, n: i }, maxRetries: 0 }));
    const failedList = `${base}/projects/${projectId}/jobs?status=FAILED`;
    await expect
      .poll(
        async () => {
          await page.goto(failedList);
          return page.locator('tbody tr').allInnerTexts();
        },
        { timeout: 10_000, interval: 100 },
      )
      .toHaveLength(3);
    await page.getByText('Retry all failed that match…').click();
    const confirm = page.getByTestId('bulk-retry-confirm');
    expect(await confirm.innerText()).toContain('Queue again 3 failed jobs of this project? Each gets a fresh retry budget');
    await shot('jobs-retry-all-failed');
    await phoneShot(failedList, 'jobs-retry-all-failed', (phone) => phone.getByText('Retry all failed that match…').click());

    receiver.answer({ status: 200, body: 'ok' });
    await confirm.getByRole('button', { name: 'Retry 3 jobs' }).click();
    await page.waitForURL(`**/projects/${projectId}/jobs?status=FAILED&done=failed-retried&count=3`);
    expect(await page.getByRole('status').innerText()).toBe('3 failed jobs queued again, each with a fresh retry budget.');
    await expect
      .poll(
        async () => {
          await page.goto(`${base}/projects/${projectId}/jobs`);
          return Promise.all(ids.map((id) => page.locator('tbody tr', { hasText: id }).locator('td[data-label="Status"]').innerText()));
        },
        { timeout: 10_000, interval: 100 },
      )
      .toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
    for (const id of ids) expect(receiver.forJob(id)).toHaveLength(2);
    // Nothing FAILED is left: no offer.
    await page.goto(failedList);
    expect(await page.getByText('Retry all failed that match…').count()).toBe(0);
  });

  it("filters by tag, shows each job's tags, and cancels all that match after the dry run's count, and only those", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const order = [0, 1, 2].map(async () => dispatch({ payload: { bulk: 'cancel' }, tags: { order: '77', shop: 'eu' }, scheduledFor: later }));
    const ids = await Promise.all(order);
    const kept = await dispatch({ payload: { bulk: 'kept' }, tags: { order: '78' }, scheduledFor: later });
    await page.goto(`${base}/projects/${projectId}/jobs`);
    await page.getByLabel('Tag', { exact: true }).fill('order:77');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/jobs?*tag=order%3A77*');
    expect(await page.locator('tbody tr').count()).toBe(3);
    expect(await page.locator('tbody tr').first().locator('td[data-label="Tags"]').innerText()).toContain('order:77');
    await page.getByText('Cancel all that match…').click();
    const confirm = page.getByTestId('bulk-cancel-confirm');
    expect(await confirm.innerText()).toContain('Cancel 3 queued jobs tagged order:77? They will never be delivered.');
    await shot('jobs-cancel-all-that-match');
    await phoneShot(page.url(), 'jobs-cancel-all-that-match', (phone) => phone.getByText('Cancel all that match…').click());
    await confirm.getByRole('button', { name: 'Cancel 3 jobs' }).click();
    await page.waitForURL('**/jobs?tag=order%3A77&done=bulk-cancelled&count=3');
    expect(await page.getByRole('status').innerText()).toBe('3 queued jobs cancelled: they will not be delivered.');
    // The job's page shows its tags, with the way to the jobs that share them.
    await page.goto(`${base}/projects/${projectId}/jobs/${ids[0]}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('CANCELLED');
    expect(await page.getByRole('list', { name: 'Tags' }).innerText()).toContain('shop:eu');
    await shot('job-tags');
    // The job of another tag is left as it was.
    await page.goto(`${base}/projects/${projectId}/jobs/${kept}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('QUEUED');
  });

  it('reschedules all that match a tag and a due window to run at once, and they are delivered', async () => {
    const inAnHour = new Date(Date.now() + 3_600_000);
    const ids = await Promise.all([0, 1].map(async () => dispatch({ payload: { bulk: 'reschedule' }, tags: { wave: 'w1' }, scheduledFor: inAnHour.toISOString() })));
    const local = (ms: number) => new Date(ms).toISOString().slice(0, 16);
    await page.goto(`${base}/projects/${projectId}/jobs`);
    await page.getByLabel('Tag', { exact: true }).fill('wave:w1');
    await page.getByLabel('Due from (UTC)').fill(local(inAnHour.getTime() - 60_000));
    await page.getByLabel('Due before (UTC)').fill(local(inAnHour.getTime() + 60_000));
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL('**/jobs?*dueFrom=*');
    await page.getByText('Reschedule all that match…').click();
    const confirm = page.getByTestId('bulk-reschedule-confirm');
    expect(await confirm.innerText()).toContain('Move 2 queued jobs tagged wave:w1, due between');
    await shot('jobs-reschedule-all-that-match');
    await confirm.getByRole('button', { name: 'Reschedule 2 jobs' }).click();
    await page.waitForURL('**/jobs?*done=bulk-rescheduled&count=2');
    await receiver.waitFor(() => ids.every((id) => receiver.forJob(id).length === 1));
  });

  it("lists the busiest keys on the overview, opens a key's jobs from there, shows the key on a job's page, and cancels the key's jobs", async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const ids = [await dispatch({ payload: { key: 1 }, concurrencyKey: 'customer-9', scheduledFor: later }), await dispatch({ payload: { key: 2 }, concurrencyKey: 'customer-9', scheduledFor: later })];
    const single = await dispatch({ payload: { key: 3 }, concurrencyKey: 'customer-3', scheduledFor: later });
    await page.goto(`${base}/projects/${projectId}`);
    const table = page.getByTestId('busiest-keys');
    expect(await table.locator('tbody tr').first().innerText()).toMatch(/customer-9\s+2\s+0/);
    await shot('overview-busiest-keys');
    await table.getByRole('link', { name: 'customer-9' }).click();
    await page.waitForURL('**/jobs?concurrencyKey=customer-9');
    expect(await page.getByLabel('Key', { exact: true }).inputValue()).toBe('customer-9');
    expect(await page.locator('tbody tr').count()).toBe(2);
    expect(await page.locator('tbody tr').first().locator('td[data-label="Key"]').innerText()).toBe('customer-9');
    await shot('jobs-by-key');
    await page.getByText('Cancel all that match…').click();
    const confirm = page.getByTestId('bulk-cancel-confirm');
    expect(await confirm.innerText()).toContain('Cancel 2 queued jobs of key customer-9?');
    await confirm.getByRole('button', { name: 'Cancel 2 jobs' }).click();
    await page.waitForURL('**/jobs?concurrencyKey=customer-9&done=bulk-cancelled&count=2');
    await page.goto(`${base}/projects/${projectId}/jobs/${ids[0]}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('CANCELLED');
    expect(await page.locator('dd code.concurrency-key').innerText()).toBe('customer-9');
    await shot('job-concurrency-key');
    await page.goto(`${base}/projects/${projectId}/jobs/${single}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('QUEUED');
  });

  it('sends a job.failed event to the Events URL set in the settings, signed as deliveries, and lists it on the Events tab', async () => {
    const eventsUrl = receiver.url.replace(/\/hook$/, '/events');
    await page.goto(`${base}/projects/${projectId}/settings`);
    await page.getByLabel('Events URL').fill(eventsUrl);
    await page.getByLabel('Events format').selectOption('json');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL('**/settings?done=settings-saved');
    expect(await page.getByLabel('Events URL').inputValue()).toBe(eventsUrl);
    await shot('settings-events');

    receiver.answer((request) => ((request.json.payload as { fail?: boolean } | undefined)?.fail ? { status: 500, body: 'still down' } : { status: 200, body: 'ok' }));
    const jobId = await dispatch({ payload: { fail: true }, maxRetries: 0 });
    const isOurs = (r: (typeof receiver.requests)[number]) => r.url === '/events' && r.json.type === 'job.failed' && (r.json.data as { jobId?: string }).jobId === jobId;
    await receiver.waitFor(() => receiver.requests.some(isOurs));
    const sent = receiver.requests.find(isOurs)!;
    const eventId = String(sent.json.eventId);
    expect(eventId).toMatch(/^evt_/);
    expect(sent.headers['webhook-id']).toBe(eventId);

    await page.locator('nav.tabs').getByRole('link', { name: 'Events' }).click();
    await page.waitForURL(`**/projects/${projectId}/events`);
    // The receiver has the event before its delivery is recorded: reload until the row says so.
    const row = page.locator(`tr#${eventId}`);
    await expect
      .poll(
        async () => {
          await page.goto(`${base}/projects/${projectId}/events`);
          return row.locator('td[data-label="Delivery"] .badge').innerText();
        },
        { timeout: 10_000, interval: 100 },
      )
      .toBe('DELIVERED');
    expect(await row.locator('td[data-label="Event"]').innerText()).toContain('job.failed');
    expect(await row.locator('td[data-label="What happened"]').innerText()).toMatch(new RegExp(`Job ${jobId} failed after 1 attempt: HTTP 500`));
    expect(await row.locator('td[data-label="Attempts"]').innerText()).toBe('1');
    await shot('events');
    await phoneShot(`${base}/projects/${projectId}/events`, 'events');
    await row.getByRole('link', { name: jobId }).click();
    await page.waitForURL(`**/jobs/${jobId}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('FAILED');
  });

  it("shows the project's overview from its real deliveries: success rate, attempts per minute, lateness, jobs by status and the last failures", async () => {
    receiver.answer((request) => ((request.json.payload as { fail?: boolean } | undefined)?.fail ? { status: 503, body: 'overloaded' } : { status: 200, body: 'ok' }));
    const mine = [
      ...(await Promise.all([1, 2, 3].map((n) => dispatch({ payload: { overview: n } })))),
      ...(await Promise.all([4, 5].map((n) => dispatch({ payload: { overview: n, fail: true }, maxRetries: 0 })))),
    ];
    const api = async (path: string) => (await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${apiKey}` } })).json() as Promise<Record<string, unknown>>;
    type Listed = { jobId: string; status: string };
    // Until these five are final (the receiver has a request before its outcome is stored).
    await expect
      .poll(async () => ((await api('/api/jobs?limit=100')).jobs as Listed[]).filter((j) => mine.includes(j.jobId)).map((j) => j.status).sort(), { timeout: 10_000, interval: 100 })
      .toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED', 'FAILED', 'FAILED']);
    // What the overview should say, from the job API: every attempt of the project so far (all within the last 24 hours).
    const jobs = (await api('/api/jobs?limit=100')).jobs as Listed[];
    let attempts = 0;
    const failures: { finishedAt: string; jobId: string }[] = [];
    for (const job of jobs) {
      for (const attempt of (await api(`/api/jobs/${job.jobId}/attempts`)).attempts as { finishedAt: string | null; outcome: string }[]) {
        if (attempt.finishedAt === null) continue;
        attempts += 1;
        if (attempt.outcome !== 'success') failures.push({ finishedAt: attempt.finishedAt, jobId: job.jobId });
      }
    }
    const failed = failures.length;
    // The newest first; two may have finished in the same millisecond (the page then lists either first).
    const newest = failures.reduce((at, f) => (f.finishedAt > at ? f.finishedAt : at), '');
    const latestJobs = failures.filter((f) => f.finishedAt === newest).map((f) => f.jobId);
    expect(failed).toBeGreaterThanOrEqual(2);

    await page.goto(`${base}/projects/${projectId}`);
    expect(await page.getByTestId('success-rate').innerText()).toBe(`${(Math.floor(((attempts - failed) / attempts) * 1000) / 10).toFixed(1)}%`);
    expect(await page.getByTestId('lateness').innerText()).toMatch(/^p50 \d+(\.\d+)? m?s p99 \d+(\.\d+)? m?s$/);
    const chart = page.locator('svg.chart-wide');
    expect(await chart.getAttribute('role')).toBe('img');
    expect(await chart.getAttribute('aria-label')).toContain(`over the last 24 hours: ${attempts} in all, ${failed} failed`);
    expect(await page.locator('svg.chart-narrow').isVisible()).toBe(false);
    for (const status of ['QUEUED', 'DISPATCHED', 'STARTED', 'COMPLETED', 'FAILED', 'CANCELLED']) {
      const n = jobs.filter((j) => j.status === status).length;
      expect(await page.getByTestId(`count-${status}`).locator('.count').innerText(), status).toBe(String(n));
    }
    const firstFailure = page.locator('section[aria-labelledby="failures-title"] tbody tr').first();
    const firstJobId = await firstFailure.locator('td[data-label="Job"]').innerText();
    expect(latestJobs).toContain(firstJobId);
    expect(await firstFailure.locator('td[data-label="Status"]').innerText()).toBe('503');
    expect(await firstFailure.locator('td[data-label="Error"]').innerText()).toContain('503');
    await shot('overview');
    await phoneShot(`${base}/projects/${projectId}`, 'overview', async (phone) => {
      // The drawing made for a narrow screen, the wide one hidden.
      expect(await phone.locator('svg.chart-narrow').isVisible()).toBe(true);
      expect(await phone.locator('svg.chart-wide').isVisible()).toBe(false);
    });
    // A failure leads to its job.
    await firstFailure.getByRole('link').click();
    await page.waitForURL(`**/projects/${projectId}/jobs/${firstJobId}`);
    expect(await page.locator('h1 .badge').innerText()).toBe('FAILED');
  });

  it('changes the password on the account page, logs out, and throttles repeated wrong passwords', async () => {
    await page.goto(`${base}/account`);
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password', { exact: true }).fill('an even sturdier one 43');
    await page.getByLabel('New password again').fill('an even sturdier one 43');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.waitForURL('**/account?done=password-changed');
    await shot('account');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login?done=logged-out');
    for (let i = 0; i < 5; i += 1) {
      await logIn(EMAIL, `guess ${i}`);
      await page.locator('[role=alert]').waitFor();
    }
    await guessUntilTheWaitIs(8);
    await logIn(EMAIL, 'an even sturdier one 43');
    await expect.poll(() => page.locator('[role=alert]').innerText()).toContain('Too many failed logins');
    expect(page.url()).toBe(`${base}/login`);
    await shot('login-throttled');
  });
});
