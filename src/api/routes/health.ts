import type { FastifyPluginAsync } from 'fastify';
import { UnavailableError } from '../../errors.js';
import type { Store } from '../../store/store.js';
import { errors } from '../schemas.js';

const statusSchema = (status: string) => ({ type: 'object', required: ['status'], properties: { status: { type: 'string', enum: [status] } } }) as const;

export const healthRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get('/healthz', { schema: { summary: 'The process is up', tags: ['health'], response: { 200: statusSchema('ok'), ...errors('INTERNAL_ERROR') } } }, async () => ({
    status: 'ok',
  }));
  app.get('/readyz', { schema: { summary: 'Storage is reachable', tags: ['health'], response: { 200: statusSchema('ready'), ...errors('INTERNAL_ERROR', 'UNAVAILABLE') } } }, async () => {
    try {
      await store.ping();
    } catch {
      throw new UnavailableError('Storage is unreachable', {}, { 'retry-after': '1' });
    }
    return { status: 'ready' };
  });
};
