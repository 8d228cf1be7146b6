import type { FastifyPluginAsync } from 'fastify';

const KEPT = 50;

/** What stands where a value was left out, so that a reader still sees that the delivery carried it. */
export const REDACTED = '[redacted]';

/**
 * A delivery as the receiver keeps, shows and logs it. Left out: the Authorization header (the
 * webhook secret itself), the signature (with the id, timestamp and body beside it, a complete
 * delivery that another receiver sharing the secret would accept within its tolerance) and the
 * callbackToken (it reports the attempt's result).
 */
function redacted(headers: Record<string, unknown>, body: unknown): { headers: Record<string, unknown>; body: unknown } {
  const { authorization: _secret, ...kept } = headers;
  if (kept['webhook-signature'] !== undefined) kept['webhook-signature'] = REDACTED;
  const hasToken = typeof body === 'object' && body !== null && !Array.isArray(body) && 'callbackToken' in body;
  return { headers: kept, body: hasToken ? { ...body, callbackToken: REDACTED } : body };
}

/**
 * A webhook receiver built into the service for the quickstart, mounted only where config.devReceiver
 * (by default only on a loopback address outside production: src/development-conveniences.ts). It
 * logs each delivery and keeps the last few, readable at GET /dev/receiver.
 */
export const devReceiverRoutes: FastifyPluginAsync = async (app) => {
  const received: { receivedAt: string; headers: Record<string, unknown>; body: unknown }[] = [];
  app.post('/dev/receiver', { schema: { hide: true } }, async (request) => {
    const { headers, body } = redacted(request.headers, request.body);
    received.unshift({ receivedAt: new Date().toISOString(), headers, body });
    received.length = Math.min(received.length, KEPT);
    request.log.info({ delivery: body, webhookId: headers['webhook-id'] }, 'dev receiver: delivery received');
    return { received: true };
  });
  app.get('/dev/receiver', { schema: { hide: true } }, async () => ({ deliveries: received }));
};
