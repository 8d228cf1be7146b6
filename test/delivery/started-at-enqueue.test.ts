import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryEngine } from '../../src/engine/delivery-engine.js';
import { UnavailableError } from '../../src/errors.js';
import { createDeliveryEngine, type Runtime } from '../../src/runtime.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from '../support/eventually.js';
import { makeTestApp, TEST_STORE, type TestApp } from '../support/make-app.js';
import { TestReceiver } from '../support/receiver.js';

/**
 * A job due now is created with its attempt STARTED when its project has room, and handed to the
 * attempt runner, which loads its project and secrets before the request goes out. If that load
 * fails (the database away for a moment), the job waits under its lease for the rescue, and the
 * room reserved for it must come back at once: otherwise the project's next jobs wait behind room
 * nothing holds. The real store and receiver; the engine's store behind a gate that fails the
 * project's next load. The embedded store only: PostgreSQL creates jobs QUEUED, and a claim's
 * failed hand-over is the claim loop's (it takes the jobs again at its next pass).
 */
describe.runIf(TEST_STORE === 'sqlite')('jobs created started whose hand-over fails', () => {
  let t: TestApp;
  let receiver: TestReceiver;
  let engine: DeliveryEngine;
  /** The project whose next load for the runner fails, as when the database is away. */
  let failNextLoadOf: string | null = null;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp();
    const store = t.store;
    const gated: Store = Object.create(store);
    Object.defineProperty(gated, 'projectGetMany', {
      value: async (ids: string[]) => {
        if (failNextLoadOf !== null && ids.includes(failNextLoadOf)) {
          failNextLoadOf = null;
          throw new UnavailableError('the database is away (the test)');
        }
        return store.projectGetMany(ids);
      },
    });
    const runtime: Runtime = Object.create(t.runtime, { store: { value: gated } });
    engine = createDeliveryEngine(runtime, t.app.log);
    await engine.start();
  });
  afterAll(async () => {
    await engine?.stop(1_000);
    await t.close();
    await receiver.close();
  });

  it("gives back the room reserved for them, so that the project's next job starts", async () => {
    const p = await t.makeProject({ webhookUrl: receiver.url, settings: { deliveryConcurrency: 1 } });
    const dispatch = async () => {
      const response = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: {} } });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().jobId as string;
    };
    const statusOf = async (jobId: string) => (await t.store.jobGet({ projectId: p.projectId, jobId }))!.status;
    failNextLoadOf = p.projectId;
    // Created STARTED in the project's only slot; its project's load fails, so its request waits for the lease rescue.
    const stranded = await dispatch();
    await eventually(() => failNextLoadOf, { what: 'the failed load', until: (left) => left === null });
    const next = await dispatch();
    await eventually(() => statusOf(next), { what: 'the next job COMPLETED', until: (status) => status === 'COMPLETED' });
    expect(receiver.forJob(next)).toHaveLength(1);
    expect(receiver.forJob(stranded)).toHaveLength(0);
    expect(await statusOf(stranded)).toBe('STARTED');
  });
});
