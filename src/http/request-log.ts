// One log line per request, when its answer is sent: method, path (never the query string, which
// may hold filter values), status, time, the request id (pino's reqId) and, for an error, its code.
// Fastify's own request logging writes two lines per request, costing the hot path twice.
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyReply {
    /** the code of the error answer this reply carries (set by the error handler) */
    errorCode: string | null;
  }
}

export function installRequestLog(app: FastifyInstance): void {
  app.decorateReply('errorCode', null);
  app.addHook('onResponse', async (request, reply) => {
    const path = request.url.split('?', 1)[0];
    const entry = { method: request.method, path, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 };
    if (reply.statusCode >= 500) request.log.error({ ...entry, code: reply.errorCode }, 'request failed');
    else if (reply.statusCode >= 400) request.log.info({ ...entry, code: reply.errorCode }, 'request refused');
    else request.log.info(entry, 'request');
  });
}
