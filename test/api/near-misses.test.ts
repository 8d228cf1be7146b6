import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

/**
 * SPEC sections 2, 5 and 7: a misspelt field never silently does the wrong thing. A near miss of a
 * job field is refused with data.field (the name sent) and data.didYouMean; management bodies are
 * strict; a project's creation takes every setting its update takes; and one mistake gets one
 * message, whether it is made in a single dispatch or in a batch item.
 */
describe('near misses, strict management bodies and one voice per mistake', () => {
  let t: TestApp;
  let p: TestProject;
  const dispatch = (body: unknown) => t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const batch = (jobs: unknown[]) => t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs } });
  const jobCount = async () => (await t.api(p.key, { method: 'GET', url: '/api/jobs?limit=100' })).json().jobs.length as number;

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  describe('job bodies', () => {
    it.each([
      ['scheduled_for', { payload: {}, scheduled_for: '2026-12-01T00:00:00Z' }, 'scheduledFor'],
      ['ScheduledFor', { payload: {}, ScheduledFor: '2026-12-01T00:00:00Z' }, 'scheduledFor'],
      ['schedule-for', { payload: {}, 'schedule-for': '2026-12-01T00:00:00Z' }, 'scheduleFor'],
      ['MaxRetries', { payload: {}, MaxRetries: 0 }, 'maxRetries'],
      ['max_retries', { payload: {}, max_retries: 0 }, 'maxRetries'],
      ['runAt', { payload: {}, runAt: '2026-12-01T00:00:00Z' }, 'scheduledFor'],
      ['delay', { payload: {}, delay: 60_000 }, 'scheduledFor'],
      ['delayMs', { payload: {}, delayMs: 60_000 }, 'scheduledFor'],
      ['scheduledAt', { payload: {}, scheduledAt: '2026-12-01T00:00:00Z' }, 'scheduledFor'],
      ['retries', { payload: {}, retries: 2 }, 'maxRetries'],
      ['data (and no payload)', { data: { order: 1 } }, 'payload'],
      ['body (beside a payload)', { payload: {}, body: { order: 1 } }, 'payload'],
      ['TAGS', { payload: {}, TAGS: { a: 'b' } }, 'tags'],
    ])('refuses the near miss %s in a dispatch, naming it and the field meant, and creates nothing', async (_name, body, meant) => {
      const before = await jobCount();
      const sent = Object.keys(body).find((key) => key !== 'payload')!;
      const res = await dispatch(body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: 'INVALID_REQUEST',
        data: { message: `${sent} is not a field of a dispatch: did you mean ${meant}?`, field: sent, didYouMean: meant },
      });
      expect(await jobCount()).toBe(before);
    });

    it('still ignores an unknown field that is no near miss', async () => {
      const res = await dispatch({ payload: { a: 1 }, colour: 'blue', priority: 5 });
      expect(res.statusCode).toBe(201);
    });

    it('refuses a near miss in a batch item, in its own slot, and stores the other items', async () => {
      const res = await batch([{ payload: { n: 1 } }, { payload: { n: 2 }, scheduled_for: '2026-12-01T00:00:00Z' }, { payload: { n: 3 } }]);
      expect(res.statusCode).toBe(200);
      const [first, second, third] = res.json().jobs;
      expect(first.status).toBe('QUEUED');
      expect(second).toEqual({
        error: 'INVALID_REQUEST',
        data: { message: 'scheduled_for is not a field of a dispatch: did you mean scheduledFor?', field: 'scheduled_for', didYouMean: 'scheduledFor' },
      });
      expect(third.status).toBe('QUEUED');
    });

    it('refuses a near miss in a schedule body, on creation and on PATCH', async () => {
      const created = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '30 2 * * *', tz: 'Europe/Paris', payload: {} } });
      expect(created.statusCode).toBe(400);
      expect(created.json().data).toMatchObject({ field: 'tz', didYouMean: 'timezone' });
      const good = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '30 2 * * *', timezone: 'Europe/Paris', payload: {} } });
      expect(good.statusCode).toBe(201);
      const patched = await t.api(p.key, { method: 'PATCH', url: `/api/schedules/${good.json().scheduleId}`, payload: { time_zone: 'UTC' } });
      expect(patched.statusCode).toBe(400);
      expect(patched.json()).toMatchObject({ error: 'INVALID_REQUEST', data: { field: 'time_zone', didYouMean: 'timezone' } });
      const after = await t.api(p.key, { method: 'GET', url: `/api/schedules/${good.json().scheduleId}` });
      expect(after.json().timezone).toBe('Europe/Paris');
    });

    it('refuses a near miss in a reschedule and in a bulk replay', async () => {
      const later = new Date(t.clock.now() + 86_400_000).toISOString();
      const { jobId } = (await dispatch({ payload: {}, scheduledFor: later })).json();
      const res = await t.api(p.key, { method: 'PATCH', url: `/api/jobs/${jobId}`, payload: { scheduled_for: null } });
      expect(res.statusCode).toBe(400);
      expect(res.json().data).toMatchObject({ field: 'scheduled_for', didYouMean: 'scheduledFor' });
      expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json().scheduledFor).toBe(later);
      const replay = await t.api(p.key, { method: 'POST', url: '/api/jobs/retry', payload: { status: 'FAILED', failed_after: '2026-01-01T00:00:00Z' } });
      expect(replay.statusCode).toBe(400);
      expect(replay.json().data).toMatchObject({ field: 'failed_after', didYouMean: 'failedAfter' });
    });

    it('names a near miss in a bulk action with didYouMean too', async () => {
      const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/bulk', payload: { action: 'cancel', filter: { status: 'QUEUED' }, dry_run: true } });
      expect(res.statusCode).toBe(400);
      expect(res.json().data).toMatchObject({ field: 'dry_run', didYouMean: 'dryRun' });
    });
  });

  describe('one message per mistake', () => {
    it.each([
      ['a payload that is a string', { payload: 'x' }],
      ['a payload that is an array', { payload: [1] }],
      ['a payload that is null', { payload: null }],
      ['no payload', { scheduledFor: null }],
      ['a scheduledFor that is a number', { payload: {}, scheduledFor: 1767000000000 }],
      ['a scheduleFor that is a boolean', { payload: {}, scheduleFor: true }],
      ['a zoneless scheduledFor', { payload: {}, scheduledFor: '2027-01-05T09:30:00' }],
      ['a maxRetries that is a string', { payload: {}, maxRetries: '3' }],
      ['a negative maxRetries', { payload: {}, maxRetries: -1 }],
      ['tags that are an array', { payload: {}, tags: ['a'] }],
      ['both scheduledFor and scheduleFor', { payload: {}, scheduledFor: null, scheduleFor: null }],
      ['a body that is an array', [{ payload: {} }]],
      ['a body that is a string', 'payload'],
    ])('answers %s in the same words in a single dispatch and in a batch item', async (_name, body) => {
      const single = await dispatch(body);
      expect(single.statusCode).toBe(400);
      const item = (await batch([body])).json().jobs[0];
      expect(single.json()).toEqual(item);
      // A sentence, never the validator's own terms.
      expect(item.data.message).not.toMatch(/must be (object|string|integer|array|boolean)\b|string,null/);
    });

    it('says what a type mistake in a schedule body must be, in the words a dispatch uses', async () => {
      const schedule = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: '* * * * *', payload: 'x' } });
      expect(schedule.json()).toEqual((await dispatch({ payload: 'x' })).json());
      const cron = await t.api(p.key, { method: 'POST', url: '/api/schedules', payload: { cron: 5, payload: {} } });
      expect(cron.json()).toEqual({ error: 'INVALID_CRON', data: { message: 'cron must be a string of at most 200 characters, such as "30 2 * * *"', field: 'cron' } });
    });

    it('says what a management field must be, in words', async () => {
      const res = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { deliveryConcurrency: 'ten', acceptAny2xx: 1 } });
      expect(res.json()).toEqual({ error: 'INVALID_REQUEST', data: { message: 'deliveryConcurrency must be an integer', field: 'deliveryConcurrency' } });
      const url = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { webhookUrl: 5 } });
      expect(url.json()).toEqual({ error: 'INVALID_WEBHOOK_URL', data: { message: 'webhookUrl must be an absolute http(s) URL, or null to unset it', field: 'webhookUrl' } });
    });

    it('tells the admin token sent to the job API that it is the wrong kind of token, and an API key sent to the management API', async () => {
      const res = await t.api(ADMIN_TOKEN, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('UNAUTHORIZED');
      expect(res.json().data.message).toMatch(/^That is the admin token, which opens the management API \(\/manage\/v1\).*the job API takes a project's API key/);
      const other = await t.api('not-a-token', { method: 'GET', url: '/api/jobs' });
      expect(other.json().data.message).toBe('That API key is not valid');
      const manage = await t.app.inject({ method: 'GET', url: `/manage/v1/projects/${p.projectId}`, headers: { authorization: `Bearer ${p.key}` } });
      expect(manage.statusCode).toBe(401);
      expect(manage.json().data.message).toMatch(/^That is a project API key, which the job API \(\/api\) takes; the management API takes the admin token/);
    });
  });

  describe('management bodies', () => {
    const project = async () => (await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}` })).json();

    it('refuses PATCH {"webhook_url": …} with didYouMean, and changes nothing', async () => {
      const before = await project();
      const res = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { webhook_url: 'https://example.com/elsewhere' } });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: 'INVALID_REQUEST',
        data: { message: 'webhook_url is not a field of a project: did you mean webhookUrl?', field: 'webhook_url', didYouMean: 'webhookUrl' },
      });
      expect(await project()).toEqual(before);
    });

    it('refuses an unknown field, naming it and listing the fields, and a typo with didYouMean, nested ones dotted', async () => {
      const unknown = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { colour: 'blue' } });
      expect(unknown.statusCode).toBe(400);
      expect(unknown.json().data).toEqual({ message: expect.stringMatching(/^colour is not a field of a project; the fields are name, webhookUrl, retryPolicy, /), field: 'colour' });
      const typo = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { deliveryTimeotMs: 5000 } });
      expect(typo.json().data).toMatchObject({ field: 'deliveryTimeotMs', didYouMean: 'deliveryTimeoutMs' });
      const nested = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { retryPolicy: { factr: 2 } } });
      expect(nested.json().data).toEqual({
        message: 'retryPolicy.factr is not a field of a retry policy: did you mean retryPolicy.factor?',
        field: 'retryPolicy.factr',
        didYouMean: 'retryPolicy.factor',
      });
      const team = await t.admin({ method: 'POST', url: '/manage/v1/teams', payload: { name: 'x', plna: 'pro' } });
      expect(team.json().data).toMatchObject({ field: 'plna', didYouMean: 'plan' });
      // A required field misspelt is named as the near miss it is, not as missing.
      const nameless = await t.admin({ method: 'POST', url: '/manage/v1/teams', payload: { nmae: 'x' } });
      expect(nameless.json()).toEqual({ error: 'INVALID_REQUEST', data: { message: 'nmae is not a field of a team: did you mean name?', field: 'nmae', didYouMean: 'name' } });
      const project = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { Name: 'x' } });
      expect(project.json().data).toMatchObject({ field: 'Name', didYouMean: 'name' });
      const key = await t.admin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/keys`, payload: { name: 'ci', scopes: ['all'] } });
      expect(key.json().data).toMatchObject({ field: 'scopes' });
      expect(key.json().data.didYouMean).toBeUndefined();
    });

    it('creates a project with every setting an update takes, instead of dropping them', async () => {
      const settings = {
        retryPolicy: { maxRetries: 2, initialDelayMs: 5_000, factor: 2, maxDelayMs: 60_000, stopOn: [410] },
        deliveryTimeoutMs: 5_000,
        deliveryConcurrency: 7,
        acceptAny2xx: true,
        retentionDays: 14,
        paused: true,
        deliveryRatePerSecond: 2.5,
        asyncCompletion: true,
        asyncCompletionTimeoutMs: 60_000,
        eventsUrl: 'https://example.com/events',
        eventsFormat: 'slack',
        holdOnFailure: true,
        eventTypes: ['job.failed', 'job.completed'],
      };
      const res = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { name: 'Configured', webhookUrl: 'https://example.com/hook', ...settings } });
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ name: 'Configured', webhookUrl: 'https://example.com/hook', ...settings });
      const read = (await t.admin({ method: 'GET', url: `/manage/v1/projects/${res.json().projectId}` })).json();
      expect(read).toMatchObject(settings);
      // Those not given keep their defaults; a bad one is refused as an update refuses it, creating nothing.
      const partial = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { name: 'Partial', retryPolicy: { factor: 3 } } });
      expect(partial.json().retryPolicy).toEqual({ maxRetries: null, initialDelayMs: 30_000, factor: 3, maxDelayMs: 3_600_000, stopOn: [] });
      const projectsBefore = (await t.admin({ method: 'GET', url: `/manage/v1/teams/${p.teamId}/projects` })).json().projects.length;
      const bad = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { name: 'Bad', deliveryTimeoutMs: 10 } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().data.field).toBe('deliveryTimeoutMs');
      const capped = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { name: 'Capped', retryPolicy: { maxRetries: 9 } } });
      expect(capped.json().data.field).toBe('retryPolicy.maxRetries');
      const misspelt = await t.admin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: { name: 'Typo', delivery_timeout_ms: 5000 } });
      expect(misspelt.json().data).toMatchObject({ field: 'delivery_timeout_ms', didYouMean: 'deliveryTimeoutMs' });
      expect((await t.admin({ method: 'GET', url: `/manage/v1/teams/${p.teamId}/projects` })).json().projects).toHaveLength(projectsBefore);
    });

    it("lists in each route's schema exactly the fields its service knows", async () => {
      const spec = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
      const bodyFields = (path: string, method: string) => Object.keys(spec.paths[path][method].requestBody.content['application/json'].schema.properties).sort();
      const { DISPATCH_FIELDS } = await import('../../src/services/input/validate-job-input.js');
      const { SCHEDULE_FIELDS } = await import('../../src/services/input/schedule-input.js');
      const { PROJECT_FIELDS, RETRY_POLICY_FIELDS } = await import('../../src/services/input/validate-manage-input.js');
      expect(bodyFields('/api/jobs/dispatch', 'post')).toEqual([...DISPATCH_FIELDS.names].sort());
      expect(bodyFields('/api/schedules', 'post')).toEqual([...SCHEDULE_FIELDS.names].sort());
      expect(bodyFields('/manage/v1/projects/{projectId}', 'patch')).toEqual([...PROJECT_FIELDS.names].sort());
      expect(bodyFields('/manage/v1/teams/{teamId}/projects', 'post')).toEqual([...PROJECT_FIELDS.names].sort());
      const retryPolicy = spec.paths['/manage/v1/projects/{projectId}'].patch.requestBody.content['application/json'].schema.properties.retryPolicy;
      expect(Object.keys(retryPolicy.properties).sort()).toEqual([...RETRY_POLICY_FIELDS.names].sort());
    });
  });
});
