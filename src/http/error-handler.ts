// The single place errors become responses: AppError as is, schema failures as 422 naming the
// field, framework body errors as 400/413/415, anything else as an opaque 500 with the request id.
// Errors found before Fastify has a request (the HTTP parser's, CONNECT) are written raw on the
// socket, in the same flat shape and with a request id.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { AppError } from '../errors.ts';
import { DatabaseUnavailable, QueryTimeout, StorageFull, StoreMissing } from '../storage/engine.ts';

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
}

const REASONS: Record<string, string> = {
  type: 'wrong_type',
  minLength: 'too_short',
  maxLength: 'too_long',
  minItems: 'too_few',
  maxItems: 'too_many',
  enum: 'not_allowed',
  const: 'not_allowed',
  pattern: 'invalid_format',
  format: 'invalid_format',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  uniqueItems: 'duplicate',
  minProperties: 'too_few',
  maxProperties: 'too_many',
  anyOf: 'wrong_type',
};

function fieldOf(path: string, extra?: unknown): string {
  const parts = path.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (typeof extra === 'string') parts.push(extra);
  return parts.length ? parts.map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`)).join('') : '(body)';
}

export function validationToAppError(errors: AjvError[], context: string): AppError {
  const first = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[0]!;
  if (first.keyword === 'additionalProperties') {
    const field = fieldOf(first.instancePath, first.params.additionalProperty);
    return new AppError(422, 'unknown_field', `Unknown field '${field}'.`, { field, reason: 'unknown_field' });
  }
  if (first.keyword === 'required') {
    const field = fieldOf(first.instancePath, first.params.missingProperty);
    return new AppError(422, 'validation_failed', `The field '${field}' is required.`, { field, reason: 'required' });
  }
  const field = fieldOf(first.instancePath);
  const reason = REASONS[first.keyword] ?? 'invalid';
  const where = context === 'body' ? 'field' : context === 'querystring' ? 'query parameter' : context;
  return new AppError(422, 'validation_failed', `The ${where} '${field}' is invalid (${reason}).`, { field, reason });
}

/** Seconds a client should wait before retrying after 503 database_unavailable (a restart or failover takes a few). */
const DATABASE_RETRY_AFTER_S = 5;

const UNAVAILABLE_MESSAGES: Record<DatabaseUnavailable['reason'], string> = {
  unreachable: 'The service could not get a connection to the database; nothing was changed.',
  connection_lost: 'The connection to the database was lost while the request ran.',
  read_only: 'The database accepts only reads right now (a failover may be in progress); nothing was changed.',
};

function databaseUnavailable(reason: DatabaseUnavailable['reason']): AppError {
  return new AppError(
    503,
    'database_unavailable',
    UNAVAILABLE_MESSAGES[reason],
    { reason },
    reason === 'connection_lost'
      ? 'This is temporary: retry the request. A write whose connection was lost while it committed may have been applied.'
      : 'This is temporary: retry the request after Retry-After seconds.',
    { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
  );
}

function send(reply: FastifyReply, err: AppError): void {
  reply.errorCode = err.code;
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  void reply.status(err.status).send({ code: err.code, message: err.message, details: err.details ?? null, hint: err.hint ?? null });
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) return send(reply, error);
    if (error instanceof QueryTimeout) {
      request.log.warn({ url: request.url.split('?')[0] }, 'statement timeout');
      return send(reply, new AppError(503, 'query_timeout', 'The database cancelled the query because it ran longer than the statement timeout.', null, 'Narrow the filter or add an index.'));
    }
    if (error instanceof DatabaseUnavailable) {
      request.log.warn({ reason: error.reason, cause: error.message }, 'database unavailable');
      return send(reply, databaseUnavailable(error.reason));
    }
    if (error instanceof StorageFull) {
      request.log.warn('storage full: a write was refused');
      return send(reply, new AppError(507, 'storage_full', 'The server has no storage space left for this write.', null, 'Reads still work; writes succeed again once space is freed on the server.'));
    }
    // deleted while the request was under way (a project or table, maybe through another node)
    if (error instanceof StoreMissing) return send(reply, new AppError(404, 'not_found', 'No such resource: it was deleted meanwhile.'));
    const e = error as FastifyError & { validation?: AjvError[]; validationContext?: string };
    if (e.validation) return send(reply, validationToAppError(e.validation, e.validationContext ?? 'body'));
    switch (e.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, new AppError(413, 'payload_too_large', 'The request body is larger than the limit.'));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, new AppError(415, 'unsupported_media_type', 'The request body must be application/json.'));
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return send(reply, new AppError(400, 'invalid_json', 'The request body is not valid JSON.'));
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return send(reply, new AppError(400, 'bad_request', 'The Content-Length header does not match the body.'));
    }
    if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
      return send(reply, new AppError(e.statusCode, 'bad_request', 'The request is malformed.'));
    }
    request.log.error({ err: error }, 'unexpected error');
    return send(reply, new AppError(500, 'internal_error', `An unexpected error occurred (request id ${request.id}).`, { request_id: request.id }));
  });

  app.setNotFoundHandler((request, reply) => {
    send(reply, new AppError(404, 'not_found', 'No such route.', { method: request.method, path: request.url.split('?')[0] }));
  });
}

/** Sockets already answered raw: a parser that failed once may report more errors on later bytes. */
const answered = new WeakSet<Duplex>();

/**
 * Writes one complete error response on a socket that Fastify does not serve, and half-closes it
 * (ending it outright could reset the connection while the client's bytes are still unread, and
 * the client would never see the answer); a client that never closes its side is cut off later.
 */
function writeRaw(socket: Duplex, status: number, code: string, message: string, details: unknown = null): string {
  const id = randomUUID();
  const body = JSON.stringify({ code, message, details, hint: null });
  answered.add(socket);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 5000).unref();
  return id;
}

const PARSER_ERRORS: Record<string, [status: number, code: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'The request headers are larger than the server accepts.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'The request was not received in time.'],
};

/** Fastify's clientErrorHandler: Node's HTTP parser refused the bytes (or the client was too slow). */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // a response of an earlier request on this connection is being written: another would corrupt it
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (answered.has(socket) || !socket.writable || inFlight?.headersSent) {
    if (!answered.has(socket)) socket.destroy();
    return;
  }
  const reason = (err.code ?? 'unknown').replace(/^HPE_/, '').toLowerCase();
  const [status, code, message] = PARSER_ERRORS[err.code ?? ''] ?? [400, 'bad_request', 'The request is not valid HTTP.'];
  const id = writeRaw(socket, status, code, message, { reason });
  this.log.debug({ reqId: id, reason }, 'malformed request refused');
}

/** CONNECT is answered like any other method without a route; without a listener Node would drop the socket. */
export function refuseConnect(app: FastifyInstance): void {
  app.server.on('connect', (req: { url?: string }, socket: Duplex) => {
    socket.on('error', () => undefined);
    const id = writeRaw(socket, 404, 'not_found', 'No such route.', { method: 'CONNECT', path: req.url ?? '' });
    app.log.debug({ reqId: id }, 'CONNECT refused');
  });
}
