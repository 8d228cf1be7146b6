import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver, type ReceivedRequest } from '../support/receiver.js';

/** SPEC section 10's events, sent to a real receiver in real time; waits poll to a deadline. */
describe('events to a project\'s eventsUrl', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;
  /** What the events endpoint answers, per project path; 200 by default. */
  const eventAnswers = new Map<string, () => { status: number }>();

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request) => {
      if (request.url.startsWith('/events/')) return eventAnswers.get(request.url)?.() ?? { status: 200 };
      return (request.json.payload as { status?: number } | undefined)?.status ? { status: (request.json.payload as { status: number }).status } : { status: 200 };
    });
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const base = () => receiver.url.replace(/\/hook$/, '');
  let n = 0;
  async function project(settings: Record<string, unknown> = {}): Promise<TestProject & { eventsPath: string }> {
    n += 1;
    const eventsPath = `/events/${n}`;
    const p = await t.makeProject({
      webhookUrl: receiver.url,
      settings: { eventsUrl: `${base()}${eventsPath}`, retryPolicy: { maxRetries: 0, initialDelayMs: 50, factor: 1, maxDelayMs: 50 }, ...settings },
    });
    return { ...p, eventsPath };
  }
  const eventsAt = (path: string): ReceivedRequest[] => receiver.requests.filter((r) => r.url === path);
  const dispatch = async (p: TestProject, payload: Record<string, unknown>) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload } });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const listEvents = async (p: TestProject) => (await t.admin({ method: 'GET', url: `/manage/v1/projects/${p.projectId}/events` })).json();

  it('sends job.failed when a job fails, signed as deliveries are but with no Authorization, and lists it as delivered', async () => {
    const p = await project();
    const jobId = await dispatch(p, { status: 500 });
    await receiver.waitFor(() => eventsAt(p.eventsPath).length === 1);
    const [request] = eventsAt(p.eventsPath);
    expect(request!.json).toEqual({
      eventId: expect.stringMatching(/^evt_/),
      type: 'job.failed',
      occurredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      projectId: p.projectId,
      data: { jobId, attemptCount: 1, lastError: 'HTTP 500' },
    });
    // An events URL may be a third party's: the secret itself never goes there (SPEC section 10).
    expect(request!.headers.authorization).toBeUndefined();
    expect(JSON.stringify(request!.headers)).not.toContain(p.webhookSecret.slice('whsec_'.length));
    expect(request!.headers['webhook-id']).toBe(request!.json.eventId);
    expect(new Webhook(p.webhookSecret).verify(request!.body, request!.headers as Record<string, string>)).toEqual(request!.json);
    const listed = await eventually(() => listEvents(p), { what: 'the event DELIVERED', until: (body) => body.events[0]?.status === 'DELIVERED' });
    expect(listed.events).toEqual([
      {
        eventId: request!.json.eventId,
        type: 'job.failed',
        occurredAt: request!.json.occurredAt,
        projectId: p.projectId,
        data: { jobId, attemptCount: 1, lastError: 'HTTP 500' },
        status: 'DELIVERED',
        attemptCount: 1,
        nextAttemptAt: null,
        lastError: null,
        deliveredAt: expect.any(String),
      },
    ]);
    expect(listed.nextCursor).toBeNull();
  });

  it('retries an event its endpoint refused, on the project\'s retry policy, and gives up after it', async () => {
    const p = await project({ retryPolicy: { maxRetries: 2, initialDelayMs: 50, factor: 1, maxDelayMs: 50 } });
    let calls = 0;
    eventAnswers.set(p.eventsPath, () => ({ status: ++calls === 1 ? 503 : 200 }));
    const failing = await project({ retryPolicy: { maxRetries: 1, initialDelayMs: 50, factor: 1, maxDelayMs: 50 } });
    eventAnswers.set(failing.eventsPath, () => ({ status: 500 }));
    // maxRetries 2 for the job too: its three attempts fail before job.failed.
    await dispatch(p, { status: 500 });
    await dispatch(failing, { status: 500 });
    const delivered = await eventually(() => listEvents(p), { what: 'the event delivered on its second attempt', until: (b) => b.events[0]?.status === 'DELIVERED' });
    expect(delivered.events[0]).toMatchObject({ type: 'job.failed', attemptCount: 2, lastError: 'HTTP 503', data: { attemptCount: 3 } });
    expect(eventsAt(p.eventsPath).map((r) => r.json.eventId)).toEqual([delivered.events[0].eventId, delivered.events[0].eventId]);
    const given = await eventually(() => listEvents(failing), { what: 'the event FAILED after its retries', until: (b) => b.events[0]?.status === 'FAILED' });
    // Counted once the attempt's outcome is written, a moment after the list shows it.
    const metrics = await eventually(async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body, {
      what: 'the failed event counted',
      until: (body) => /punctual_event_attempts_total\{type="job.failed",result="failed"\} [1-9]/.test(body),
    });
    expect(metrics).toMatch(/punctual_event_attempts_total\{type="job.failed",result="retry"\} [1-9]/);
    expect(given.events[0]).toMatchObject({ attemptCount: 2, lastError: 'HTTP 500', nextAttemptAt: null });
    expect(eventsAt(failing.eventsPath)).toHaveLength(2);
  });

  it('sends one webhook.failing for a run of failed attempts and one webhook.recovered at the first success', async () => {
    const p = await project({ deliveryConcurrency: 1 });
    for (let i = 0; i < 25; i++) await dispatch(p, { status: 500, i });
    const types = () => eventsAt(p.eventsPath).map((r) => r.json.type);
    await receiver.waitFor(() => types().filter((type) => type === 'job.failed').length === 25);
    await receiver.waitFor(() => types().includes('webhook.failing'));
    const failing = eventsAt(p.eventsPath).find((r) => r.json.type === 'webhook.failing')!;
    expect(failing.json.data).toEqual({ consecutiveFailures: 10, lastError: 'HTTP 500', since: expect.any(String) });
    await dispatch(p, { ok: true });
    await dispatch(p, { ok: true });
    await receiver.waitFor(() => types().includes('webhook.recovered'));
    const recovered = eventsAt(p.eventsPath).find((r) => r.json.type === 'webhook.recovered')!;
    expect(recovered.json.data).toEqual({ failingSince: failing.json.data && (failing.json.data as { since: string }).since, heldFor: null });
    // Exactly one of each: poll the list until every event is settled, then count.
    const settled = await eventually(() => listEvents(p), {
      what: 'every event delivered',
      until: (b) => b.events.length === 27 && b.events.every((e: { status: string }) => e.status === 'DELIVERED'),
    });
    const count = (type: string) => settled.events.filter((e: { type: string }) => e.type === type).length;
    expect([count('job.failed'), count('webhook.failing'), count('webhook.recovered')]).toEqual([25, 1, 1]);
  });

  it('sends {"text": …} to a Slack-compatible URL when eventsFormat is slack', async () => {
    const p = await project({ eventsFormat: 'slack', name: 'Billing <prod> & co' });
    const jobId = await dispatch(p, { status: 500 });
    await receiver.waitFor(() => eventsAt(p.eventsPath).length === 1);
    const [request] = eventsAt(p.eventsPath);
    expect(request!.json).toEqual({ text: `[Punctual] Billing &lt;prod&gt; &amp; co: job ${jobId} failed after 1 attempt: HTTP 500` });
    expect(request!.headers['webhook-id']).toMatch(/^evt_/);
    expect(request!.headers.authorization).toBeUndefined();
  });

  it('lists the events of a project without an eventsUrl as NOT_SENT, and sends nothing', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { maxRetries: 0 } } });
    const jobId = await dispatch(p, { status: 500 });
    await eventually(async () => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json().status, { what: 'FAILED', until: (s) => s === 'FAILED' });
    const listed = await eventually(async () => (await listEvents(p)).events, { what: 'job.failed listed', until: (events) => events.length > 0 });
    expect(listed).toMatchObject([{ type: 'job.failed', status: 'NOT_SENT', attemptCount: 0, nextAttemptAt: null, data: { jobId } }]);
  });

  it('keeps the health of a project without an eventsUrl too: failing at 10 failures in a row, healthy at the next success, and no event', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { maxRetries: 0 }, deliveryConcurrency: 1 } });
    for (let i = 0; i < 10; i++) await dispatch(p, { status: 503, i });
    const health = await eventually(() => t.services.manage.health(p.projectId), { what: 'failing', until: (h) => h.state === 'failing' });
    expect(health).toMatchObject({ state: 'failing', consecutiveFailures: 10, lastError: 'HTTP 503', since: expect.any(Number) });
    await dispatch(p, { ok: true });
    await eventually(() => t.services.manage.health(p.projectId), { what: 'healthy', until: (h) => h.state === 'healthy' && h.consecutiveFailures === 0 });
    // Listed (the activity feed), not sent.
    const listed = (await listEvents(p)).events.filter((e: { type: string }) => e.type.startsWith('webhook.'));
    expect(listed.map((e: { type: string; status: string }) => [e.type, e.status])).toEqual([
      ['webhook.recovered', 'NOT_SENT'],
      ['webhook.failing', 'NOT_SENT'],
    ]);
  });
});
