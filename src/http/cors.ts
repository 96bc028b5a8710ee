// CORS, decided per request by the part of the service the path belongs to:
// - the data plane (/{project_id}/rest, /auth, /functions, and supabase-js's /rest/v1, /auth/v1,
//   /functions/v1 below them) is called by applications from any origin: `*`, credentials by
//   header only (no cookies), the PostgREST and request-id headers exposed (CONTRACT §5);
// - the control plane (/auth/*, /projects/*) is called by the console, which the service serves
//   itself (same origin); other origins only when CORS_ORIGINS names them. Its preflights are
//   always answered, without Access-Control-Allow-Origin for an origin that is not allowed;
// - everything else (/health, /metrics, /docs) has no CORS: a preflight there is a 404.
// Preflights without Origin are answered too: every error of the service keeps the flat shape.
// Every header value is written once, at start-up: this runs on every request of the hot path,
// where a per-request options object (as @fastify/cors's delegator builds) measured about 4% of a read.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const DATA_PLANE = /^\/[a-z2-7]{16}\/(rest|auth|functions)(\/|$|\?)/;
const FUNCTIONS = /^\/[a-z2-7]{16}\/functions(\/|$|\?)/;
/** A list of header names (RFC 9110 tokens), as a preflight asks for them */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;
const CONTROL_PLANE = /^\/(auth|projects)(\/|$|\?)/;
const METHODS = 'GET, HEAD, POST, PATCH, PUT, DELETE, OPTIONS';
const MAX_AGE_S = '86400';

/** What one part of the service answers: the allowed origin (or a test of it) and the header lists. */
interface Plane {
  /** '*', or the origins allowed (the request's own is echoed back when listed) */
  origins: '*' | ReadonlySet<string>;
  allowHeaders: string;
  exposeHeaders: string;
}

const dataPlane: Plane = {
  origins: '*',
  allowHeaders: [
    'authorization', 'x-user-token', 'content-type', 'prefer', 'range', 'range-unit', 'accept', 'accept-profile', 'content-profile',
    'apikey', 'x-client-info', 'x-supabase-api-version', 'x-region',
  ].join(', '),
  exposeHeaders: ['Content-Range', 'Preference-Applied', 'X-Request-Id', 'Retry-After', 'X-Supabase-Api-Version'].join(', '),
};

function controlPlane(origins: readonly string[]): Plane {
  return {
    // an empty list still answers preflights, allowing no origin
    origins: origins.includes('*') ? '*' : new Set(origins),
    allowHeaders: 'authorization, content-type, accept',
    exposeHeaders: 'X-Request-Id, Retry-After',
  };
}

/** The headers every answer of `plane` carries (a preflight's too). */
function addCorsHeaders(plane: Plane, req: FastifyRequest, reply: FastifyReply): void {
  // the allowed origin depends on the request's Origin: caches must key on it
  reply.header('Vary', 'Origin');
  const origin = req.headers.origin;
  if (plane.origins === '*') reply.header('Access-Control-Allow-Origin', '*');
  else if (origin !== undefined && plane.origins.has(origin)) reply.header('Access-Control-Allow-Origin', origin);
  reply.header('Access-Control-Expose-Headers', plane.exposeHeaders);
}

export function installCors(app: FastifyInstance, controlPlaneOrigins: readonly string[]): void {
  const control = controlPlane(controlPlaneOrigins);
  const planeOf = (url: string): Plane | null => (DATA_PLANE.test(url) ? dataPlane : CONTROL_PLANE.test(url) ? control : null);
  app.addHook('onRequest', (req, reply, done) => {
    const plane = planeOf(req.url);
    if (plane) addCorsHeaders(plane, req, reply);
    done();
  });
  // no other route answers OPTIONS: every preflight comes here
  app.options('*', { schema: { hide: true } }, (req, reply) => {
    const plane = planeOf(req.url);
    if (!plane) return reply.callNotFound();
    return reply
      .header('Access-Control-Allow-Methods', METHODS)
      .header('Access-Control-Allow-Headers', allowedHeaders(plane, req))
      .header('Vary', 'Origin, Access-Control-Request-Headers')
      .header('Access-Control-Max-Age', MAX_AGE_S)
      .code(204)
      .header('Content-Length', '0')
      .send();
  });
}

/**
 * A function reads whatever headers its application sends (an Edge Function answers its own
 * preflight), so a preflight of a function route is allowed the headers it asks for besides the
 * data plane's: credentials travel in headers only, never cookies, so allowing a header opens
 * nothing to another origin that the function does not read itself.
 */
function allowedHeaders(plane: Plane, req: FastifyRequest): string {
  const asked = req.headers['access-control-request-headers'];
  if (plane !== dataPlane || !FUNCTIONS.test(req.url)) return plane.allowHeaders;
  if (typeof asked !== 'string' || asked.length > 1024 || !HEADER_LIST.test(asked.trim())) return plane.allowHeaders;
  return `${plane.allowHeaders}, ${asked.trim().toLowerCase()}`;
}
