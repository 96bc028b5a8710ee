import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Engine } from '../../storage/engine.ts';
import * as R from '../response-schemas.ts';

export function healthRoutes(app: FastifyInstance, engine: Engine): void {
  const response = { 200: R.Health, 503: Type.Union([R.Health, R.ErrorBody], { description: 'The database does not answer (or the server is closing: shutting_down)' }) };
  app.get('/health', { schema: { tags: ['operations'], operationId: 'health', summary: 'Liveness and database reachability', response } }, async (_req, reply) => {
    const ok = await engine.ping();
    return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable' });
  });
}
