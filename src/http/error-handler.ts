// The single place errors become responses: AppError as is (database failures are AppErrors made
// in src/storage), schema failures as 422 naming the field, framework body errors as 400/413/415,
// anything else as an opaque 500 with the request id.
// Errors found before Fastify has a request (the HTTP parser's, CONNECT) are written raw on the
// socket, in the same flat shape and with a request id.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { AppError } from '../errors.ts';
import { StorageFailure } from '../storage/engine.ts';
import { validationToAppError, type AjvError } from './schema-errors.ts';

/** Fastify's own errors: body parsing, and any other with a 4xx status of its own. */
function frameworkError(e: FastifyError): AppError | null {
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('invalid_json');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('bad_request.content_length');
  }
  return null;
}

function send(reply: FastifyReply, err: AppError, status = err.status): void {
  reply.errorCode = err.code;
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  void reply.status(status).send(err.toJSON());
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    // refused before its body was read (415, 413): the rest of the body would be read as the next
    // request, or be cut off by REQUEST_TIMEOUT_MS with a second answer; the connection ends here
    if (!request.raw.complete) reply.header('Connection', 'close');
    // a store deleted meanwhile (a 404) is no failure of the database
    if (error instanceof StorageFailure && error.status >= 500) request.log.warn({ code: error.code, cause: error.why, url: request.url.split('?')[0] }, 'database failure');
    if (error instanceof AppError) return send(reply, error);
    const e = error as FastifyError & { validation?: AjvError[]; validationContext?: string };
    if (e.validation) return send(reply, validationToAppError(e.validation, e.validationContext ?? 'body'));
    const framework = frameworkError(e);
    if (framework) return send(reply, framework);
    // another framework error keeps its own 4xx status, in the flat shape
    if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) return send(reply, new AppError('bad_request.malformed'), e.statusCode);
    request.log.error({ err: error }, 'unexpected error');
    return send(reply, new AppError('internal_error', { request_id: request.id }));
  });

  app.setNotFoundHandler((request, reply) => {
    send(reply, new AppError('not_found.route', { method: request.method, path: request.url.split('?')[0] }));
  });
}

/** Sockets already answered raw: a parser that failed once may report more errors on later bytes. */
const answered = new WeakSet<Duplex>();

/**
 * Writes one complete error response on a socket that Fastify does not serve, and half-closes it
 * (ending it outright could reset the connection while the client's bytes are still unread, and
 * the client would never see the answer); a client that never closes its side is cut off later.
 */
function writeRaw(socket: Duplex, err: AppError): string {
  const id = randomUUID();
  const body = JSON.stringify(err);
  answered.add(socket);
  socket.end(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 5000).unref();
  return id;
}

const PARSER_ERRORS: Record<string, 'headers_too_large' | 'request_timeout'> = {
  HPE_HEADER_OVERFLOW: 'headers_too_large',
  ERR_HTTP_REQUEST_TIMEOUT: 'request_timeout',
};

/**
 * Fastify's clientErrorHandler: Node's HTTP parser refused the bytes (or the client was too slow).
 * The refusal is a request answered like any other: one log line (at info, as a 4xx of a route)
 * and counted (`counted`: the metrics, under no method or route, which the parser never read).
 */
export function clientErrorHandler(counted: (status: number) => void) {
  return function (this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // a response of an earlier request on this connection is being written: another would corrupt it
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (answered.has(socket) || !socket.writable || inFlight?.headersSent) {
      if (!answered.has(socket)) socket.destroy();
      return;
    }
    const reason = (err.code ?? 'unknown').replace(/^HPE_/, '').toLowerCase();
    const refusal = new AppError(PARSER_ERRORS[err.code ?? ''] ?? 'bad_request.http', { reason });
    const id = writeRaw(socket, refusal);
    this.log.info({ reqId: id, status: refusal.status, code: refusal.code, reason }, 'request refused by the HTTP parser');
    counted(refusal.status);
  };
}

/** CONNECT is answered like any other method without a route; without a listener Node would drop the socket. */
export function refuseConnect(app: FastifyInstance): void {
  app.server.on('connect', (req: { url?: string }, socket: Duplex) => {
    socket.on('error', () => undefined);
    const refusal = new AppError('not_found.route', { method: 'CONNECT', path: req.url ?? '' });
    const id = writeRaw(socket, refusal);
    app.log.debug({ reqId: id, status: refusal.status, code: refusal.code }, 'CONNECT refused');
  });
}
