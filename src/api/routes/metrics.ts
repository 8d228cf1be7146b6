import type { FastifyPluginAsync } from 'fastify';
import type { Metrics } from '../../metrics.js';
import { errors } from '../schemas.js';

export const metricsRoutes: FastifyPluginAsync<{ metrics: Metrics }> = async (app, { metrics }) => {
  app.get('/metrics', { schema: { summary: 'Prometheus metrics (text format)', tags: ['health'], response: errors('INTERNAL_ERROR', 'UNAVAILABLE') } }, async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
};
