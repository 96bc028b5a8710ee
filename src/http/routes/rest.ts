// The REST passthrough routes (SPEC 4.5): one thin handler for the eight routes.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DataPlaneCaller, DataPlaneService } from '../../services/data-plane.ts';
import type { RowService, RestRequest } from '../../services/rows/rows.ts';
import { dataCaller } from '../data-plane-auth.ts';

type Params = { project_id: string; table: string; id?: string };

/** Serves one passthrough request for a resolved caller (also the supabase-js door, compat/rest.ts). */
export async function serveRest(
  req: FastifyRequest,
  reply: FastifyReply,
  rows: RowService,
  { key, auth, version }: DataPlaneCaller,
  target: { projectId: string; table: string; rowId: string | null },
): Promise<FastifyReply> {
  const qs = req.url.indexOf('?');
  const res = await rows.handle({
    ...target,
    method: req.method as RestRequest['method'],
    query: new URLSearchParams(qs >= 0 ? req.url.slice(qs + 1) : ''),
    prefer: req.headers.prefer,
    accept: req.headers.accept,
    range: typeof req.headers.range === 'string' ? req.headers.range : undefined,
    body: req.body,
    key,
    auth,
    version,
  });
  for (const [k, v] of Object.entries(res.headers)) reply.header(k, v);
  return reply.status(res.status).send(res.body);
}

/** The native passthrough: `Authorization: Bearer <API key>`, optional `X-User-Token`. */
export async function serveNativeRest(req: FastifyRequest, reply: FastifyReply, dataPlane: DataPlaneService, rows: RowService, params: Params): Promise<FastifyReply> {
  const { project_id: projectId, table, id } = params;
  const caller = await dataCaller(req, projectId, dataPlane);
  return serveRest(req, reply, rows, caller, { projectId, table, rowId: id ?? null });
}

export function restRoutes(app: FastifyInstance, dataPlane: DataPlaneService, rows: RowService): void {
  const schema = { tags: ['rest passthrough'], security: [{ apiKey: [] }] };
  for (const url of ['/:project_id/rest/:table', '/:project_id/rest/:table/:id']) {
    app.route<{ Params: Params }>({
      method: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
      url,
      schema: { ...schema, summary: url.endsWith(':id') ? 'One row: get, update, replace, delete' : 'Rows: list, insert/upsert, bulk update, bulk delete' },
      handler: (req, reply) => serveNativeRest(req, reply, dataPlane, rows, req.params),
    });
  }
}
