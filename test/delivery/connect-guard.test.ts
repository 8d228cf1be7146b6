import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * With private webhooks refused, a URL that was public when saved but points at a private address
 * by the time it is delivered (DNS changed, or edited behind the API's back) fails at connect time.
 */
describe('connect-time address guard', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ clock: systemClock, delivery: true, allowPrivateWebhooks: false });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it.each([
    ['an IP literal', () => receiver.url],
    ['a hostname resolving to loopback', () => receiver.url.replace('127.0.0.1', 'localhost')],
    ['an IPv4-mapped IPv6 literal', () => receiver.url.replace('127.0.0.1', '[::ffff:127.0.0.1]')],
  ])('refuses %s as network_error and sends nothing', async (_name, url) => {
    const p = await t.makeProject({ webhookUrl: 'https://93.184.216.34/hook' });
    await t.store.projectUpdate({ projectId: p.projectId, patch: { webhookUrl: url() } });
    const before = receiver.requests.length;
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {}, maxRetries: 0 } })).json().jobId;
    const deadline = Date.now() + 5000;
    let status = '';
    while (status !== 'FAILED') {
      if (Date.now() > deadline) throw new Error(`job is ${status}`);
      status = (await t.store.jobGet({ projectId: p.projectId, jobId }))!.status;
      await new Promise((r) => setTimeout(r, 10));
    }
    const [attempt] = await t.store.attemptListByJob(jobId);
    expect(attempt).toMatchObject({ outcome: 'network_error', error: expect.stringMatching(/private or reserved/) });
    expect(receiver.requests.length).toBe(before);
  });
});
