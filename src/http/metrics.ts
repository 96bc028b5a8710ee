// GET /metrics (Prometheus's text format) and the per-request counting behind it. A request is
// counted under its route pattern (`/:project_id/rest/:table`), never its URL, so that no id or
// caller-chosen text becomes a label; a request no route matched is counted as `(unmatched)`.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Metrics, Refusal } from '../lib/metrics.ts';
import { AppError } from '../errors.ts';
import { bearer } from './platform-auth.ts';

export const UNMATCHED_ROUTE = '(unmatched)';
/** The method label of a request the HTTP parser refused before reading one */
export const UNPARSED_METHOD = '(unparsed)';
// the refusals only the answer tells (the rate limits count themselves, in the services)
const REFUSED_AS: Record<string, Refusal> = { project_busy: 'project_busy', function_busy: 'function_busy' };

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Compares digests, so that neither the content nor the length of the token leaks through timing. */
function tokenGuard(token: string | null): (request: FastifyRequest) => void {
  if (token === null) return () => undefined;
  const expected = digest(token);
  return (request) => {
    const given = bearer(request);
    if (given === undefined) throw new AppError('missing_token.metrics');
    if (!timingSafeEqual(digest(given), expected)) throw new AppError('invalid_token.credential');
  };
}

/** Counts every answer (before any route exists, so that each one is counted). */
export function installMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    metrics.httpRequest(request.method, request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode, reply.elapsedTime / 1000);
    const refusal = reply.errorCode === null ? undefined : REFUSED_AS[reply.errorCode];
    if (refusal) metrics.refused(refusal);
    done();
  });
}

/**
 * GET /metrics, registered after the API description is installed so that it is documented: a
 * text answer, and the bearer token only when METRICS_TOKEN is set (then 401 without it).
 */
export function metricsRoute(app: FastifyInstance, metrics: Metrics, token: string | null): void {
  const guard = tokenGuard(token);
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        summary: 'Metrics in the Prometheus text format (with METRICS_TOKEN set: Authorization: Bearer <token>)',
        ...(token === null ? {} : { security: [{ metricsToken: [] }] }),
        response: { 200: { description: 'The metrics, in the Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
      onRequest: async (request) => guard(request),
    },
    async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()),
  );
}
