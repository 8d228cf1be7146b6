import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookClient } from '../../src/delivery/webhook-client.js';
import { TestReceiver } from '../support/receiver.js';

describe('WebhookClient', () => {
  let receiver: TestReceiver;
  const client = new WebhookClient({ allowPrivate: true, userAgent: 'Punctual/test' });
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
  });
  afterAll(async () => {
    await client.close();
    await receiver.close();
  });

  it('sends nothing when shutdown was signalled before the request (the drain deadline passed while it waited for its time)', async () => {
    const shutdown = new AbortController();
    shutdown.abort();
    const sent = await client.send(receiver.url, {}, '{}', 5_000, shutdown.signal);
    expect(sent.kind).toBe('aborted');
    expect(receiver.requests).toEqual([]);
  });

  it('sends and reads the answer while shutdown is not signalled', async () => {
    receiver.answer({ status: 201, body: 'made' });
    const sent = await client.send(receiver.url, {}, '{}', 5_000, new AbortController().signal);
    expect(sent).toMatchObject({ kind: 'answered', statusCode: 201, responseBody: 'made' });
    expect(receiver.requests).toHaveLength(1);
  });
});
