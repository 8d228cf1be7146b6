import { request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

describe('HTTP-level errors in the contract shape', () => {
  let t: TestApp;
  let p: TestProject;

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
  });
  afterAll(() => t.close());

  describe('authentication comes first under /api/', () => {
    it.each([
      ['no Authorization header', undefined],
      ['a non-bearer scheme', 'Basic abc'],
      ['a malformed key', 'Bearer nope'],
      ['an unknown key', `Bearer pk_${'A'.repeat(40)}`],
    ])('answers 401 for %s', async (_name, authorization) => {
      const res = await t.app.inject({ method: 'GET', url: '/api/jobs', headers: authorization ? { authorization } : {} });
      expectContractError(res, 401, 'UNAUTHORIZED');
    });

    it('answers 401 whatever the path or body', async () => {
      expectContractError(await t.app.inject({ method: 'GET', url: '/api/no-such-route' }), 401, 'UNAUTHORIZED');
      const huge = await t.app.inject({ method: 'POST', url: '/api/jobs/dispatch', payload: 'x'.repeat(100_000), headers: { 'content-type': 'text/plain' } });
      expectContractError(huge, 401, 'UNAUTHORIZED');
    });

    it('refuses a key revoked through another connection (the CLI) at once', async () => {
      const key = await t.services.manage.createKey(p.projectId, { name: 'elsewhere' });
      expect((await t.api(key.key, { method: 'GET', url: '/api/jobs' })).statusCode).toBe(200);
      const config = loadConfig({ DATABASE_URL: t.databaseUrl, PUNCTUAL_SECRET_KEY: 'unused-here-0123456789abcdef0123456789' });
      const other = await openStore(config.database);
      try {
        await other.apiKeyRevoke({ keyId: key.keyId, now: t.clock.now() });
      } finally {
        await other.close();
      }
      expectContractError(await t.api(key.key, { method: 'GET', url: '/api/jobs' }), 401, 'UNAUTHORIZED');
    });

    it('refuses a revoked key from the moment it is revoked', async () => {
      const key = await t.services.manage.createKey(p.projectId, { name: 'temp' });
      const ok = await t.api(key.key, { method: 'GET', url: '/api/jobs' });
      expect(ok.statusCode).toBe(200);
      await t.services.manage.revokeKey(key.keyId);
      expectContractError(await t.api(key.key, { method: 'GET', url: '/api/jobs' }), 401, 'UNAUTHORIZED');
    });
  });

  it('refuses a body over 64 KiB before parsing it', async () => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: `{${' '.repeat(70_000)}`, headers: { 'content-type': 'application/json' } });
    expectContractError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(JSON.parse(res.body).data.limit).toBe(65_536);
  });

  it.each([
    ['malformed JSON', '{"payload": {', 'application/json'],
    ['truncated JSON', '{"payload": {"a": 1}', 'application/json'],
    ['a JSON array', '[{"payload": {}}]', 'application/json'],
    ['a JSON string', '"payload"', 'application/json'],
    ['JSON null', 'null', 'application/json'],
    ['an empty body', '', 'application/json'],
  ])('answers INVALID_REQUEST for %s', async (_name, payload, contentType) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload, headers: { 'content-type': contentType } });
    expectContractError(res, 400, 'INVALID_REQUEST');
  });

  it('refuses JSON nested more than 1,000 levels deep with INVALID_REQUEST instead of overflowing the stack', async () => {
    const nested = (depth: number) => `{"payload":{"a":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;
    expect((await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: nested(1_000) })).statusCode).toBe(201);
    expectContractError(await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: nested(1_001) }), 400, 'INVALID_REQUEST');
    // Brackets inside strings are text, not nesting.
    expect((await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: JSON.stringify({ payload: { a: '['.repeat(5_000) } }) })).statusCode).toBe(201);
    expectContractError(await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: `{"jobs":${'['.repeat(30_000)}` }), 400, 'INVALID_REQUEST');
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['JSON in latin1', 'application/json; charset=latin1'],
    ['JSON with another parameter', 'application/json; foo=bar'],
  ])('answers UNSUPPORTED_MEDIA_TYPE for %s', async (_name, contentType) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: '{"payload":{}}', headers: { 'content-type': contentType } });
    expectContractError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it.each([
    ['application/json', 'application/json'],
    ['charset=utf-8', 'application/json; charset=utf-8'],
    ['charset=UTF-8', 'Application/JSON;charset=UTF-8'],
    ['a +json type', 'application/vnd.dispatched+json'],
  ])('accepts %s', async (_name, contentType) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: '{"payload":{}}', headers: { 'content-type': contentType } });
    expect(res.statusCode).toBe(201);
  });

  it('answers a request without a Host header in the contract shape (over a real socket), not with Node\'s bare 400', async () => {
    if (!t.app.server.listening) await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.end('GET /api/jobs HTTP/1.1\r\nConnection: close\r\n\r\n');
    });
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 401 .*content-type: application\/json/is);
    expect(JSON.parse(body!)).toMatchObject({ error: 'UNAUTHORIZED', data: { message: expect.any(String) } });
  });

  it('parses a body sent without Content-Type as JSON (over a real socket)', async () => {
    if (!t.app.server.listening) await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const body = '{"payload":{"raw":true}}';
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: '/api/jobs/dispatch', headers: { authorization: `Bearer ${p.key}`, 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.status).toBe(201);
    expect(JSON.parse(answer.body).status).toBe('QUEUED');
  });

  it('accepts Content-Type: application/json with an empty body on GET and DELETE', async () => {
    const created = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
    const jobId = created.json().jobId;
    const get = await t.api(p.key, { method: 'GET', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' } });
    expect(get.statusCode).toBe(200);
    const del = await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${jobId}`, headers: { 'content-type': 'application/json' }, payload: '' });
    expect(del.statusCode).toBe(200);
  });

  it('answers NOT_FOUND for unknown routes and methods, and for undecodable URLs', async () => {
    expectContractError(await t.app.inject({ method: 'GET', url: '/nope' }), 404, 'NOT_FOUND');
    expectContractError(await t.api(p.key, { method: 'PUT', url: '/api/jobs/dispatch' }), 404, 'NOT_FOUND');
    expectContractError(await t.api(p.key, { method: 'GET', url: '/api/jobs/%E0%A4%A' }), 404, 'NOT_FOUND');
  });

  it('answers UNAUTHORIZED on /manage without the admin token, and not with an API key', async () => {
    expectContractError(await t.app.inject({ method: 'GET', url: `/manage/v1/teams/${p.teamId}` }), 401, 'UNAUTHORIZED');
    expectContractError(await t.api(p.key, { method: 'GET', url: `/manage/v1/teams/${p.teamId}` }), 401, 'UNAUTHORIZED');
  });

  it('echoes a request id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers['x-request-id']).toBe('abc-123');
  });
});

