import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CLASSES } from '../../src/errors.js';
import { ADMIN_TOKEN, makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';

type Operation = { responses: Record<string, { description?: string; content?: { 'application/json'?: { schema?: { properties?: { error?: { enum?: string[] } } } } } }> };

/** Ids that name nothing, for each path parameter. */
const UNKNOWN: Record<string, string> = {
  jobId: 'job_0123456789abcdefABCDEF',
  attemptId: 'att_0123456789abcdefABCDEF',
  scheduleId: 'sch_0123456789abcdefABCDEF',
  teamId: 'team_0123456789abcdef',
  projectId: 'prj_0123456789abcdef',
  keyId: 'key_0123456789abcdef',
};

/**
 * /openapi.json says, for every route, which errors it answers (by status, with their codes).
 * Each route is asked what commonly goes wrong (no credentials, an unknown id, a body that is not
 * JSON, too large or malformed, an empty one) and every error it answers must be in its entry.
 */
describe('/openapi.json: every route with its errors', () => {
  let t: TestApp;
  let project: TestProject;
  let paths: Record<string, Record<string, Operation>>;

  beforeAll(async () => {
    t = await makeTestApp();
    project = await t.makeProject();
    paths = (JSON.parse((await t.app.inject({ url: '/openapi.json' })).body) as { paths: typeof paths }).paths;
  });
  afterAll(() => t.close());

  it('names only codes of src/errors.ts, each under its own status', () => {
    const statusOf = new Map(ERROR_CLASSES.map((ErrorClass) => [new ErrorClass('').code, new ErrorClass('').statusCode]));
    for (const [path, methods] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const code of response.content?.['application/json']?.schema?.properties?.error?.enum ?? []) {
            expect(statusOf.get(code), `${method} ${path}: ${code} under ${status}`).toBe(Number(status));
          }
        }
      }
    }
  });

  it('lists every error a route answers to common mistakes', async () => {
    const undeclared: string[] = [];
    let asked = 0;
    for (const [path, methods] of Object.entries(paths)) {
      const url = path.replace(/\{(\w+)\}/g, (_m, name: string) => UNKNOWN[name] ?? 'x');
      const credentials = path.startsWith('/api/') ? { authorization: `Bearer ${project.key}` } : path.startsWith('/manage/') ? { authorization: `Bearer ${ADMIN_TOKEN}` } : {};
      for (const [method, operation] of Object.entries(methods)) {
        const withBody = ['post', 'patch', 'delete'].includes(method);
        const requests: InjectOptions[] = [
          { headers: {} },
          { headers: credentials },
          ...(withBody
            ? [
                { headers: { ...credentials, 'content-type': 'application/json' }, payload: '{}' },
                { headers: { ...credentials, 'content-type': 'text/plain' }, payload: 'hello' },
                { headers: { ...credentials, 'content-type': 'application/json' }, payload: '{"a":' },
                { headers: { ...credentials, 'content-type': 'application/json' }, payload: JSON.stringify({ big: 'x'.repeat(2_200_000) }) },
              ]
            : []),
        ];
        for (const request of requests) {
          const answer = await t.app.inject({ ...request, method: method.toUpperCase() as InjectOptions['method'], url });
          asked += 1;
          if (answer.statusCode < 400) continue;
          const code = (JSON.parse(answer.body) as { error: string }).error;
          const declared = operation.responses[String(answer.statusCode)]?.content?.['application/json']?.schema?.properties?.error?.enum ?? [];
          if (!declared.includes(code)) undeclared.push(`${method.toUpperCase()} ${path} answered ${answer.statusCode} ${code}`);
        }
      }
    }
    expect(asked).toBeGreaterThan(140);
    expect(undeclared).toEqual([]);
  });
});
