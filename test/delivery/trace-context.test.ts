import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver, type ReceivedRequest } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;
const TRACESTATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';
const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A delivery's traceparent, split; fails when it has none or it is malformed. */
function traceOf(request: ReceivedRequest): { traceId: string; spanId: string; flags: string } {
  const match = W3C.exec(String(request.headers.traceparent));
  expect(match, `traceparent of ${request.json.jobId}: ${request.headers.traceparent}`).not.toBeNull();
  return { traceId: match![1]!, spanId: match![2]!, flags: match![3]! };
}

/** SPEC section 4: a dispatch's W3C traceparent is continued onto each delivery, with a span id of the delivery's own. */
describe('trace context on deliveries', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterEach(() => receiver.answer({ status: 200, body: 'ok' }));
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const project = () => t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { initialDelayMs: 50, factor: 2, maxDelayMs: 1000 } } });
  const dispatch = async (p: TestProject, headers: Record<string, string>, body: Record<string, unknown> = { payload: { n: 1 } }) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: body, headers });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const status = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json();
  const waitForStatus = (p: TestProject, jobId: string, wanted: string) =>
    eventually(() => status(p, jobId), { what: `job ${jobId} ${wanted}`, until: (body) => body.status === wanted });

  it('continues the trace on every attempt, each with a span id of its own, through retries and a retry after FAILED', async () => {
    const p = await project();
    receiver.answer({ status: 500, body: 'no' });
    const jobId = await dispatch(p, { traceparent: TRACEPARENT, tracestate: TRACESTATE }, { payload: {}, maxRetries: 1 });
    await waitForStatus(p, jobId, 'FAILED');
    receiver.answer({ status: 200 });
    expect((await t.api(p.key, { method: 'POST', url: `/api/jobs/${jobId}/retry` })).statusCode).toBe(200);
    await waitForStatus(p, jobId, 'COMPLETED');

    const deliveries = receiver.forJob(jobId);
    expect(deliveries.map((r) => r.json.attemptNumber)).toEqual([1, 2, 1]);
    const traces = deliveries.map(traceOf);
    for (const trace of traces) expect(trace).toMatchObject({ traceId: TRACE_ID, flags: '01' });
    const spanIds = traces.map((trace) => trace.spanId);
    expect(new Set([...spanIds, PARENT_ID]).size).toBe(4);
    expect(spanIds.every((id) => id !== '0000000000000000')).toBe(true);
    for (const delivery of deliveries) expect(delivery.headers.tracestate).toBe(TRACESTATE);
  });

  it('keeps the flags as sent (not sampled stays not sampled)', async () => {
    const p = await project();
    const jobId = await dispatch(p, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` });
    await waitForStatus(p, jobId, 'COMPLETED');
    expect(traceOf(receiver.forJob(jobId)[0]!)).toMatchObject({ traceId: TRACE_ID, flags: '00' });
    expect(receiver.forJob(jobId)[0]!.headers.tracestate).toBeUndefined();
  });

  it('sends no traceparent for a job dispatched without one', async () => {
    const p = await project();
    const jobId = await dispatch(p, {});
    await waitForStatus(p, jobId, 'COMPLETED');
    const [delivery] = receiver.forJob(jobId);
    expect(delivery!.headers.traceparent).toBeUndefined();
    expect(delivery!.headers.tracestate).toBeUndefined();
  });

  it.each([
    ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
    ['an all-zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
    ['version 00 with more fields', `00-${TRACE_ID}-${PARENT_ID}-01-extra`],
    ['a short trace id', `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`],
    ['two headers joined', `${TRACEPARENT}, 00-${TRACE_ID}-${'1'.repeat(16)}-01`],
    ['no header shape at all', 'hello'],
  ])('ignores an invalid traceparent (%s): 201, and the delivery carries none', async (_what, traceparent) => {
    const p = await project();
    const jobId = await dispatch(p, { traceparent, tracestate: TRACESTATE });
    await waitForStatus(p, jobId, 'COMPLETED');
    const [delivery] = receiver.forJob(jobId);
    expect(delivery!.headers.traceparent).toBeUndefined();
    expect(delivery!.headers.tracestate).toBeUndefined();
  });

  it('reads a later version by its first four fields and sends version 00; drops an invalid tracestate', async () => {
    const p = await project();
    const jobId = await dispatch(p, { traceparent: `01-${TRACE_ID}-${PARENT_ID}-01-what-comes-next`, tracestate: 'Not A Key=1' });
    await waitForStatus(p, jobId, 'COMPLETED');
    const [delivery] = receiver.forJob(jobId);
    expect(traceOf(delivery!)).toMatchObject({ traceId: TRACE_ID, flags: '01' });
    expect(delivery!.headers.tracestate).toBeUndefined();
  });

  it('carries a batch dispatch\'s traceparent to each of its jobs', async () => {
    const p = await project();
    const res = await t.api(p.key, {
      method: 'POST',
      url: '/api/jobs/dispatch/batch',
      payload: { jobs: [{ payload: { i: 1 } }, { payload: 'invalid' }, { payload: { i: 3 }, scheduledFor: new Date(Date.now() + 300).toISOString() }] },
      headers: { traceparent: TRACEPARENT },
    });
    expect(res.statusCode).toBe(200);
    const jobIds = (res.json().jobs as { jobId?: string }[]).flatMap((job) => (job.jobId ? [job.jobId] : []));
    expect(jobIds).toHaveLength(2);
    for (const jobId of jobIds) await waitForStatus(p, jobId, 'COMPLETED');
    const traces = jobIds.map((jobId) => traceOf(receiver.forJob(jobId)[0]!));
    expect(traces.map((trace) => trace.traceId)).toEqual([TRACE_ID, TRACE_ID]);
    expect(traces[0]!.spanId).not.toBe(traces[1]!.spanId);
  });
});
