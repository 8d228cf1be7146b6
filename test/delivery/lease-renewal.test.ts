import { describe, expect, it } from 'vitest';
import { useDeliveringApp } from '../support/delivering-app.js';
import { SECOND } from '../support/make-app.js';

/**
 * SPEC section 3: a claimed job's lease is renewed while its request runs, so a slow delivery is
 * never rescued mid-flight; a lease nobody renews is. Injected clock: the test moves time past the
 * lease and drives the renewal and the rescuer itself.
 */
describe('lease renewal (injected clock)', () => {
  const app = useDeliveringApp();

  it('keeps a job whose request is still running, and rescues it once renewals stop', async () => {
    const { t, receiver } = app;
    app.holdAnswers();
    // A 60 s timeout: the request stays open however far the test moves the clock.
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryTimeoutMs: 60 * SECOND } });
    const jobId = (await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } })).json().jobId as string;
    await receiver.waitFor(() => receiver.forJob(jobId).length === 1, 5_000, 'the request to be under way');
    const engine = t.engine!;

    // Past the lease (60 s + 30 s), renewed first: nothing to rescue.
    t.clock.advance(100 * SECOND);
    await engine.runner.renewLeases();
    expect(await engine.rescuer.tick()).toBe(0);
    expect((await t.store.jobGet({ projectId: p.projectId, jobId }))?.status).toBe('STARTED');

    // Past it again without a renewal (a worker that stopped): the rescuer takes it.
    t.clock.advance(100 * SECOND);
    expect(await engine.rescuer.tick()).toBe(1);
    expect((await t.store.attemptListByJob(jobId))[0]).toMatchObject({ outcome: 'lease_expired' });
  });
});
