import type { FastifyInstance } from 'fastify';
import type { Engine } from '../../storage/engine.ts';

export function healthRoutes(app: FastifyInstance, engine: Engine): void {
  app.get('/health', { schema: { tags: ['operations'], summary: 'Liveness and database reachability' } }, async (_req, reply) => {
    const ok = await engine.ping();
    return reply.status(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable' });
  });
}
