import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILURES_BEFORE_DELAY, LOGIN_WINDOW_MS } from '../../src/services/auth/login-throttle.js';
import { SESSION_TTL_MS } from '../../src/services/auth/session-service.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

/**
 * Dashboard authentication through app.inject, on both stores (sessions live in the database):
 * login, cookies, rotation, throttling, CSRF on forms and on /manage/v1, and team scoping.
 */
describe('dashboard sessions', () => {
  let t: TestApp;
  let mine: TestProject;
  let theirs: TestProject;
  let theirJobId: string;
  const PASSWORD = 'correct horse battery';

  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

  async function login(email: string, password: string, remoteAddress = '127.0.0.1', cookie?: string) {
    return t.app.inject({
      method: 'POST',
      url: '/login',
      remoteAddress,
      headers: { ...FORM, ...(cookie && { cookie }) },
      payload: form({ email, password, next: '/account' }),
    });
  }

  function sessionCookie(response: { headers: Record<string, unknown> }): string {
    const set = response.headers['set-cookie'];
    const line = (Array.isArray(set) ? set : [set]).find((c) => typeof c === 'string' && c.startsWith('punctual_session=')) as string;
    return line.split(';')[0]!;
  }

  async function signIn(email: string): Promise<{ cookie: string; csrf: string }> {
    const response = await login(email, PASSWORD);
    expect(response.statusCode).toBe(303);
    const cookie = sessionCookie(response);
    const page = await t.app.inject({ method: 'GET', url: '/account', headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    return { cookie, csrf };
  }

  let member: { cookie: string; csrf: string };

  beforeAll(async () => {
    t = await makeTestApp();
    mine = await t.makeProject();
    theirs = await t.makeProject();
    await t.services.users.create({ email: 'member@example.com', password: PASSWORD, teamIds: [mine.teamId], operator: false });
    await t.services.users.create({ email: 'operator@example.com', password: PASSWORD, teamIds: [], operator: true });
    const dispatched = await t.api(theirs.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { secret: 'theirs' } } });
    theirJobId = dispatched.json().jobId;
    member = await signIn('member@example.com');
  });
  afterAll(() => t.close());

  it('logs in with an HttpOnly, SameSite=Lax session cookie (not Secure over plain http) and sends the user where they were going', async () => {
    const response = await login('Member@Example.com', PASSWORD);
    expect(response.statusCode).toBe(303);
    expect(response.headers.location).toBe('/account');
    const set = String(response.headers['set-cookie']);
    expect(set).toMatch(/^punctual_session=[A-Za-z0-9_-]{43};/);
    expect(set).toContain('HttpOnly');
    expect(set).toContain('SameSite=Lax');
    expect(set).toContain('Path=/');
    expect(set).not.toContain('Secure');
    const home = await t.app.inject({ method: 'GET', url: '/', headers: { cookie: sessionCookie(response) } });
    expect(home.statusCode).toBe(303);
    expect(home.headers.location).toBe(`/teams/${mine.teamId}`);
  });

  it('sends a visitor without a session to the login page, and never redirects off-site after login', async () => {
    const page = await t.app.inject({ method: 'GET', url: `/projects/${mine.projectId}/jobs` });
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe(`/login?next=${encodeURIComponent(`/projects/${mine.projectId}/jobs`)}`);
    const offsite = await t.app.inject({
      method: 'POST',
      url: '/login',
      headers: FORM,
      payload: form({ email: 'member@example.com', password: PASSWORD, next: '//evil.example/' }),
    });
    expect(offsite.headers.location).toBe('/');
  });

  it('refuses a wrong password and an unknown email alike, setting no cookie', async () => {
    for (const [email, password] of [['member@example.com', 'wrong password!'], ['nobody@example.com', PASSWORD]] as const) {
      const response = await login(email, password, '10.0.0.9');
      expect(response.statusCode).toBe(401);
      expect(response.body).toContain('Wrong email or password.');
      expect(response.headers['set-cookie']).toBeUndefined();
    }
  });

  // PostgreSQL refuses U+0000 in a query parameter; SQLite would look the email up and find nobody.
  it('answers an email holding U+0000 as an unknown one, and ignores a next path holding it', async () => {
    const response = await login('member\u0000@example.com', PASSWORD, '10.0.0.10');
    expect(response.statusCode).toBe(401);
    expect(response.body).toContain('Wrong email or password.');
    const nul = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: 'email=a%00b%40c&password=whatever+it+is' });
    expect(nul.statusCode).toBe(401);
    const next = await t.app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ email: 'member@example.com', password: PASSWORD, next: '/account\u0000' }) });
    expect(next.statusCode).toBe(303);
    expect(next.headers.location).toBe('/');
    const page = await t.app.inject({ method: 'GET', url: '/login?next=%2Faccount%00' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('name="next" value="/"');
  });

  it('refuses a login posted from another site, even with the right password', async () => {
    for (const headers of [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { origin: 'null' }]) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/login',
        headers: { ...FORM, ...headers },
        payload: form({ email: 'member@example.com', password: PASSWORD }),
      });
      expect(response.statusCode).toBe(403);
      expect(response.body).toContain('This form could not be accepted');
      expect(response.headers['set-cookie']).toBeUndefined();
    }
  });

  it('starts a new session at every login and ends the one the browser had', async () => {
    const first = sessionCookie(await login('member@example.com', PASSWORD));
    const second = sessionCookie(await login('member@example.com', PASSWORD, '127.0.0.1', first));
    expect(second).not.toBe(first);
    expect((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie: first } })).statusCode).toBe(303);
    expect((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie: second } })).statusCode).toBe(200);
  });

  const PER_PAIR = FAILURES_BEFORE_DELAY.accountAtAddress;

  it('slows wrong passwords for an account at one address, doubling the wait, and takes the right one once the wait is over', async () => {
    await t.services.users.create({ email: 'target@example.com', password: PASSWORD, teamIds: [], operator: true });
    for (let i = 0; i < PER_PAIR; i += 1) expect((await login('target@example.com', 'guess', '10.1.0.1')).statusCode).toBe(401);
    const slowed = await login('target@example.com', PASSWORD, '10.1.0.1');
    expect(slowed.statusCode).toBe(429);
    expect(slowed.headers['retry-after']).toBe('1');
    expect(slowed.body).toContain('Too many failed logins for this account or from your address. Try again in 1 second.');
    expect(slowed.headers['set-cookie']).toBeUndefined();
    t.clock.advance(1000);
    expect((await login('target@example.com', 'guess', '10.1.0.1')).statusCode).toBe(401);
    const slower = await login('target@example.com', PASSWORD, '10.1.0.1');
    expect(slower.statusCode).toBe(429);
    expect(slower.headers['retry-after']).toBe('2');
    expect(slower.body).toContain('Try again in 2 seconds.');
    t.clock.advance(2000);
    expect((await login('target@example.com', PASSWORD, '10.1.0.1')).statusCode).toBe(303);
  });

  it("does not let one address's wrong passwords keep the operator out at another, however long it guesses", async () => {
    await t.services.users.create({ email: 'besieged@example.com', password: PASSWORD, teamIds: [], operator: true });
    const waits: number[] = [];
    // Guesses as fast as the throttle lets them through, for a whole window and then some.
    for (const end = t.clock.now() + LOGIN_WINDOW_MS; ; ) {
      const guess = await login('besieged@example.com', 'guess', '10.5.0.1');
      if (guess.statusCode === 401 && t.clock.now() >= end) break;
      if (guess.statusCode === 429) {
        waits.push(Number(guess.headers['retry-after']));
        t.clock.advance(Number(guess.headers['retry-after']) * 1000);
      } else expect(guess.statusCode).toBe(401);
    }
    expect(Math.max(...waits)).toBe(60);
    expect((await login('besieged@example.com', PASSWORD, '10.5.0.1')).statusCode).toBe(429);
    expect((await login('besieged@example.com', PASSWORD, '10.5.1.1')).statusCode).toBe(303);
  });

  it('throttles an address that tries many accounts, and only that address', async () => {
    for (let i = 0; i < FAILURES_BEFORE_DELAY.address; i += 1) await login(`spray${i}@example.com`, 'guess', '10.2.0.1');
    expect((await login('member@example.com', PASSWORD, '10.2.0.1')).statusCode).toBe(429);
    expect((await login('member@example.com', PASSWORD, '10.2.0.2')).statusCode).toBe(303);
  });

  // IPv6 clients counted by their /64: test/dashboard/behind-proxy.test.ts.
  // A dual-stack listener sees IPv4 clients as ::ffff:a.b.c.d: each is its IPv4 address, not one shared /64.
  it('counts an IPv4 client whose socket address is written as IPv6 as the IPv4 address', async () => {
    for (let i = 0; i < PER_PAIR; i += 1) expect((await login('member@example.com', 'guess', '::ffff:10.2.1.1')).statusCode).toBe(401);
    expect((await login('member@example.com', PASSWORD, '10.2.1.1')).statusCode).toBe(429);
    expect((await login('member@example.com', PASSWORD, '::ffff:10.2.1.2')).statusCode).toBe(303);
  });

  it('gives wrong guesses sent all at once no more tries than guesses sent one after another', async () => {
    await t.services.users.create({ email: 'parallel@example.com', password: PASSWORD, teamIds: [mine.teamId], operator: false });
    const guesses = 12;
    const answers = await Promise.all(Array.from({ length: guesses }, (_, i) => login('parallel@example.com', `guess ${i}`, '10.3.0.1')));
    const statuses = answers.map((response) => response.statusCode);
    expect(statuses.filter((status) => status === 401)).toHaveLength(PER_PAIR);
    expect(statuses.filter((status) => status === 429)).toHaveLength(guesses - PER_PAIR);
    expect((await login('parallel@example.com', PASSWORD, '10.3.0.1')).statusCode).toBe(429);
    expect((await login('parallel@example.com', PASSWORD, '10.3.1.1')).statusCode).toBe(303);
  });

  it('slows an account guessed from many addresses at new ones, by a second, but not at one its owner has logged in from', async () => {
    await t.services.users.create({ email: 'widely@example.com', password: PASSWORD, teamIds: [], operator: true });
    expect((await login('widely@example.com', PASSWORD, '10.6.0.1')).statusCode).toBe(303);
    const guesses = await Promise.all(
      Array.from({ length: FAILURES_BEFORE_DELAY.account }, (_, i) => login('widely@example.com', `guess ${i}`, `10.6.1.${Math.floor(i / PER_PAIR)}`)),
    );
    expect(guesses.map((response) => response.statusCode)).toEqual(Array(FAILURES_BEFORE_DELAY.account).fill(401));
    const elsewhere = await login('widely@example.com', PASSWORD, '10.6.2.1');
    expect(elsewhere.statusCode).toBe(429);
    expect(elsewhere.headers['retry-after']).toBe('1');
    expect((await login('widely@example.com', PASSWORD, '10.6.0.1')).statusCode).toBe(303);
    t.clock.advance(1000);
    expect((await login('widely@example.com', PASSWORD, '10.6.2.1')).statusCode).toBe(303);
  });

  it('does not hold right passwords against the address, though each counts while it is checked', async () => {
    await t.services.users.create({ email: 'office@example.com', password: PASSWORD, teamIds: [mine.teamId], operator: false });
    for (let i = 0; i <= FAILURES_BEFORE_DELAY.address; i += 1) expect((await login('office@example.com', PASSWORD, '10.4.0.1')).statusCode).toBe(303);
    expect((await login('office@example.com', 'one wrong guess', '10.4.0.1')).statusCode).toBe(401);
  });

  it('refuses a form POST without the CSRF token, with a wrong one, or from another site', async () => {
    const url = `/projects/${mine.projectId}/keys`;
    const keysBefore = (await t.services.manage.listKeys(mine.projectId)).keys.length;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url, headers: { ...FORM, cookie: member.cookie, ...headers }, payload: form(fields) });
    for (const refused of [
      await post({ name: 'no token' }),
      await post({ name: 'wrong token', _csrf: 'x'.repeat(43) }),
      await post({ name: 'cross site', _csrf: member.csrf }, { origin: 'https://evil.example' }),
    ]) {
      expect(refused.statusCode).toBe(403);
      expect(refused.headers['content-type']).toContain('text/html');
      expect(refused.body).toContain('This form could not be accepted');
    }
    expect((await t.services.manage.listKeys(mine.projectId)).keys).toHaveLength(keysBefore);
    const created = await post({ name: 'ci', _csrf: member.csrf }, { origin: 'http://localhost:80' });
    expect(created.statusCode).toBe(201);
    expect(created.body).toMatch(/<code id="new-key" class="secret">pk_[A-Za-z0-9]{40}<\/code>/);
    expect((await t.services.manage.listKeys(mine.projectId)).keys).toHaveLength(keysBefore + 1);
  });

  it("answers 404 for another team's project and job, exactly as for ones that do not exist", async () => {
    const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { cookie: member.cookie } });
    const other = await get(`/projects/${theirs.projectId}`);
    const absent = await get('/projects/prj_doesnotexist00');
    expect(other.statusCode).toBe(404);
    expect(other.body).toBe(absent.body.replace(/prj_doesnotexist00/g, theirs.projectId));
    const job = await get(`/projects/${mine.projectId}/jobs/${theirJobId}`);
    expect(job.statusCode).toBe(404);
    expect(job.body).not.toContain('theirs');
    expect((await get(`/projects/${theirs.projectId}/jobs/${theirJobId}`)).statusCode).toBe(404);
    expect((await get(`/teams/${theirs.teamId}/usage`)).statusCode).toBe(404);
  });

  it('opens /manage/v1 to a session, scoped to its teams, with the CSRF token required on changes', async () => {
    const manage = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Record<string, string> = {}, payload?: unknown) =>
      t.app.inject({ method, url, headers: { cookie: member.cookie, ...headers }, ...(payload !== undefined && { payload: payload as object }) });
    expect((await manage('GET', `/manage/v1/projects/${mine.projectId}`)).json()).toMatchObject({ projectId: mine.projectId });
    const other = await manage('GET', `/manage/v1/projects/${theirs.projectId}`);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ error: 'NOT_FOUND', data: { message: `No project ${theirs.projectId}` } });
    expect((await manage('GET', `/manage/v1/teams/${theirs.teamId}/usage`)).statusCode).toBe(404);
    const theirKey = (await t.services.manage.listKeys(theirs.projectId)).keys[0]!.keyId;
    expect((await t.app.inject({ method: 'DELETE', url: `/manage/v1/keys/${theirKey}`, headers: { cookie: member.cookie, 'x-csrf-token': member.csrf } })).statusCode).toBe(404);

    const noToken = await manage('POST', `/manage/v1/projects/${mine.projectId}/keys`, {}, { name: 'x' });
    expect(noToken.statusCode).toBe(401);
    expect(noToken.json().data.message).toContain('x-csrf-token');
    const withToken = await manage('POST', `/manage/v1/projects/${mine.projectId}/keys`, { 'x-csrf-token': member.csrf }, { name: 'x' });
    expect(withToken.statusCode).toBe(201);
    // Plans and new teams are the operator's.
    expect((await manage('POST', '/manage/v1/teams', { 'x-csrf-token': member.csrf }, { name: 'mine now' })).statusCode).toBe(401);
    expect((await manage('PATCH', `/manage/v1/teams/${mine.teamId}`, { 'x-csrf-token': member.csrf }, { plan: 'scale' })).statusCode).toBe(401);
    expect((await manage('PATCH', `/manage/v1/teams/${mine.teamId}`, { 'x-csrf-token': member.csrf }, { name: 'Renamed' })).json()).toMatchObject({ name: 'Renamed' });
    // A wrong admin token is refused even beside a valid cookie.
    expect((await manage('GET', `/manage/v1/projects/${mine.projectId}`, { authorization: 'Bearer wrong-token-0123456789' })).statusCode).toBe(401);
  });

  it("lets an operator's session see every team", async () => {
    const operator = await signIn('operator@example.com');
    const other = await t.app.inject({ method: 'GET', url: `/manage/v1/projects/${theirs.projectId}`, headers: { cookie: operator.cookie } });
    expect(other.statusCode).toBe(200);
    const page = await t.app.inject({ method: 'GET', url: `/projects/${theirs.projectId}/jobs/${theirJobId}`, headers: { cookie: operator.cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('&quot;secret&quot;: &quot;theirs&quot;');
  });

  it('changes a password only with the current one, logging out the other sessions', async () => {
    await t.services.users.create({ email: 'changer@example.com', password: PASSWORD, teamIds: [mine.teamId], operator: false });
    const here = await signIn('changer@example.com');
    const elsewhere = await signIn('changer@example.com');
    const change = (fields: Record<string, string>) =>
      t.app.inject({ method: 'POST', url: '/account/password', headers: { ...FORM, cookie: here.cookie }, payload: form({ _csrf: here.csrf, ...fields }) });
    const wrong = await change({ current: 'not it at all', next: 'a new password 1', confirm: 'a new password 1' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.body).toMatch(/id="f-current-error">The current password is not right/);
    const short = await change({ current: PASSWORD, next: 'short', confirm: 'short' });
    expect(short.body).toContain('next must be 10 to 200 characters long');
    const done = await change({ current: PASSWORD, next: 'a new password 1', confirm: 'a new password 1' });
    expect(done.statusCode).toBe(303);
    expect((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie: here.cookie } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie: elsewhere.cookie } })).statusCode).toBe(303);
    expect((await login('changer@example.com', PASSWORD)).statusCode).toBe(401);
    expect((await login('changer@example.com', 'a new password 1')).statusCode).toBe(303);
  });

  it('throttles wrong current passwords on the account page as it does logins, in the same count', async () => {
    await t.services.users.create({ email: 'stolen@example.com', password: PASSWORD, teamIds: [mine.teamId], operator: false });
    const session = await signIn('stolen@example.com');
    const change = (current: string) =>
      t.app.inject({
        method: 'POST',
        url: '/account/password',
        remoteAddress: '10.7.0.1',
        headers: { ...FORM, cookie: session.cookie },
        payload: form({ _csrf: session.csrf, current, next: 'chosen by the thief', confirm: 'chosen by the thief' }),
      });
    for (let i = 0; i < PER_PAIR; i += 1) expect((await change(`guess ${i}`)).statusCode).toBe(400);
    const slowed = await change(PASSWORD);
    expect(slowed.statusCode).toBe(429);
    expect(slowed.headers['retry-after']).toBe('1');
    expect(slowed.body).toMatch(/id="f-current-error">Too many wrong passwords. Try again in 1 second./);
    // The guesses on the account page count against logins of the account from that address too.
    expect((await login('stolen@example.com', PASSWORD, '10.7.0.1')).statusCode).toBe(429);
    expect((await login('stolen@example.com', PASSWORD)).statusCode).toBe(303);
    t.clock.advance(1000);
    expect((await change(PASSWORD)).statusCode).toBe(303);
    expect((await login('stolen@example.com', 'chosen by the thief', '10.7.0.1')).statusCode).toBe(303);
  });

  it('ends a session at logout and when it expires', async () => {
    const session = await signIn('member@example.com');
    const out = await t.app.inject({ method: 'POST', url: '/logout', headers: { ...FORM, cookie: session.cookie }, payload: form({ _csrf: session.csrf }) });
    expect(out.statusCode).toBe(303);
    expect(String(out.headers['set-cookie'])).toMatch(/punctual_session=;.*Expires=Thu, 01 Jan 1970/);
    expect((await t.app.inject({ method: 'GET', url: `/manage/v1/projects/${mine.projectId}`, headers: { cookie: session.cookie } })).statusCode).toBe(401);

    const later = await signIn('member@example.com');
    t.clock.advance(SESSION_TTL_MS);
    expect((await t.app.inject({ method: 'GET', url: '/account', headers: { cookie: later.cookie } })).statusCode).toBe(303);
    member = await signIn('member@example.com');
  });

  it('escapes what users typed, and keeps form bodies out of the JSON API', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: `/teams/${mine.teamId}/projects`,
      headers: { ...FORM, cookie: member.cookie },
      payload: form({ _csrf: member.csrf, name: '<script>alert(1)</script>' }),
    });
    expect(created.statusCode).toBe(201);
    expect(created.body).not.toContain('<script>alert(1)</script>');
    expect(created.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(created.headers['content-security-policy']).toContain("script-src 'self'");
    const api = await t.api(mine.key, { method: 'POST', url: '/api/jobs/dispatch', headers: FORM, payload: 'payload=1' });
    expect(api.statusCode).toBe(415);
  });
});

describe('dashboard session cookie behind TLS', () => {
  it('is Secure when PUNCTUAL_PUBLIC_URL is https', async () => {
    const t = await makeTestApp({ env: { PUNCTUAL_PUBLIC_URL: 'https://jobs.example.com' } });
    try {
      await t.services.users.create({ email: 'tls@example.com', password: 'a long enough password', teamIds: [], operator: true });
      const response = await t.app.inject({
        method: 'POST',
        url: '/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'email=tls%40example.com&password=a+long+enough+password',
      });
      expect(response.statusCode).toBe(303);
      expect(String(response.headers['set-cookie'])).toContain('Secure');
    } finally {
      await t.close();
    }
  });
});
