// CORS for the application-facing routes (/{project_id}/rest, /{project_id}/auth, functions):
// any origin, credentials by header only (no cookies), the PostgREST headers exposed.
import type { FastifyInstance } from 'fastify';

const DATA_PLANE = /^\/[a-z2-7]{16}\/(rest|auth|functions)(\/|$|\?)/;
const ALLOW_HEADERS = 'authorization, x-user-token, content-type, prefer, range, range-unit, accept, accept-profile, content-profile, apikey, x-client-info, x-supabase-api-version, x-region';
const EXPOSE_HEADERS = 'Content-Range, Preference-Applied, X-Request-Id, Retry-After, X-Supabase-Api-Version';

export function installCors(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!DATA_PLANE.test(request.url)) return;
    reply.header('Access-Control-Allow-Origin', '*');
    reply.header('Access-Control-Expose-Headers', EXPOSE_HEADERS);
    if (request.method === 'OPTIONS') {
      reply.header('Access-Control-Allow-Methods', 'GET, HEAD, POST, PATCH, PUT, DELETE, OPTIONS');
      reply.header('Access-Control-Allow-Headers', ALLOW_HEADERS);
      reply.header('Access-Control-Max-Age', '86400');
      return reply.status(204).send();
    }
  });
}
