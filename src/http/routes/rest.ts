// The REST passthrough routes (SPEC 4.5): one thin handler for the eight routes.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataPlaneService } from '../../services/data-plane.ts';
import type { RowService, RestRequest } from '../../services/rows/rows.ts';
import { dataCallerHook, dataCallerOf } from '../data-plane-auth.ts';

type Params = { project_id: string; table: string; id?: string };

export function restRoutes(app: FastifyInstance, dataPlane: DataPlaneService, rows: RowService): void {
  const handler = async (req: FastifyRequest<{ Params: Params }>) => {
    const { project_id: projectId, table, id } = req.params;
    const { key, auth, version } = dataCallerOf(req);
    const qs = req.url.indexOf('?');
    return rows.handle({
      projectId,
      table,
      rowId: id ?? null,
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
  };
  const schema = { tags: ['rest passthrough'], security: [{ apiKey: [] }] };
  const caller = dataCallerHook(dataPlane);
  for (const url of ['/:project_id/rest/:table', '/:project_id/rest/:table/:id']) {
    app.route<{ Params: Params }>({
      method: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
      url,
      schema: { ...schema, summary: url.endsWith(':id') ? 'One row: get, update, replace, delete' : 'Rows: list, insert/upsert, bulk update, bulk delete' },
      preHandler: caller,
      handler: async (req, reply) => {
        const res = await handler(req);
        for (const [k, v] of Object.entries(res.headers)) reply.header(k, v);
        return reply.status(res.status).send(res.body);
      },
    });
  }
}
