// CORS (@fastify/cors), decided per request by the part of the service the path belongs to:
// - the data plane (/{project_id}/rest, /auth, /functions, and supabase-js's /rest/v1, /auth/v1,
//   /functions/v1 below them) is called by applications from any origin: `*`, credentials by
//   header only (no cookies), the PostgREST and request-id headers exposed (CONTRACT §5);
// - the control plane (/auth/*, /projects/*) is called by the console, which the service serves
//   itself (same origin); other origins only when CORS_ORIGINS names them. Its preflights are
//   always answered, without Access-Control-Allow-Origin for an origin that is not allowed;
// - everything else (/health, /metrics, /docs) has no CORS: a preflight there is a 404.
// Preflights without Origin are answered too (not @fastify/cors's plain-text 400): every error of
// the service keeps the flat shape.
import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

const DATA_PLANE = /^\/[a-z2-7]{16}\/(rest|auth|functions)(\/|$|\?)/;
const CONTROL_PLANE = /^\/(auth|projects)(\/|$|\?)/;
const METHODS = ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE', 'OPTIONS'];
const MAX_AGE_S = 86400;

const common = { methods: METHODS, maxAge: MAX_AGE_S, credentials: false, strictPreflight: false } as const;

const dataPlane: FastifyCorsOptions = {
  ...common,
  origin: '*',
  allowedHeaders: [
    'authorization', 'x-user-token', 'content-type', 'prefer', 'range', 'range-unit', 'accept', 'accept-profile', 'content-profile',
    'apikey', 'x-client-info', 'x-supabase-api-version', 'x-region',
  ],
  exposedHeaders: ['Content-Range', 'Preference-Applied', 'X-Request-Id', 'Retry-After', 'X-Supabase-Api-Version'],
};

const none: FastifyCorsOptions = { origin: false };

function controlPlane(origins: readonly string[]): FastifyCorsOptions {
  return {
    ...common,
    // an empty list still answers preflights, allowing no origin
    origin: origins.includes('*') ? '*' : [...origins],
    allowedHeaders: ['authorization', 'content-type', 'accept'],
    exposedHeaders: ['X-Request-Id', 'Retry-After'],
  };
}

export async function installCors(app: FastifyInstance, controlPlaneOrigins: readonly string[]): Promise<void> {
  const control = controlPlane(controlPlaneOrigins);
  const optionsFor = (request: FastifyRequest) => (DATA_PLANE.test(request.url) ? dataPlane : CONTROL_PLANE.test(request.url) ? control : none);
  await app.register(cors, { hideOptionsRoute: true, delegator: (request, callback) => callback(null, optionsFor(request)) });
}
