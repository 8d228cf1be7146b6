import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, PunctualApiError, verifyWebhook, WebhookVerificationError, type Delivery, type Job, type PunctualClient } from '../../src/client/index.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { ADMIN_TOKEN, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { eventually } from '../support/eventually.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * punctual/client against a live server (the real app listening on loopback, delivering to a real
 * receiver): every route of /openapi.json is called through the client and answers 2xx at least
 * once, and errors arrive as PunctualApiError with the contract's code.
 */
describe('the typed client against a live server', () => {
  let t: TestApp<Clock>;
  let receiver: TestReceiver;
  let project: TestProject;
  let client: PunctualClient;
  let baseUrl: string;
  /** "GET /api/jobs/{jobId}" for each call the server answered with a 2xx. */
  const answered = new Set<string>();

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    // The async project's deliveries are accepted for later; a job whose payload says so fails.
    receiver.answer((request) => (request.url.includes('async') ? { status: 202 } : request.json.payload && (request.json.payload as { fail?: boolean }).fail ? { status: 500 } : { status: 200 }));
    t = await makeTestApp({ clock: systemClock, delivery: true });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    project = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { maxRetries: 0 } } });
    client = createClient({ baseUrl, apiKey: project.key, adminToken: ADMIN_TOKEN });
    client.use({
      onResponse({ request, response, schemaPath }) {
        if (response.ok) answered.add(`${request.method} ${schemaPath}`);
      },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const completed = (jobId: string, status: Job['status'] = 'COMPLETED'): Promise<Job> =>
    eventually(() => client.jobs.get(jobId), { what: `${jobId} ${status}`, until: (job) => job.status === status, everyMs: 20 });

  it('answers health, readiness and metrics', async () => {
    expect((await client.GET('/healthz')).data).toEqual({ status: 'ok' });
    expect((await client.GET('/readyz')).data).toEqual({ status: 'ready' });
    const metrics = await client.GET('/metrics', { parseAs: 'text' });
    expect(metrics.data).toContain('punctual_jobs_created_total');
  });

  it('dispatches, reads, lists, reschedules, cancels and retries jobs', async () => {
    const first = await client.jobs.dispatch({ payload: { orderId: 1 } }, { idempotencyKey: 'order-1' });
    expect(first).toMatchObject({ jobId: expect.stringMatching(/^job_/), status: 'QUEUED', scheduledFor: null, maxRetries: 0 });
    expect((await client.jobs.dispatch({ payload: { orderId: 1 } }, { idempotencyKey: 'order-1' })).jobId).toBe(first.jobId);
    expect((await completed(first.jobId)).attemptCount).toBe(1);
    const [attempt] = (await client.jobs.attempts(first.jobId)).attempts;
    expect(attempt).toMatchObject({ attemptNumber: 1, outcome: 'success', statusCode: 200 });

    const later = await client.jobs.dispatch({ payload: { n: 2 }, scheduledFor: '2099-01-01T00:00:00Z' }).catch((error: PunctualApiError) => error);
    expect(later).toBeInstanceOf(PunctualApiError);
    expect(later).toMatchObject({ code: 'INVALID_SCHEDULE', status: 400, data: { field: 'scheduledFor' } });

    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    const batch = await client.jobs.dispatchBatch([{ payload: { n: 3 }, scheduledFor: inAnHour, tags: { order: '123' } }, { payload: [] as unknown as Record<string, unknown> }]);
    expect(batch.jobs[0]).toMatchObject({ status: 'QUEUED' });
    expect(batch.jobs[1]).toMatchObject({ error: 'INVALID_PAYLOAD' });
    const waiting = (batch.jobs[0] as { jobId: string }).jobId;
    const inTwoHours = new Date(Date.now() + 7_200_000);
    expect(await client.jobs.reschedule(waiting, inTwoHours.toISOString())).toEqual({ jobId: waiting, scheduledFor: inTwoHours.toISOString(), status: 'QUEUED' });
    const page = await client.jobs.list({ status: 'QUEUED', limit: '10' });
    expect(page.jobs.map((job) => job.jobId)).toContain(waiting);
    expect(page.nextCursor).toBeNull();
    expect(await client.jobs.bulk({ action: 'cancel', filter: { tags: { order: '123' } }, dryRun: true })).toEqual({ matched: 1, changed: 0, hasMore: false });
    expect(await client.jobs.cancel(waiting)).toEqual({ jobId: waiting, status: 'CANCELLED' });
    const again = await client.jobs.cancel(waiting).catch((error: PunctualApiError) => error);
    expect(again).toMatchObject({ code: 'JOB_NOT_QUEUED', status: 409, data: { status: 'CANCELLED' } });

    const failing = await client.jobs.dispatch({ payload: { fail: true } });
    await completed(failing.jobId, 'FAILED');
    expect(await client.jobs.retry(failing.jobId)).toEqual({ jobId: failing.jobId, status: 'QUEUED' });
    await completed(failing.jobId, 'FAILED');
    expect(await client.jobs.retryFailed({ status: 'FAILED' })).toEqual({ retried: 1, hasMore: false });
  });

  it('creates, previews, changes, pauses, triggers and deletes schedules', async () => {
    const preview = await client.schedules.preview({ cron: '30 2 * * *', timezone: 'Europe/Paris', from: '2027-03-26T12:00:00Z', count: '3' });
    expect(preview.runs).toEqual(['2027-03-27T01:30:00.000Z', '2027-03-28T01:00:00.000Z', '2027-03-29T00:30:00.000Z']);
    const schedule = await client.schedules.create({ name: 'nightly', cron: '30 2 * * *', timezone: 'Europe/Paris', payload: { report: 'nightly' } });
    expect(schedule).toMatchObject({ scheduleId: expect.stringMatching(/^sch_/), paused: false, catchUp: 'latest' });
    expect((await client.schedules.list()).schedules.map((s) => s.scheduleId)).toContain(schedule.scheduleId);
    expect((await client.schedules.get(schedule.scheduleId)).name).toBe('nightly');
    expect((await client.schedules.update(schedule.scheduleId, { overlap: 'skip' })).overlap).toBe('skip');
    expect((await client.schedules.pause(schedule.scheduleId)).paused).toBe(true);
    expect((await client.schedules.resume(schedule.scheduleId)).paused).toBe(false);
    const fired = await client.schedules.trigger(schedule.scheduleId);
    expect(fired).toMatchObject({ status: 'QUEUED', scheduledFor: null });
    expect((await client.schedules.delete(schedule.scheduleId)).scheduleId).toBe(schedule.scheduleId);
    await expect(client.schedules.get(schedule.scheduleId)).rejects.toMatchObject({ code: 'SCHEDULE_NOT_FOUND', status: 404 });
    const bad = await client.schedules.create({ cron: '0 0 30 2 *', payload: {} }).catch((error: PunctualApiError) => error);
    expect(bad).toMatchObject({ code: 'INVALID_CRON', data: { field: 'cron' } });
  });

  it('verifies a delivery and reports an accepted attempt with its callback token', async () => {
    const asyncProject = await t.makeProject({ webhookUrl: `${receiver.url}/async`, settings: { asyncCompletion: true } });
    const asyncClient = createClient({ baseUrl, apiKey: asyncProject.key });
    asyncClient.use({ onResponse: ({ request, response, schemaPath }) => void (response.ok && answered.add(`${request.method} ${schemaPath}`)) });
    const job = await asyncClient.jobs.dispatch({ payload: { reportId: 7 } });
    await receiver.waitFor(() => receiver.forJob(job.jobId).length === 1);
    const request = receiver.forJob(job.jobId)[0]!;

    const delivery = verifyWebhook<Delivery<{ reportId: number }>>(asyncProject.webhookSecret, request.headers, request.body);
    expect(delivery).toMatchObject({ jobId: job.jobId, attemptNumber: 1, attempt: 1, payload: { reportId: 7 }, callbackToken: expect.stringMatching(/^pcb_/) });
    // The Standard Webhooks library agrees with it, and so does a Headers object.
    expect(new Webhook(asyncProject.webhookSecret).verify(request.body, request.headers as Record<string, string>)).toEqual(delivery);
    expect(verifyWebhook(asyncProject.webhookSecret, new Headers(request.headers as Record<string, string>), Buffer.from(request.body))).toEqual(delivery);
    expect(() => verifyWebhook(project.webhookSecret, request.headers, request.body)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(asyncProject.webhookSecret, request.headers, request.body.replace('7', '8'))).toThrow(/No webhook-signature entry matches/);
    expect(() => verifyWebhook(asyncProject.webhookSecret, request.headers, request.body, { now: Date.now() + 301_000 })).toThrow(/not within 300 s/);
    expect(() => verifyWebhook(asyncProject.webhookSecret, { 'webhook-id': job.jobId }, request.body)).toThrow(/all required/);

    await eventually(async () => (await asyncClient.jobs.attempts(job.jobId)).attempts[0]?.acceptedAt, { what: 'the 202 recorded' });
    const reported = await asyncClient.reports.report(job.jobId, delivery.attemptId, { outcome: 'success' }, { callbackToken: delivery.callbackToken! });
    expect(reported).toMatchObject({ jobId: job.jobId, status: 'COMPLETED', attemptCount: 1 });
    const late = await asyncClient.reports.report(job.jobId, delivery.attemptId, { outcome: 'failure' }).catch((error: PunctualApiError) => error);
    expect(late).toMatchObject({ code: 'ATTEMPT_NOT_PENDING', status: 409, data: { outcome: 'success' } });
  });

  it('manages teams, projects, keys and secrets with the admin token', async () => {
    const { data: team } = await client.POST('/manage/v1/teams', { body: { name: 'Acme', plan: 'pro' } });
    const teamId = team!.teamId;
    expect((await client.GET('/manage/v1/teams/{teamId}', { params: { path: { teamId } } })).data).toEqual(team);
    expect((await client.PATCH('/manage/v1/teams/{teamId}', { params: { path: { teamId } }, body: { plan: 'free' } })).data?.plan).toBe('free');
    const { data: created } = await client.POST('/manage/v1/teams/{teamId}/projects', { params: { path: { teamId } }, body: { name: 'Billing', webhookUrl: receiver.url } });
    expect(created?.webhookSecret).toMatch(/^whsec_/);
    const projectId = created!.projectId;
    const params = { params: { path: { projectId } } };
    expect((await client.GET('/manage/v1/teams/{teamId}/projects', { params: { path: { teamId } } })).data?.projects).toHaveLength(1);
    expect((await client.GET('/manage/v1/teams/{teamId}/usage', { params: { path: { teamId } } })).data).toMatchObject({ plan: 'free', quota: 1000 });
    expect((await client.GET('/manage/v1/projects/{projectId}', params)).data?.name).toBe('Billing');
    expect((await client.PATCH('/manage/v1/projects/{projectId}', { ...params, body: { paused: true } })).data?.paused).toBe(true);
    const { data: key } = await client.POST('/manage/v1/projects/{projectId}/keys', { ...params, body: { name: 'ci' } });
    expect((await client.GET('/manage/v1/projects/{projectId}/keys', params)).data?.keys.map((k) => k.keyId)).toEqual([key!.keyId]);
    expect((await client.DELETE('/manage/v1/keys/{keyId}', { params: { path: { keyId: key!.keyId } } })).data?.revokedAt).toEqual(expect.any(String));
    const { data: rotated } = await client.POST('/manage/v1/projects/{projectId}/webhook-secret/rotate', params);
    expect((await client.GET('/manage/v1/projects/{projectId}/webhook-secrets', params)).data?.webhookSecrets[0]?.webhookSecret).toBe(rotated!.webhookSecret);
    expect((await client.POST('/manage/v1/projects/{projectId}/test-delivery', params)).data).toMatchObject({ outcome: 'success', statusCode: 200 });
    expect((await client.POST('/manage/v1/projects/{projectId}/probe', params)).data).toMatchObject({ outcome: 'success', statusCode: 200 });
    expect((await client.GET('/manage/v1/projects/{projectId}/events', params)).data).toEqual({ events: [], nextCursor: null });
    expect((await client.GET('/manage/v1/projects/{projectId}/overview', params)).data?.jobsByStatus.QUEUED).toBe(0);
    const missing = await client.GET('/manage/v1/projects/{projectId}', { params: { path: { projectId: 'prj_nope' } } });
    expect(missing.error).toMatchObject({ error: 'NOT_FOUND' });
    const anonymous = await createClient({ baseUrl }).GET('/manage/v1/teams/{teamId}', { params: { path: { teamId } } });
    expect(anonymous.response.status).toBe(401);
  });

  it('has answered every route of /openapi.json', async () => {
    const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(routes.length).toBeGreaterThan(35);
    expect(routes.filter((route) => !answered.has(route))).toEqual([]);
  });
});
