import type { FastifyPluginAsync } from 'fastify';
import { UnavailableError } from '../../errors.js';
import type { Store } from '../../store/store.js';

const statusSchema = { type: 'object', properties: { status: { type: 'string' } } } as const;

export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get('/healthz', { schema: { summary: 'The process is up', tags: ['health'], response: { 200: statusSchema } } }, async () => ({
    status: 'ok',
  }));
  app.get('/readyz', { schema: { summary: 'Storage is reachable', tags: ['health'], response: { 200: statusSchema } } }, async () => {
    try {
      await store.ping();
    } catch {
      throw new UnavailableError('Storage is unreachable', {}, { 'retry-after': '1' });
    }
    return { status: 'ready' };
  });
};
