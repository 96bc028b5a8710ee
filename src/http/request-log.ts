// One log line per request, when its answer is sent: method, path (never the query string, which
// may hold filter values), status, time, the request id (pino's reqId) and, for an error, its code.
// Fastify's own request logging writes two lines per request, costing the hot path twice.
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyReply {
    /** the code of the error answer this reply carries (set by the error handler) */
    errorCode: string | null;
  }
}

/** The line of one answered request. */
export function logRequest(request: FastifyRequest, status: number, ms: number, code: string | null): void {
  const path = request.url.split('?', 1)[0];
  const entry = { method: request.method, path, status, ms: Math.round(ms * 10) / 10 };
  if (status >= 500) request.log.error({ ...entry, code }, 'request failed');
  else if (status >= 400) request.log.info({ ...entry, code }, 'request refused');
  else request.log.info(entry, 'request');
}

export function installRequestLog(app: FastifyInstance): void {
  app.decorateReply('errorCode', null);
  app.addHook('onResponse', (request, reply, done) => {
    logRequest(request, reply.statusCode, reply.elapsedTime, reply.errorCode);
    done();
  });
}
