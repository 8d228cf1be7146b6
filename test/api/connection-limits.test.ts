import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { rawRequest } from '../support/raw-http.js';

/** A socket to the app, resolved once connected; `answer` is what it received by the time it closed. */
function open(port: number): Promise<{ socket: Socket; closed: Promise<{ answer: string; afterMs: number }> }> {
  return new Promise((resolve, reject) => {
    const startedAt = Date.now();
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', reject);
    const closed = new Promise<{ answer: string; afterMs: number }>((done) => socket.on('close', () => done({ answer, afterMs: Date.now() - startedAt })));
    socket.on('connect', () => resolve({ socket, closed }));
  });
}

/** Waits for `promise` up to `ms`, else resolves 'open'. */
const within = <T>(promise: Promise<T>, ms: number) => Promise.race([promise, new Promise<'open'>((done) => setTimeout(() => done('open'), ms))]);

describe('inbound deadlines and connection bounds (SPEC section 8)', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    // The contract's deadline is 30 s; the same code path at 1 s keeps the test short.
    t = await makeTestApp({ env: { PUNCTUAL_REQUEST_TIMEOUT_MS: '1000', PUNCTUAL_MAX_CONNECTIONS: '3' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it('answers 408 and closes a connection whose body has not fully arrived by the deadline, trickling or not', async () => {
    const { socket, closed } = await open(port);
    socket.write('POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nemail=');
    const trickle = setInterval(() => socket.writable && socket.write('a'), 200);
    const result = await within(closed, 10_000);
    clearInterval(trickle);
    expect(result).not.toBe('open');
    const { answer, afterMs } = result as { answer: string; afterMs: number };
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(afterMs).toBeGreaterThanOrEqual(1000);
  });

  it('closes a connection that sends nothing by the deadline, and one that sends its headers too slowly', async () => {
    const idle = await open(port);
    const slowHeaders = await open(port);
    slowHeaders.socket.write('GET /healthz HTTP/1.1\r\n');
    const trickle = setInterval(() => slowHeaders.socket.writable && slowHeaders.socket.write('X-Slow: 1\r\n'), 200);
    const results = await Promise.all([within(idle.closed, 10_000), within(slowHeaders.closed, 10_000)]);
    clearInterval(trickle);
    expect(results).not.toContain('open');
  });

  it('holds no more connections at once than PUNCTUAL_MAX_CONNECTIONS, and serves again once one ends', async () => {
    const held = await Promise.all([open(port), open(port), open(port)]);
    // Node closes a connection past the bound as it accepts it, before reading a byte.
    const extra = await open(port);
    const refused = await within(extra.closed, 5_000);
    expect(refused).toMatchObject({ answer: '' });
    held[0]!.socket.destroy();
    await held[0]!.closed;
    const served = await rawRequest(port, 'GET', '/healthz');
    expect(served.statusCode).toBe(200);
    for (const { socket } of held) socket.destroy();
  });
});
