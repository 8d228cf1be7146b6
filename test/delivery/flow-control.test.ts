import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { expectContractError } from '../support/contract-error.js';
import { makeTestApp, type TestApp, type TestProject } from '../support/make-app.js';
import { TestReceiver, type Reply } from '../support/receiver.js';

/** SPEC section 11's flow control on one instance: real time, a real receiver; waits poll to a deadline. */
describe('flow control: a delivery rate, and Retry-After holding the project', () => {
  let t: TestApp<typeof systemClock>;
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request): Reply => {
      const payload = request.json.payload as { status?: number; retryAfter?: string } | undefined;
      const headers: Record<string, string> = payload?.retryAfter ? { 'retry-after': payload.retryAfter } : {};
      return { status: payload?.status ?? 200, headers };
    });
    t = await makeTestApp({ clock: systemClock, delivery: true });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const batch = async (p: TestProject, jobs: Record<string, unknown>[]) => {
    const res = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: { jobs } });
    expect(res.statusCode).toBe(200);
    return (res.json().jobs as { jobId: string }[]).map((j) => j.jobId);
  };

  it('starts at most deliveryRatePerSecond attempts a second: 100 jobs due at once at 20/s arrive over 5 s', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryRatePerSecond: 20 } });
    const ids = await batch(p, Array.from({ length: 100 }, (_, i) => ({ payload: { i } })));
    await receiver.waitFor(() => ids.every((id) => receiver.forJob(id).length === 1), 15_000);
    const arrivals = ids.map((id) => receiver.forJob(id)[0]!.arrivedAt).sort((a, b) => a - b);
    // 100 starts at 20 a second: the first at once, the hundredth 99/20 = 4.95 s later. Timed from
    // the 11th arrival, 89/20 = 4.45 s before the last (± 5%): the first requests wait for a new
    // connection's setup, which on a busy machine made the first arrival late enough to shorten
    // the span by more than 5% with the starts paced right.
    const span = arrivals[99]! - arrivals[10]!;
    expect(span).toBeGreaterThanOrEqual(4_450 * 0.95);
    expect(span).toBeLessThanOrEqual(4_450 * 1.05);
    expect(arrivals[99]! - arrivals[0]!).toBeGreaterThanOrEqual(4_450);
    // No burst: no second holds much more than the rate. (Starts are paced exactly; arrivals bunch by a
    // few when a new connection's setup delays the first requests. A burst of the whole backlog, or
    // of a second's worth on top of the rate, would put 40 or more in one second.
    // Counted from the 11th arrival on, as the span: the first ones bunch behind a late connection.)
    for (const [i, at] of arrivals.entries()) {
      if (i >= 10) expect(arrivals.filter((b) => b >= at && b < at + 1_000).length, `from arrival ${i}`).toBeLessThanOrEqual(26);
    }
    // Over the rate, jobs waited QUEUED: nothing failed for it.
    for (const id of ids) expect(receiver.forJob(id)).toHaveLength(1);
  });

  it("a 429 with Retry-After: 2 holds the project's other jobs 2 s, not only that job's retry", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { retryPolicy: { initialDelayMs: 100, maxRetries: 1 } } });
    const [limited] = await batch(p, [{ payload: { status: 429, retryAfter: '2' } }]);
    await receiver.waitFor(() => receiver.forJob(limited!).length === 1);
    const refusedAt = receiver.forJob(limited!)[0]!.arrivedAt;
    const others = await batch(p, Array.from({ length: 5 }, (_, i) => ({ payload: { i } })));
    await receiver.waitFor(() => others.every((id) => receiver.forJob(id).length === 1) && receiver.forJob(limited!).length === 2, 10_000);
    for (const id of [...others, limited!]) {
      const arrivals = receiver.forJob(id);
      const at = arrivals[arrivals.length - 1]!.arrivedAt;
      expect(at - refusedAt, id).toBeGreaterThanOrEqual(2_000);
      expect(at - refusedAt, id).toBeLessThan(3_500);
    }
    // Another project is not held.
    const other = await t.makeProject({ webhookUrl: receiver.url });
    const [free] = await batch(other, [{ payload: {} }]);
    const dispatchedAt = Date.now();
    await receiver.waitFor(() => receiver.forJob(free!).length === 1);
    expect(receiver.forJob(free!)[0]!.arrivedAt - dispatchedAt).toBeLessThan(1_000);
  });

  it.each([
    ['below 0.1', 0.05],
    ['above 10,000', 10_001],
    ['a string', '5'],
  ])('refuses a deliveryRatePerSecond %s', async (_what, value) => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const res = await t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { deliveryRatePerSecond: value } });
    expectContractError(res, 400, 'INVALID_REQUEST');
    expect(res.json().data.field).toBe('deliveryRatePerSecond');
  });

  it('takes null for no limit, and a fraction', async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url });
    const patch = (value: unknown) => t.admin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload: { deliveryRatePerSecond: value } });
    expect((await patch(0.5)).json().deliveryRatePerSecond).toBe(0.5);
    expect((await patch(null)).json().deliveryRatePerSecond).toBeNull();
  });
});