describe('tenant isolation', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp();
  });
  afterAll(() => t.close());

  it("answers NOT_FOUND for another project's job on every job endpoint, and changes nothing", async () => {
    const mine = await t.makeProject();
    const theirs = await t.makeProject();
    const jobId = (await t.api(theirs.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { secret: 1 } } })).json().jobId;
    const attempts = [
      { method: 'GET', url: `/api/jobs/${jobId}` },
      { method: 'DELETE', url: `/api/jobs/${jobId}` },
      { method: 'PATCH', url: `/api/jobs/${jobId}`, payload: { scheduledFor: null } },
      { method: 'GET', url: `/api/jobs/${jobId}/attempts` },
      { method: 'POST', url: `/api/jobs/${jobId}/retry` },
    ] as const;
    for (const request of attempts) {
      const res = await t.api(mine.key, request);
      expect(res.statusCode, `${request.method} ${request.url}`).toBe(404);
      expect(res.json().error).toBe('NOT_FOUND');
    }
    const list = await t.api(mine.key, { method: 'GET', url: '/api/jobs' });
    expect(list.json().jobs).toEqual([]);
    const status = await t.api(theirs.key, { method: 'GET', url: `/api/jobs/${jobId}` });
    expect(status.json()).toMatchObject({ status: 'QUEUED', scheduledFor: null, updatedAt: status.json().createdAt });
  });

  it('a key sees its project only, while two keys of one project share it', async () => {
    const p = await t.makeProject();
    const second = await t.services.manage.createKey(p.projectId, { name: 'second' });
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId;
    expect((await t.api(second.key, { method: 'GET', url: `/api/jobs/${jobId}` })).statusCode).toBe(200);
  });
});
