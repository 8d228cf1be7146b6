import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabase } from '../support/make-app.js';
import { OtlpReceiver } from '../support/otlp-receiver.js';
import { TestReceiver, type ReceivedRequest } from '../support/receiver.js';
import { eventually } from '../support/eventually.js';
import { freePort, startFirstServer, type FirstStart } from '../support/spawn-punctual.js';
import { makeTempDir } from '../support/temp-dir.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_ID = 'b7ad6b7169203331';
const REPORT_SDK = new URL('../support/report-otel-sdk.mjs', import.meta.url).href;

const SERVER = 2;
const CLIENT = 3;
const INTERNAL = 1;
const STATUS_ERROR = 2;

const spanIdOf = (request: ReceivedRequest): { traceId: string; spanId: string } => {
  const [, traceId = '', spanId = ''] = String(request.headers.traceparent).split('-');
  return { traceId, spanId };
};

/**
 * A real `punctual serve` with OTEL_EXPORTER_OTLP_ENDPOINT pointed at a local OTLP/HTTP receiver,
 * and one without it. The batch's schedule delay is a minute, so spans reach the receiver only
 * through the flush on graceful shutdown.
 */
describe('OpenTelemetry export (real process)', () => {
  const dir = makeTempDir();
  let otlp: OtlpReceiver;
  let webhook: TestReceiver;

  beforeAll(async () => {
    otlp = await new OtlpReceiver().start();
    webhook = await new TestReceiver().start();
  });
  afterAll(async () => {
    await otlp.close();
    await webhook.close();
    dir.remove();
  });

  async function serve(name: string, otel: Record<string, string>): Promise<FirstStart & { drop: () => Promise<void> }> {
    const database = await testDatabase(join(dir.path, `${name}.db`));
    const env = {
      DATABASE_URL: database.url,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      PUNCTUAL_SECRET_KEY: 'otlp-export-test-secret-key-0123456789',
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${REPORT_SDK}`.trim(),
      OTEL_EXPORTER_OTLP_ENDPOINT: '',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
      ...otel,
    };
    // The webhook URL's query value stands for a receiver's token: spans must not carry it.
    const settings = { webhookUrl: `${webhook.url}/T0001/s3cretPath?token=s3cret`, retryPolicy: { initialDelayMs: 50, factor: 2, maxDelayMs: 1000 } };
    return { ...(await startFirstServer(env, settings)), drop: database.drop };
  }

  async function dispatch(server: FirstStart, headers: Record<string, string>): Promise<string> {
    const res = await fetch(`${server.base}/api/jobs/dispatch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ payload: { traced: true } }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { jobId: string }).jobId;
  }

  const completed = (server: FirstStart, jobId: string) =>
    eventually(
      async () => {
        const res = await fetch(`${server.base}/api/jobs/${jobId}`, { headers: { authorization: `Bearer ${server.key}` } });
        return ((await res.json()) as { status: string }).status;
      },
      { what: `job ${jobId} COMPLETED`, until: (status) => status === 'COMPLETED' },
    );

  /** One job dispatched with TRACE_ID's traceparent and delivered, on a server stopped gracefully (flushing its spans) afterwards. */
  async function deliverOneTracedJob(name: string, otel: Record<string, string>): Promise<{ server: FirstStart; jobId: string }> {
    const server = await serve(name, otel);
    let jobId = '';
    try {
      webhook.answer({ status: 200 });
      jobId = await dispatch(server, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` });
      await completed(server, jobId);
    } finally {
      expect(await server.server.stop('SIGTERM')).toBe(0);
      await server.drop();
    }
    return { server, jobId };
  }

  it('exports dispatch, claim and attempt spans in the dispatch\'s trace; each delivery carries its attempt span\'s id', async () => {
    const server = await serve('on', { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_BSP_SCHEDULE_DELAY: '60000' });
    let tracedJob = '';
    let untracedJob = '';
    try {
      let calls = 0;
      webhook.answer(() => (++calls === 1 ? { status: 500, body: 'once' } : { status: 200, body: 'ok' }));
      tracedJob = await dispatch(server, { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01`, tracestate: 'vendor=1' });
      await completed(server, tracedJob);
      untracedJob = await dispatch(server, {});
      await completed(server, untracedJob);
      // Nothing is exported before the batch's delay (a minute) or the shutdown.
      expect(otlp.requests).toEqual([]);
    } finally {
      expect(await server.server.stop('SIGTERM')).toBe(0);
      await server.drop();
    }
    expect(server.server.output()).toContain('opentelemetry sdk loaded: true');
    expect(otlp.requests.length).toBeGreaterThan(0);
    expect(otlp.requests.every((r) => r.path === '/v1/traces' && r.contentType?.startsWith('application/json'))).toBe(true);

    const spans = otlp.spans;
    expect(spans.every((span) => span.resource['service.name'] === 'punctual')).toBe(true);
    const ofJob = (jobId: string, name: string) => spans.filter((span) => span.name === name && span.attributes['punctual.job.id'] === jobId);
    const dispatches = spans.filter((span) => span.name === 'dispatch');
    expect(dispatches).toHaveLength(2);

    // The dispatch that carried a traceparent: its span is the client's child, in the client's trace.
    const dispatch1 = dispatches.find((span) => span.traceId === TRACE_ID)!;
    expect(dispatch1).toMatchObject({ parentSpanId: PARENT_ID, kind: SERVER });
    expect(dispatch1.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/jobs/dispatch', 'http.response.status_code': 201 });
    expect(dispatch1.attributes['punctual.project.id']).toMatch(/^prj_/);

    // A claim span per claim of the job (the first try and the retry), children of the dispatch span.
    const claims = ofJob(tracedJob, 'claim');
    expect(claims).toHaveLength(2);
    for (const claim of claims) {
      expect(claim).toMatchObject({ traceId: TRACE_ID, parentSpanId: dispatch1.spanId, kind: INTERNAL });
      expect(claim.attributes['punctual.worker.id']).toMatch(/^wrk_/);
      expect(typeof claim.attributes['punctual.claim.at_dispatch']).toBe('boolean');
    }

    // One CLIENT span per attempt, child of the dispatch span; the delivery's traceparent names it.
    const attempts = ofJob(tracedJob, 'attempt').sort((a, b) => Number(a.attributes['punctual.attempt.number']) - Number(b.attributes['punctual.attempt.number']));
    expect(attempts.map((span) => [span.attributes['punctual.attempt.number'], span.attributes['http.response.status_code'], span.attributes['punctual.attempt.outcome']])).toEqual([
      [1, 500, 'http_error'],
      [2, 200, 'success'],
    ]);
    const deliveries = webhook.forJob(tracedJob);
    expect(deliveries).toHaveLength(2);
    for (const [i, span] of attempts.entries()) {
      expect(span).toMatchObject({ traceId: TRACE_ID, parentSpanId: dispatch1.spanId, kind: CLIENT });
      expect(span.attributes['punctual.attempt.id']).toBe(deliveries[i]!.json.attemptId);
      expect(spanIdOf(deliveries[i]!)).toEqual({ traceId: TRACE_ID, spanId: span.spanId });
      expect(deliveries[i]!.headers.traceparent).toBe(`00-${TRACE_ID}-${span.spanId}-01`);
      expect(deliveries[i]!.headers.tracestate).toBe('vendor=1');
      expect(span.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': '127.0.0.1' });
      // Scheme, host and port only: the URL's path and query may carry the receiver's token.
      expect(span.attributes).toMatchObject({ 'url.scheme': 'http', 'server.port': Number(new URL(webhook.url).port) });
      expect(span.attributes['url.full']).toBeUndefined();
      expect(JSON.stringify(span.attributes)).not.toMatch(/s3cret|T0001|\/hook/);
    }
    expect(attempts[0]!.status).toMatchObject({ code: STATUS_ERROR, message: 'HTTP 500' });
    expect(attempts[0]!.attributes['error.type']).toBe('500');
    expect(attempts[1]!.status.code ?? 0).not.toBe(STATUS_ERROR);

    // A dispatch without a traceparent starts a trace of its own, which its delivery continues.
    const dispatch2 = dispatches.find((span) => span !== dispatch1)!;
    expect(dispatch2.parentSpanId).toBe('');
    const [attempt2] = ofJob(untracedJob, 'attempt');
    expect(attempt2).toMatchObject({ traceId: dispatch2.traceId, parentSpanId: dispatch2.spanId });
    expect(spanIdOf(webhook.forJob(untracedJob)[0]!)).toEqual({ traceId: dispatch2.traceId, spanId: attempt2!.spanId });
    expect(JSON.stringify(spans)).not.toContain('s3cret');
  });

  it('exports protobuf with OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf', async () => {
    const before = otlp.requests.length;
    const { jobId } = await deliverOneTracedJob('protobuf', { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' });
    const requests = otlp.requests.slice(before);
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.every((r) => r.path === '/v1/traces' && r.contentType === 'application/x-protobuf')).toBe(true);
    // Protobuf keeps strings as UTF-8 and trace ids as raw bytes: the job's spans are in there.
    const bodies = Buffer.concat(otlp.protobufBodies);
    for (const text of [jobId, 'punctual.job.id', 'dispatch', 'claim', 'attempt']) expect(bodies.includes(Buffer.from(text))).toBe(true);
    expect(bodies.includes(Buffer.from(TRACE_ID, 'hex'))).toBe(true);
  });

  it('without OTEL_EXPORTER_OTLP_ENDPOINT loads no SDK and exports nothing, and still continues the traceparent', async () => {
    const before = otlp.requests.length;
    const { server, jobId } = await deliverOneTracedJob('off', {});
    expect(server.server.output()).toContain('opentelemetry sdk loaded: false');
    expect(otlp.requests.length).toBe(before);
    const delivered = spanIdOf(webhook.forJob(jobId)[0]!);
    expect(delivered.traceId).toBe(TRACE_ID);
    expect(delivered.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(delivered.spanId).not.toBe(PARENT_ID);
  });
});
