import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { FAILURES_BEFORE_DELAY } from '../../src/services/auth/login-throttle.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';

/**
 * The dashboard behind a reverse proxy, through app.inject (whose socket address is 127.0.0.1
 * unless a test says otherwise): which X-Forwarded-* headers count (PUNCTUAL_TRUST_PROXY), the
 * session cookie's Secure flag, and the Origin check when the proxy rewrites Host.
 */
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const PASSWORD = 'behind a proxy 1';

describe('PUNCTUAL_TRUST_PROXY', () => {
  it.each([
    [undefined, false],
    ['', false],
    ['false', false],
    ['NO', false],
    ['true', true],
    ['yes', true],
    ['0', false],
    ['1', 1],
    ['2', 2],
    ['127.0.0.1', ['127.0.0.1']],
    [' 10.0.0.0/8, ::1 ,fd00::/8,loopback ', ['10.0.0.0/8', '::1', 'fd00::/8', 'loopback']],
  ])('reads %j as %j', (value, expected) => {
    expect(loadConfig(value === undefined ? {} : { PUNCTUAL_TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it.each(['maybe', '10.0.0.0/33', '::1/129', '10.0.0.1,', 'proxy.internal', '101', '10.0.0.0/8/1'])('refuses %j, naming the variable', (value) => {
    expect(() => loadConfig({ PUNCTUAL_TRUST_PROXY: value })).toThrow(ConfigError);
    expect(() => loadConfig({ PUNCTUAL_TRUST_PROXY: value })).toThrow(/PUNCTUAL_TRUST_PROXY/);
  });
});

async function appWithUser(env: Record<string, string>): Promise<TestApp> {
  const t = await makeTestApp({ env });
  await t.services.users.create({ email: 'proxied@example.com', password: PASSWORD, teamIds: [], operator: true });
  return t;
}

function login(t: TestApp, options: { email?: string; password?: string; headers?: Record<string, string>; remoteAddress?: string } = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/login',
    ...(options.remoteAddress && { remoteAddress: options.remoteAddress }),
    headers: { ...FORM, ...options.headers },
    payload: new URLSearchParams({ email: options.email ?? 'proxied@example.com', password: options.password ?? PASSWORD }).toString(),
  });
}

/** Fails as many logins as one address is allowed before it is slowed, each for another email (so no account is). */
async function exhaustAddress(t: TestApp, headers: Record<string, string>, tag: string): Promise<void> {
  const failures = await Promise.all(
    Array.from({ length: FAILURES_BEFORE_DELAY.address }, (_, i) => login(t, { email: `${tag}${i}@example.com`, password: 'wrong guess', headers })),
  );
  expect(failures.map((response) => response.statusCode)).toEqual(Array(FAILURES_BEFORE_DELAY.address).fill(401));
}

describe('dashboard without PUNCTUAL_TRUST_PROXY', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await appWithUser({});
  });
  afterAll(() => t.close());

  it('ignores X-Forwarded-Proto: the cookie is not Secure', async () => {
    const response = await login(t, { headers: { 'x-forwarded-proto': 'https' } });
    expect(response.statusCode).toBe(303);
    expect(String(response.headers['set-cookie'])).not.toContain('Secure');
  });

  it('ignores X-Forwarded-For: a client cannot escape the address limit by writing another one', async () => {
    await exhaustAddress(t, { 'x-forwarded-for': '203.0.113.7' }, 'spoof');
    expect((await login(t, { headers: { 'x-forwarded-for': '203.0.113.8' } })).statusCode).toBe(429);
  });
});

