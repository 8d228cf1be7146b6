import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../../src/cli/listen.js';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { eventually } from '../support/eventually.js';

describe('punctual listen', () => {
  let t: TestApp<typeof systemClock>;
  const lines: string[] = [];
  let receiver: { close: () => Promise<void>; port: number };
  let secret = '';

  beforeAll(async () => {
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterAll(async () => {
    await receiver?.close();
    await t.close();
  });

  const waitForLines = (n: number) => eventually(() => lines.length, { what: `${n} lines printed`, until: (printed) => printed >= n, withinMs: 5_000 });

  it('verifies signatures, prints each delivery and answers 200; a wrong secret gets 401', async () => {
    const project = await t.makeProject({ webhookUrl: null });
    secret = project.webhookSecret;
    receiver = await listen({ port: 0, host: '127.0.0.1', secret, print: (line) => lines.push(line) });
    await t.services.manage.updateProject(project.projectId, { webhookUrl: `http://127.0.0.1:${receiver.port}/` });
    const jobId = (await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { order: 42 } } })).json().jobId;
    await waitForLines(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ webhookId: jobId, signature: 'valid', body: { jobId, attemptNumber: 1, payload: { order: 42 } } });

    await t.services.manage.rotateWebhookSecret(project.projectId);
    const rotated = (await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId;
    await waitForLines(2);
    // The old secret still signs during the overlap, so a receiver that has not updated yet still verifies.
    expect(JSON.parse(lines[1]!)).toMatchObject({ webhookId: rotated, signature: 'valid' });

    await receiver.close();
    receiver = await listen({ port: 0, host: '127.0.0.1', secret: 'whsec_' + Buffer.alloc(32, 1).toString('base64'), print: (line) => lines.push(line) });
    await t.services.manage.updateProject(project.projectId, { webhookUrl: `http://127.0.0.1:${receiver.port}/` });
    const refused = (await t.api(project.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, maxRetries: 0 } })).json().jobId;
    await waitForLines(3);
    expect(JSON.parse(lines[2]!)).toMatchObject({ webhookId: refused, signature: 'INVALID' });
    const deadline = Date.now() + 5000;
    while ((await t.store.jobGet({ projectId: project.projectId, jobId: refused }))!.status !== 'FAILED') {
      if (Date.now() > deadline) throw new Error('not failed');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await t.store.attemptListByJob(refused))[0]).toMatchObject({ outcome: 'http_error', statusCode: 401 });
  });
});
