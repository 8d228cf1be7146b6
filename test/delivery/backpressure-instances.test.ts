import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { queryRows } from '../support/job-fixtures.js';
import { TEST_STORE } from '../support/make-app.js';
import { TestReceiver, type Reply } from '../support/receiver.js';
import { projectByCli, sharedDatabase } from '../support/spawn-punctual.js';

/**
 * SPEC section 11's backpressure across instances: two `punctual serve` processes on one
 * PostgreSQL; the receiver answers one job 429 with Retry-After: 2. Jobs of the same project
 * dispatched through either instance right after wait those 2 s, whichever instance sends them.
 */
describe.runIf(TEST_STORE === 'postgres')("a receiver's Retry-After held by two instances", () => {
  const database = sharedDatabase();
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    receiver.answer((request): Reply => ((request.json.payload as { limited?: boolean }).limited ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.close();
  });

  it("holds the project's jobs sent through either instance until the Retry-After ends", { timeout: 60_000 }, async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'backpressure-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: 'backpressure-admin-0123', LOG_LEVEL: 'warn' };
    const { projectId, key } = projectByCli(env, receiver.url);
    const bases: string[] = [];
    for (let i = 0; i < 2; i++) {
      bases.push((await database.start(env)).base);
    }
    const dispatch = async (base: string, payload: Record<string, unknown>) => {
      const res = await fetch(`${base}/api/jobs/dispatch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ payload, maxRetries: 0 }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { jobId: string }).jobId;
    };
    const limited = await dispatch(bases[0]!, { limited: true });
    await receiver.waitFor(() => receiver.forJob(limited).length === 1);
    const refusedAt = receiver.forJob(limited)[0]!.arrivedAt;
    // The instance that got the 429 records it on the project (after recording the attempt).
    await eventually(
      async () => (await queryRows<{ until: string | null }>(database.url, 'SELECT backoff_until AS until FROM projects WHERE id = $1', [projectId]))[0]?.until,
      { what: 'the Retry-After recorded on the project', until: (until) => until !== null && until !== undefined },
    );
    const others: string[] = [];
    for (let i = 0; i < 10; i++) others.push(await dispatch(bases[i % 2]!, { i }));
    await receiver.waitFor(() => others.every((id) => receiver.forJob(id).length === 1), 10_000);
    for (const id of others) {
      const at = receiver.forJob(id)[0]!.arrivedAt;
      expect(at - refusedAt, id).toBeGreaterThanOrEqual(2_000);
      expect(at - refusedAt, id).toBeLessThan(4_000);
    }
  });
});