describe('dashboard with PUNCTUAL_TRUST_PROXY set to the proxy address', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await appWithUser({ PUNCTUAL_TRUST_PROXY: '127.0.0.1' });
  });
  afterAll(() => t.close());

  it("makes the cookie Secure when the proxy says the request came over https, and only when it is the proxy that says so", async () => {
    const proxied = await login(t, { headers: { 'x-forwarded-proto': 'https' } });
    expect(proxied.statusCode).toBe(303);
    expect(String(proxied.headers['set-cookie'])).toContain('Secure');
    const plain = await login(t, { headers: { 'x-forwarded-proto': 'http' } });
    expect(String(plain.headers['set-cookie'])).not.toContain('Secure');
    const direct = await login(t, { headers: { 'x-forwarded-proto': 'https' }, remoteAddress: '192.0.2.50' });
    expect(String(direct.headers['set-cookie'])).not.toContain('Secure');
  });

  it("counts failed logins per client address as the proxy gives it, not per proxy", async () => {
    await exhaustAddress(t, { 'x-forwarded-for': '203.0.113.7' }, 'client');
    expect((await login(t, { headers: { 'x-forwarded-for': '203.0.113.7' } })).statusCode).toBe(429);
    expect((await login(t, { headers: { 'x-forwarded-for': '203.0.113.8' } })).statusCode).toBe(303);
  });

  it('counts an IPv6 client the proxy gives by its /64, however it spells the address', async () => {
    await exhaustAddress(t, { 'x-forwarded-for': '2001:db8:77:1::1' }, 'six');
    expect((await login(t, { headers: { 'x-forwarded-for': '2001:DB8:77:1:a:b:c:d' } })).statusCode).toBe(429);
    expect((await login(t, { headers: { 'x-forwarded-for': '2001:db8:77:2::1' } })).statusCode).toBe(303);
  });

  it("takes a POST whose Origin is the one the trusted proxy's X-Forwarded-Host names", async () => {
    const session = await login(t);
    const cookie = String(session.headers['set-cookie']).split(';')[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } })).body)![1]!;
    const logout = (headers: Record<string, string>, remoteAddress?: string) =>
      t.app.inject({ method: 'POST', url: '/logout', ...(remoteAddress && { remoteAddress }), headers: { ...FORM, cookie, ...headers }, payload: `_csrf=${csrf}` });
    const forwarded = { host: 'punctual-upstream:8080', 'x-forwarded-host': 'dash.example.com', origin: 'https://dash.example.com' };
    expect((await logout(forwarded, '192.0.2.50')).statusCode).toBe(403);
    expect((await logout(forwarded)).statusCode).toBe(303);
  });
});

describe('dashboard with PUNCTUAL_TRUST_PROXY as a hop count', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await appWithUser({ PUNCTUAL_TRUST_PROXY: '1' });
  });
  afterAll(() => t.close());

  // Fastify 5 trusts no hop when given a number: this fails if the count reaches it as one.
  it('believes the nearest proxy', async () => {
    const response = await login(t, { headers: { 'x-forwarded-proto': 'https' } });
    expect(String(response.headers['set-cookie'])).toContain('Secure');
  });
});

describe('dashboard behind a proxy that rewrites Host', () => {
  let t: TestApp;
  let teamId: string;
  let cookie: string;
  let csrf: string;
  beforeAll(async () => {
    t = await appWithUser({ PUNCTUAL_PUBLIC_URL: 'https://jobs.example.com' });
    teamId = (await t.services.manage.createTeam({ name: 'proxied', plan: 'unlimited' })).teamId;
    const session = await login(t);
    cookie = String(session.headers['set-cookie']).split(';')[0]!;
    csrf = /name="_csrf" value="([^"]+)"/.exec((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } })).body)![1]!;
  });
  afterAll(() => t.close());

  const createProject = (origin: string) =>
    t.app.inject({
      method: 'POST',
      url: `/teams/${teamId}/projects`,
      headers: { ...FORM, cookie, host: 'punctual-upstream:8080', origin },
      payload: new URLSearchParams({ _csrf: csrf, name: 'through the proxy' }).toString(),
    });

  it("takes a form whose Origin is PUNCTUAL_PUBLIC_URL's though Host names the upstream", async () => {
    expect((await createProject('https://jobs.example.com')).statusCode).toBe(201);
  });

  it('still refuses another origin, and the public host over another scheme or port', async () => {
    for (const origin of ['https://evil.example', 'http://jobs.example.com', 'https://jobs.example.com:8443']) {
      const response = await createProject(origin);
      expect(response.statusCode, origin).toBe(403);
      expect(response.body).toContain('This form could not be accepted');
    }
    expect((await t.services.manage.listProjects(teamId)).projects).toHaveLength(1);
  });
});
