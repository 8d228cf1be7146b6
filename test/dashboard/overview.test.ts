import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptResult } from '../../src/store/store.js';
import { DAY, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { claimRule } from '../../src/delivery/capacity-rules.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const PASSWORD = 'overview password 1';
const MIN = 60_000;

/**
 * A project's overview page (its first tab) through app.inject, on both stores, with the test
 * clock: jobs dispatched through the API, their attempts taken through the store at chosen instants.
 */
describe('dashboard: project overview', () => {
  let t: TestApp;
  let p: TestProject;
  let cookie: string;
  const T = Date.parse('2027-01-01T00:00:00.000Z');
  const ids: Record<string, string> = {};

  async function signIn(email: string): Promise<string> {
    const login = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: new URLSearchParams({ email, password: PASSWORD }).toString() });
    expect(login.statusCode).toBe(303);
    return String(login.headers['set-cookie']).split(';')[0]!;
  }

  async function dispatch(project: TestProject, at: number, body: Record<string, unknown> = {}): Promise<string> {
    t.clock.set(at);
    const response = await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { at }, maxRetries: 0, ...body } });
    expect(response.statusCode).toBe(201);
    return response.json().jobId as string;
  }

  /** A job due at `due`, its only attempt started `lateMs` later and ended 20 ms after that with `result`. */
  async function deliver(name: string, due: number, lateMs: number, result: AttemptResult): Promise<void> {
    const jobId = await dispatch(p, due);
    ids[name] = jobId;
    const start = due + lateMs;
    const claimed = await t.store.jobClaimDue({ now: start, dueBy: start, limit: 1, workerId: 'wrk_page', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
    expect(claimed.map((job) => job.id)).toEqual([jobId]);
    const attemptId = `att_${name}_0000000000000000`;
    await t.store.attemptStart({ jobId, attemptId, workerId: 'wrk_page', now: start, leaseExpiresAt: start + 60_000 });
    const next = result.outcome === 'success' ? { kind: 'complete' as const } : { kind: 'fail' as const };
    expect(await t.store.attemptFinish({ jobId, attemptId, workerId: 'wrk_page', now: start + 20, result, next })).toBe(true);
  }

  const ok: AttemptResult = { outcome: 'success', statusCode: 200, durationMs: 20, error: null, responseBody: 'ok' };
  const page = async (url: string, who = cookie) => t.app.inject({ method: 'GET', url, headers: { cookie: who } });

  beforeAll(async () => {
    t = await makeTestApp({ now: T });
    p = await t.makeProject({ webhookUrl: 'https://93.184.216.34/hook' });
    await t.services.users.create({ email: 'overview@example.com', password: PASSWORD, teamIds: [p.teamId], operator: false });
    cookie = await signIn('overview@example.com');
    // Five attempts from 00:01 to 00:05 UTC, two of them failed, 0 to 30 ms late.
    await deliver('a', T + MIN, 4, ok);
    await deliver('b', T + 2 * MIN, 30, { outcome: 'http_error', statusCode: 500, durationMs: 20, error: 'HTTP 500: <script>alert(1)</script>', responseBody: 'no' });
    await deliver('c', T + 3 * MIN, 2, ok);
    await deliver('d', T + 3 * MIN + 30_000, 9, ok);
    await deliver('g', T + 5 * MIN, 0, { outcome: 'network_error', statusCode: null, durationMs: 20, error: 'connect ECONNREFUSED 93.184.216.34:443', responseBody: null });
    ids.queued = await dispatch(p, T + 6 * MIN, { scheduledFor: '2027-01-02T00:00:00Z' });
    ids.cancelled = await dispatch(p, T + 6 * MIN, { scheduledFor: '2027-01-02T00:00:00Z' });
    t.clock.set(T + 7 * MIN);
    expect((await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${ids.cancelled}` })).statusCode).toBe(200);
    t.clock.set(T + 10 * MIN + 30_000);
  });
  afterAll(() => t.close());

  it('is the project page: the first tab, then API keys, which has a tab of its own', async () => {
    const body = (await page(`/projects/${p.projectId}`)).body;
    expect(body).toMatch(/<nav class="tabs" aria-label="Project">\s*<a href="\/projects\/[^"]+" aria-current="page">Overview<\/a>\s*<a href="\/projects\/[^"]+\/keys">API keys<\/a>/);
    const keys = await page(`/projects/${p.projectId}/keys`);
    expect(keys.statusCode).toBe(200);
    expect(keys.body).toContain('<a href="/projects/' + p.projectId + '/keys" aria-current="page">API keys</a>');
    expect(keys.body).toMatch(/<td data-label="Name">key<\/td>/);
  });

  it('shows the success rate over 24 hours, the lateness p50 and p99 over the last hour, and the jobs by status linked to their list', async () => {
    const body = (await page(`/projects/${p.projectId}`)).body;
    expect(body).toContain('<p class="big" data-testid="success-rate">60.0%</p>');
    expect(body).toContain('3 of 5 attempts succeeded; <strong>2 failed</strong>.');
    // Sorted lateness 0, 2, 4, 9, 30 ms: the median is 4 ms (its bucket holds 4 only), p99 the top of the bucket 27..31.
    expect(body).toMatch(/data-testid="lateness"><span class="muted small">p50<\/span> 4 ms <span class="muted small">p99<\/span> 31 ms<\/p>/);
    expect(body).toContain('over 5 first attempts');
    const counts = { QUEUED: '1', DISPATCHED: '0', STARTED: '0', COMPLETED: '3', FAILED: '2', CANCELLED: '1' };
    for (const [status, n] of Object.entries(counts)) {
      expect(body, status).toMatch(new RegExp(`<a href="/projects/${p.projectId}/jobs\\?status=${status}" data-testid="count-${status}">\\s*<span class="badge[^"]*">${status}</span> <strong class="count">${n}</strong>`));
    }
  });

  it('draws attempts per minute as an accessible SVG with the failed ones, and gives the figures by hour as a table', async () => {
    const body = (await page(`/projects/${p.projectId}`)).body;
    const label = 'Attempts finished per minute over the last 24 hours: 5 in all, 2 failed; at most 2 in a minute, at 00:03 UTC';
    // Two drawings (one for narrow screens); both labelled.
    expect(body.match(new RegExp(`<svg class="chart chart-deliveries chart-(wide|narrow)" viewBox="[^"]+" role="img" aria-label="${label}">\\s*<title>${label}</title>`, 'g'))).toHaveLength(2);
    expect(body).toContain('<title>00:00–01:00 UTC: 5 attempts finished, 2 failed</title>');
    // One bar per minute with attempts (00:01, 00:02, 00:03, 00:05), the failed ones (00:02, 00:05) in red.
    const wide = /<svg class="chart chart-deliveries chart-wide"[^]*?<\/svg>/.exec(body)![0];
    expect(/<path class="bar" d="([^"]*)"/.exec(wide)![1]!.match(/M/g)).toHaveLength(4);
    expect(/<path class="bar-failed" d="([^"]*)"/.exec(wide)![1]!.match(/M/g)).toHaveLength(2);
    expect(body).toMatch(/<tr><td><time datetime="2027-01-01T00:00:00.000Z">2027-01-01 00:00:00 UTC<\/time><\/td><td>5<\/td><td>2<\/td><\/tr>/);
  });

  it('lists the last failed attempts newest first, each linked to its job, with outcome, status and the error as text', async () => {
    const body = (await page(`/projects/${p.projectId}`)).body;
    const rows = [...body.matchAll(/<tr>\s*<td data-label="Job"><a href="([^"]+)"><code>(job_[^<]+)<\/code><\/a><\/td>([^]*?)<\/tr>/g)];
    expect(rows.map((row) => row[2])).toEqual([ids.g, ids.b]);
    expect(rows[0]![1]).toBe(`/projects/${p.projectId}/jobs/${ids.g}`);
    expect(rows[0]![3]).toContain('<time datetime="2027-01-01T00:05:00.020Z">');
    expect(rows[0]![3]).toContain('<span class="badge badge-failed">network_error</span>');
    expect(rows[0]![3]).toContain('connect ECONNREFUSED 93.184.216.34:443');
    expect(rows[1]![3]).toContain('<td data-label="Status">500</td>');
    expect(rows[1]![3]).toContain('HTTP 500: &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body).not.toContain('<script>alert(1)');
  });

  it('says so plainly when nothing was delivered in the last 24 hours, and still counts the jobs', async () => {
    t.clock.set(T + 2 * DAY);
    try {
      // Sessions last 12 hours: a new one.
      const body = (await page(`/projects/${p.projectId}`, await signIn('overview@example.com'))).body;
      expect(body).toContain('<p class="big" data-testid="success-rate">—</p><p class="muted">No attempts finished in the last 24 hours.</p>');
      expect(body).toContain('No first attempt started in the last hour.');
      expect(body).toContain('No attempts finished in the last 24 hours: the chart fills in as jobs are delivered.');
      expect(body).toContain('<p class="muted" data-testid="failures-empty">No failed attempts in the last 24 hours.</p>');
      expect(body).not.toContain('<svg class="chart');
      expect(body).toMatch(/data-testid="count-COMPLETED">\s*<span class="badge[^"]*">COMPLETED<\/span> <strong class="count">3<\/strong>/);
      expect(body).not.toContain('Dispatch your first job');
    } finally {
      t.clock.set(T + 10 * MIN + 30_000);
    }
  });

  it("shows a new project how to dispatch its first job instead of figures, and lists no other project's", async () => {
    const fresh = await t.makeProject({ webhookUrl: 'https://93.184.216.34/fresh' });
    await t.services.users.create({ email: 'fresh@example.com', password: PASSWORD, teamIds: [fresh.teamId], operator: false });
    const body = (await page(`/projects/${fresh.projectId}`, await signIn('fresh@example.com'))).body;
    expect(body).toContain('Dispatch your first job');
    expect(body).toMatch(/<pre id="first-curl" class="code" data-testid="first-curl">curl -X POST [^<]+\/api\/jobs\/dispatch/);
    expect(body).toContain('data-testid="overview-empty"');
    expect(body).not.toContain('data-testid="success-rate"');
    expect(body).not.toContain(ids.b!);
    // The pause control and the project's facts are still there.
    expect(body).toContain('Pause deliveries…');
    expect(body).toContain(`<dt>Project id</dt><dd><code>${fresh.projectId}</code></dd>`);
  });

  it('gives the same figures as JSON on the management API, with their windows', async () => {
    const response = await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}/overview` });
    expect(response.statusCode).toBe(200);
    const failure = (name: string, at: string, rest: Record<string, unknown>) => ({ jobId: ids[name], attemptId: `att_${name}_0000000000000000`, attemptNumber: 1, finishedAt: at, ...rest });
    expect(response.json()).toEqual({
      at: '2027-01-01T00:10:30.000Z',
      health: { state: 'healthy', since: null, consecutiveFailures: 0, nextProbeAt: null },
      jobsByStatus: { QUEUED: 1, DISPATCHED: 0, STARTED: 0, COMPLETED: 3, FAILED: 2, CANCELLED: 1 },
      jobCountLimit: 10_000,
      deliveries: {
        windowStart: '2026-12-31T00:11:00.000Z',
        windowEnd: '2027-01-01T00:11:00.000Z',
        attempts: 5,
        failedAttempts: 2,
        perMinute: [
          { minute: '2027-01-01T00:01:00.000Z', attempts: 1, failedAttempts: 0 },
          { minute: '2027-01-01T00:02:00.000Z', attempts: 1, failedAttempts: 1 },
          { minute: '2027-01-01T00:03:00.000Z', attempts: 2, failedAttempts: 0 },
          { minute: '2027-01-01T00:05:00.000Z', attempts: 1, failedAttempts: 1 },
        ],
      },
      lateness: { windowStart: '2026-12-31T23:11:00.000Z', windowEnd: '2027-01-01T00:11:00.000Z', firstAttempts: 5, p50Ms: 4, p99Ms: 31 },
      recentFailures: [
        failure('g', '2027-01-01T00:05:00.020Z', { outcome: 'network_error', statusCode: null, error: 'connect ECONNREFUSED 93.184.216.34:443' }),
        failure('b', '2027-01-01T00:02:00.050Z', { outcome: 'http_error', statusCode: 500, error: 'HTTP 500: <script>alert(1)</script>' }),
      ],
    });
  });

  it("answers another team's user with the 404 of an unknown project, for the overview and the keys tab", async () => {
    const other = await t.makeProject();
    await t.services.users.create({ email: 'other-team@example.com', password: PASSWORD, teamIds: [other.teamId], operator: false });
    const intruder = await signIn('other-team@example.com');
    for (const tab of ['', '/keys']) {
      const refused = await page(`/projects/${p.projectId}${tab}`, intruder);
      const absent = await page(`/projects/prj_unknown0000000000${tab}`, intruder);
      expect(refused.statusCode, tab).toBe(404);
      expect(refused.body).toBe(absent.body);
      expect(refused.body).not.toContain(ids.b!);
    }
    const json = await t.app.inject({ method: 'GET', url: `/manage/v1/projects/${p.projectId}/overview`, headers: { cookie: intruder } });
    expect(json.statusCode).toBe(404);
    expect(json.json()).toMatchObject({ error: 'NOT_FOUND' });
  });
});
