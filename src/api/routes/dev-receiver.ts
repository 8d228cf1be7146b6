import type { FastifyPluginAsync } from 'fastify';

const KEPT = 50;

/**
 * A webhook receiver built into the service for the quickstart, mounted only where config.devReceiver
 * (by default only on a loopback address outside production: src/development-conveniences.ts). It
 * logs each delivery and keeps the last few, readable at GET /dev/receiver.
 */
export const devReceiverRoutes: FastifyPluginAsync = async (app) => {
  const received: { receivedAt: string; headers: Record<string, unknown>; body: unknown }[] = [];
  app.post('/dev/receiver', { schema: { hide: true } }, async (request) => {
    // The Authorization header carries the webhook secret: not logged, not kept.
    const { authorization: _secret, ...headers } = request.headers;
    received.unshift({ receivedAt: new Date().toISOString(), headers, body: request.body });
    received.length = Math.min(received.length, KEPT);
    request.log.info({ delivery: request.body, webhookId: headers['webhook-id'] }, 'dev receiver: delivery received');
    return { received: true };
  });
  app.get('/dev/receiver', { schema: { hide: true } }, async () => ({ deliveries: received }));
};
