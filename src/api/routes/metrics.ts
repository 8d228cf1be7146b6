import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '../../metrics.js';

export const metricsRoutes: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/metrics', { schema: { summary: 'Prometheus metrics', tags: ['health'] } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};
