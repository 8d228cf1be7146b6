import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { RESPONSE_BODY_LIMIT } from '../../src/delivery/webhook-client.js';
import { makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

const TIMEOUT_MS = 1_000;
const HUGE_BODY_BYTES = 50 * 1024 * 1024;

/** Writes `total` bytes of `byte` as fast as the socket takes them, stopping when it closes. */
function stream(res: ServerResponse, total: number, byte = 'x'): void {
  const chunk = Buffer.alloc(64 * 1024, byte);
  let sent = 0;
  const pump = () => {
    while (sent < total && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

/**
 * A webhook receiver that misbehaves in a different way on each path. `bytesSent` tells how much
 * of the huge body left the server before Punctual hung up.
 */
class MisbehavingReceiver {
  base = '';
  hugeBytesWritten = 0;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly server = createServer((req, res) => this.handle(req, res));

  async start(): Promise<this> {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const [path, query] = req.url!.split('?') as [string, string | undefined];
    switch (path) {
      case '/slow-headers':
        // Headers only after three timeouts.
        return this.later(3 * TIMEOUT_MS, () => res.writeHead(200).end('too late'));
      case '/slow-body': {
        res.writeHead(200, { 'content-length': '100' });
        const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write('x')), 200);
        res.on('close', () => clearInterval(drip));
        return;
      }
      case '/huge-body':
        res.writeHead(Number(query ?? 200), { 'content-type': 'text/plain' });
        res.socket!.on('close', () => (this.hugeBytesWritten = res.socket!.bytesWritten));
        return stream(res, HUGE_BODY_BYTES);
      case '/binary-body':
        // NUL bytes and invalid UTF-8: PostgreSQL text refuses U+0000.
        return void res.writeHead(200).end(Buffer.from([0x00, 0xff, 0xfe, 0x41, 0x00, 0xc3, 0x28, 0x42]));
      case '/reset':
        return void req.socket.destroy();
      case '/redirect':
        return void res.writeHead(302, { location: decodeURIComponent(query!) }).end();
      case '/retry-after':
        return void res.writeHead(429, { 'retry-after': decodeURIComponent(query!) }).end('slow down');
      case '/after-timeout':
        return this.later(1.5 * TIMEOUT_MS, () => res.writeHead(200).end('ok, but late'));
      default:
        return void res.writeHead(404).end();
    }
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * SPEC section 4 against a receiver that misbehaves: each case ends with the outcome the contract
 * names, within the per-attempt timeout, and a healthy project's deliveries go on meanwhile.
 */
describe(`receiver misbehaviour (${TEST_STORE})`, () => {
  let t: TestApp<typeof systemClock>;
  let bad: MisbehavingReceiver;
  let healthy: TestReceiver;
  let redirectTarget: TestReceiver;

  beforeAll(async () => {
    bad = await new MisbehavingReceiver().start();
    healthy = await new TestReceiver().start();
    redirectTarget = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterAll(async () => {
    await t.close();
    await bad.close();
    await healthy.close();
    await redirectTarget.close();
  });

  const projectFor = (webhookUrl: string) =>
    t.makeProject({ webhookUrl, settings: { deliveryTimeoutMs: TIMEOUT_MS, retryPolicy: { initialDelayMs: 200, factor: 1, maxDelayMs: 2_000 } } });
  const dispatch = async (p: TestProject, maxRetries = 0) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, maxRetries } });
    expect(res.statusCode).toBe(201);
    return res.json().jobId as string;
  };
  const job = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}` })).json();
  const attempts = async (p: TestProject, jobId: string) => (await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}/attempts` })).json().attempts;
  const settled = async (p: TestProject, jobId: string, timeoutMs = 15_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const body = await job(p, jobId);
      if (body.status === 'COMPLETED' || body.status === 'FAILED') return body;
      if (Date.now() > deadline) throw new Error(`job ${jobId} still ${body.status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('gives each misbehaviour its outcome within the timeout, and never stalls other deliveries', { timeout: 60_000 }, async () => {
    const cases = {
      slowHeaders: { url: `${bad.base}/slow-headers`, outcome: 'timeout', statusCode: null },
      slowBody: { url: `${bad.base}/slow-body`, outcome: 'timeout', statusCode: null },
      hugeBody: { url: `${bad.base}/huge-body?200`, outcome: 'success', statusCode: 200 },
      hugeErrorBody: { url: `${bad.base}/huge-body?500`, outcome: 'http_error', statusCode: 500 },
      binaryBody: { url: `${bad.base}/binary-body`, outcome: 'success', statusCode: 200 },
      reset: { url: `${bad.base}/reset`, outcome: 'network_error', statusCode: null },
      tlsToPlainPort: { url: `${bad.base.replace('http:', 'https:')}/hook`, outcome: 'network_error', statusCode: null },
      redirectToPrivate: { url: `${bad.base}/redirect?${encodeURIComponent(redirectTarget.url)}`, outcome: 'http_error', statusCode: 302 },
      redirectToMetadata: { url: `${bad.base}/redirect?${encodeURIComponent('http://169.254.169.254/latest/meta-data/')}`, outcome: 'http_error', statusCode: 302 },
      answerAfterTimeout: { url: `${bad.base}/after-timeout`, outcome: 'timeout', statusCode: null },
    } as const;
    const jobs = new Map<string, { p: TestProject; jobId: string; dispatchedAt: number }>();
    for (const [name, c] of Object.entries(cases)) {
      const p = await projectFor(c.url);
      jobs.set(name, { p, jobId: await dispatch(p), dispatchedAt: Date.now() });
    }
    // Meanwhile a healthy project's jobs are delivered at once, not behind the stuck ones.
    const good = await projectFor(healthy.url);
    const goodJobs = await Promise.all(Array.from({ length: 20 }, () => dispatch(good)));
    const healthyStarted = Date.now();
    await healthy.waitFor(() => goodJobs.every((id) => healthy.forJob(id).length === 1), TIMEOUT_MS, 'the healthy deliveries, before any timeout ends');
    expect(Date.now() - healthyStarted).toBeLessThan(TIMEOUT_MS);

    for (const [name, c] of Object.entries(cases)) {
      const { p, jobId } = jobs.get(name)!;
      const final = await settled(p, jobId);
      const [attempt] = await attempts(p, jobId);
      expect({ name, status: final.status, outcome: attempt.outcome, statusCode: attempt.statusCode }).toEqual({
        name,
        status: c.outcome === 'success' ? 'COMPLETED' : 'FAILED',
        outcome: c.outcome,
        statusCode: c.statusCode,
      });
      // Never longer than the timeout (plus scheduling slack), whatever the receiver does.
      expect(attempt.durationMs, name).toBeLessThan(TIMEOUT_MS + 500);
      if (attempt.responseBody !== null) expect(Buffer.byteLength(attempt.responseBody), name).toBeLessThanOrEqual(RESPONSE_BODY_LIMIT * 2);
    }
    const [huge] = await attempts(jobs.get('hugeBody')!.p, jobs.get('hugeBody')!.jobId);
    expect(huge.responseBody.length).toBeLessThanOrEqual(RESPONSE_BODY_LIMIT);
    expect(huge.responseBody.startsWith('xxxx')).toBe(true);
    // Punctual hung up after its 4 KB instead of reading 50 MB.
    expect(bad.hugeBytesWritten).toBeLessThan(HUGE_BODY_BYTES / 2);
    // Redirects are never followed, to a private address or anywhere else.
    expect(redirectTarget.requests).toHaveLength(0);
    expect(goodJobs.length).toBe(20);
    for (const id of goodJobs) expect((await settled(good, id)).status).toBe('COMPLETED');
  });

  it.each([
    ['a number of seconds beyond any clock', '99999999999999999999999999'],
    ['a huge exponent', '1e308'],
    ['a negative number', '-5'],
    ['Infinity', 'Infinity'],
    ['a date in year 9999', 'Fri, 31 Dec 9999 23:59:59 GMT'],
    ['a date in the past', 'Wed, 21 Oct 2015 07:28:00 GMT'],
    ['garbage', 'soon, maybe'],
  ])('429 with Retry-After %s: waits at most the policy maxDelay, then retries', { timeout: 30_000 }, async (_name, retryAfter) => {
    const p = await projectFor(`${bad.base}/retry-after?${encodeURIComponent(retryAfter)}`);
    const jobId = await dispatch(p, 1);
    const deadline = Date.now() + 10_000;
    let body = await job(p, jobId);
    while (body.attemptCount < 1 || body.status !== 'QUEUED') {
      if (body.status === 'FAILED') break;
      if (Date.now() > deadline) throw new Error(`job ${jobId} is ${body.status}`);
      await new Promise((r) => setTimeout(r, 20));
      body = await job(p, jobId);
    }
    const [first] = await attempts(p, jobId);
    expect(first).toMatchObject({ outcome: 'http_error', statusCode: 429 });
    if (body.status === 'QUEUED') {
      const wait = Date.parse(body.nextAttemptAt) - Date.parse(first.finishedAt);
      // At least the backoff (200 ms), at most maxDelay (2 s) plus 10% jitter.
      expect(wait).toBeGreaterThanOrEqual(200);
      expect(wait).toBeLessThanOrEqual(2_200);
    }
    const final = await settled(p, jobId, 10_000);
    expect(final).toMatchObject({ status: 'FAILED', attemptCount: 2 });
  });
});
