import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRouteAccess } from '../../src/api/authentication.js';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { rawRequest } from '../support/raw-http.js';

/** A value for each path parameter: with no credentials, which job or project it names must not matter. */
const PARAM_VALUES: Record<string, string> = {
  jobId: 'job_0123456789abcdefABCD',
  attemptId: 'att_0123456789abcdefABCD',
  scheduleId: 'sch_0123456789abcdefABCD',
  teamId: 'team_0123456789abcdef',
  projectId: 'proj_0123456789abcdef',
  keyId: 'key_0123456789abcdef',
};

const concrete = (url: string) => url.replace(/:(\w+)/g, (_m, name: string) => PARAM_VALUES[name] ?? 'x');

/**
 * The spellings of one path that the router takes for the same route (SPEC section 8): as is; each
 * static segment's first letter percent-encoded (`/%61pi/%6aobs/…`); and in absolute form
 * (`http://host/api/…`), which the router reduces to its path.
 */
function spellings(path: string): [string, string][] {
  const encoded = path
    .split('/')
    .map((segment) => (/^[a-z]/i.test(segment) && !segment.includes('_') ? `%${segment.charCodeAt(0).toString(16)}${segment.slice(1)}` : segment))
    .join('/');
  return [
    ['plain', path],
    ['percent-encoded', encoded],
    ['absolute-form', `http://127.0.0.1${path}`],
  ];
}

describe('authentication by the route reached (SPEC section 8)', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await makeTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it('knows every route, and each one under /api or /manage has its scope', () => {
    const table = t.app.routeTable;
    const guarded = table.filter((route) => /^\/(api|manage)(\/|$)/.test(route.url));
    // The job API, schedules, async reports and the management API: far more than a handful.
    expect(guarded.length).toBeGreaterThan(40);
    for (const route of guarded) expect(route.access, `${route.method} ${route.url}`).toBe(route.url.startsWith('/api') ? 'apiKey' : 'manage');
    // Nothing outside those prefixes claims an access it would not get.
    expect(table.filter((route) => route.access !== null && !guarded.includes(route))).toEqual([]);
  });

  it('answers 401 on every /api and /manage route without credentials, however its path is spelled', async () => {
    const guarded = t.app.routeTable.filter((route) => route.access !== null);
    const failures: string[] = [];
    for (const route of guarded) {
      for (const [spelling, target] of spellings(concrete(route.url))) {
        const body = ['POST', 'PATCH', 'PUT'].includes(route.method) ? '{}' : '';
        const headers: Record<string, string> = body ? { 'content-type': 'application/json' } : {};
        const answer = await rawRequest(port, route.method, target, headers, body);
        if (answer.statusCode !== 401) failures.push(`${route.method} ${target} (${spelling}): ${answer.statusCode} ${answer.body.slice(0, 120)}`);
        else if (route.method !== 'HEAD') expect(JSON.parse(answer.body).error).toBe('UNAUTHORIZED');
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers 401 on unknown paths under /api and /manage without credentials, however spelled, and 404 with them', async () => {
    for (const [, target] of [...spellings('/api/no-such-route'), ...spellings('/manage/v1/no-such-route')]) {
      expect((await rawRequest(port, 'GET', target)).statusCode, target).toBe(401);
    }
    const p = await t.makeProject();
    const answer = await rawRequest(port, 'GET', '/%61pi/no-such-route', { authorization: `Bearer ${p.key}` });
    expectContractError(answer, 404, 'NOT_FOUND');
  });

  it('does not take a token that merely looks like a callback token on the report route, however spelled', async () => {
    const route = '/api/jobs/job_0123456789abcdefABCD/attempts/att_0123456789abcdefABCD/result';
    for (const [, target] of spellings(route)) {
      const answer = await rawRequest(port, 'POST', target, { authorization: 'Bearer pcb_forged', 'content-type': 'application/json' }, '{"outcome":"success"}');
      expectContractError(answer, 401, 'UNAUTHORIZED');
    }
  });

  it('marks /manage answers, which may carry a key or a secret, Cache-Control: no-store', async () => {
    const p = await t.makeProject();
    for (const [method, url] of [
      ['POST', `/manage/v1/projects/${p.projectId}/keys`],
      ['GET', `/manage/v1/projects/${p.projectId}/webhook-secrets`],
      ['POST', `/manage/v1/projects/${p.projectId}/webhook-secret/rotate`],
      ['POST', `/manage/v1/teams/${p.teamId}/projects`],
    ] as const) {
      const answer = await t.admin({ method, url, payload: method === 'POST' ? { name: 'n' } : undefined });
      expect(answer.statusCode, url).toBeLessThan(300);
      expect(answer.headers['cache-control'], url).toBe('no-store');
    }
  });
});

describe('the route table check', () => {
  it('refuses to start an app with a route under /api registered outside its authenticated scope', async () => {
    const app = Fastify();
    checkRouteAccess(app);
    app.get('/api/forgotten', async () => ({ open: true }));
    await expect(app.ready()).rejects.toThrow(/\/api\/forgotten is under \/api but not registered in its authenticated scope/);
  });
});
