// The REST passthrough routes (SPEC 4.5): one thin handler for the eight routes. Unlike the other
// data-plane routes (data-plane-auth.ts dataCallerHook), the caller is resolved lazily, at most once:
// a read by credentials seen before need not resolve it at all (services/rows/guarded-read.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CallerGuess, DataPlaneCaller, DataPlaneService } from '../../services/data-plane.ts';
import type { RowService, RestRequestParts, RestTarget, RestResponse } from '../../services/rows/rows.ts';
import { StaleGuess } from '../../services/data-plane.ts';
import { StorageFailure, StoreMissing } from '../../storage/engine.ts';
import { userToken } from '../data-plane-auth.ts';
import { bearer } from '../platform-auth.ts';
import { restOperation, type RestMethod } from '../rest-docs.ts';
import { DATA_PLANE_SECURITY } from '../openapi.ts';

type Params = { project_id: string; table: string; id?: string };

/** Reads, and inserts (a plain insert of one row: insert.ts), may run under a guessed caller. */
const GUESSED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST']);

/**
 * Serves one passthrough request (also the supabase-js door, compat/data.ts). A read with a `guess`
 * (credentials seen before) assumes their caller and checks it in its own statement; otherwise, or
 * when the check fails, the caller is resolved first.
 */
export async function serveRest(
  req: FastifyRequest,
  reply: FastifyReply,
  rows: RowService,
  caller: { guess: CallerGuess | null; resolve: () => Promise<DataPlaneCaller> },
  target: { projectId: string; table: string; rowId: string | null },
): Promise<FastifyReply> {
  const request = { ...target, ...restRequestOf(req) };
  const res = await handleGuessed(rows, request, caller.guess) ?? await rows.handle({ ...request, ...(await caller.resolve()) });
  return sendRest(reply, res);
}

/** What a passthrough-shaped request (this one, or the owner's row routes) asks, whichever table it names. */
export function restRequestOf(req: FastifyRequest): RestRequestParts {
  const qs = req.url.indexOf('?');
  return {
    method: req.method as RestTarget['method'],
    query: new URLSearchParams(qs >= 0 ? req.url.slice(qs + 1) : ''),
    prefer: req.headers.prefer,
    accept: req.headers.accept,
    range: typeof req.headers.range === 'string' ? req.headers.range : undefined,
    body: req.body,
  };
}

export function sendRest(reply: FastifyReply, res: RestResponse): FastifyReply {
  for (const [k, v] of Object.entries(res.headers)) reply.header(k, v);
  return reply.status(res.status).send(res.body);
}

/** The answer under a guessed caller, or null when there is none or its guard did not hold. */
async function handleGuessed(rows: RowService, request: RestTarget, guess: CallerGuess | null): Promise<RestResponse | null> {
  if (!guess || !GUESSED_METHODS.has(request.method)) return null;
  try {
    return await rows.handle({ ...request, ...guess.caller, guess });
  } catch (err) {
    // an answer the guard did not confirm may be the guessed caller's, not this one's; but a failed
    // database says nothing about the caller, and the long way would only wait on it again (a
    // project deleted meanwhile is the caller's business: the long way answers 401)
    const failed = err instanceof StorageFailure && !(err instanceof StoreMissing);
    if ((guess.confirmed || failed) && !(err instanceof StaleGuess)) throw err;
    return null;
  }
}

/** The caller these credentials resolved to last time, for a request that may run under it (else null). */
export function guessFor(req: FastifyRequest, dataPlane: DataPlaneService, projectId: string, apiKey: string | undefined, userToken: string | undefined): Promise<CallerGuess | null> {
  return GUESSED_METHODS.has(req.method) ? dataPlane.guess(projectId, apiKey, userToken) : Promise.resolve(null);
}

/** The native passthrough: `Authorization: Bearer <API key>`, optional `X-User-Token`. */
export async function serveNativeRest(req: FastifyRequest, reply: FastifyReply, dataPlane: DataPlaneService, rows: RowService, params: Params): Promise<FastifyReply> {
  const { project_id: projectId, table, id } = params;
  const guess = await guessFor(req, dataPlane, projectId, bearer(req), userToken(req));
  return serveRest(req, reply, rows, { guess, resolve: () => dataPlane.resolve(projectId, bearer(req), userToken(req)) }, { projectId, table, rowId: id ?? null });
}

export function restRoutes(app: FastifyInstance, dataPlane: DataPlaneService, rows: RowService): void {
  const door = { tags: ['rest passthrough'], security: DATA_PLANE_SECURITY };
  const METHODS: RestMethod[] = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'];
  for (const single of [false, true]) {
    const url = single ? '/:project_id/rest/:table/:id' : '/:project_id/rest/:table';
    for (const method of METHODS) {
      // PUT on a collection and POST on a row only answer 405: served, not documented
      const documented = single ? method !== 'POST' : method !== 'PUT';
      const operationId = `${method.toLowerCase()}${single ? 'Row' : 'Rows'}`;
      const { schema, config } = documented ? restOperation(method, single, { ...door, operationId }) : { schema: { hide: true }, config: {} };
      app.route<{ Params: Params }>({ method, url, schema, config, handler: (req, reply) => serveNativeRest(req, reply, dataPlane, rows, req.params) });
    }
  }
}
