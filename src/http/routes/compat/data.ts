// The supabase-js door to the data plane: /{project_id}/rest/v1/{table} (PostgREST, through the
// same RowService as the native passthrough) and /{project_id}/functions/v1/{name} (the same
// function service), with the key in `apikey` and the user's token as `Authorization: Bearer`.
// What Baseplate does not have (rpc, storage, realtime, graphql) answers 404 naming the feature.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DataPlaneService } from '../../../services/data-plane.ts';
import type { RowService } from '../../../services/rows/rows.ts';
import type { FunctionService } from '../../../services/functions.ts';
import { guessFor, serveNativeRest, serveRest } from '../rest.ts';
import { HIDDEN_HEADERS, INVOCATION_RESPONSES, serveInvocation } from '../functions.ts';
import { compatCaller, compatCredentials, unsupported } from './gotrue.ts';
import { restOperation } from '../../rest-docs.ts';
import { SUPABASE_SECURITY, wildcardPath } from '../../openapi.ts';

// credentials stay with the service on this door too: the function learns its caller from context.auth
const HIDDEN = new Set([...HIDDEN_HEADERS, 'apikey']);
const ALL = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

export function compatDataRoutes(app: FastifyInstance, dataPlane: DataPlaneService, rows: RowService, functions: FunctionService): void {
  const tags = ['supabase-js compatibility'];
  type Rest = { Params: { project_id: string; table: string } };

  const rest = async (req: FastifyRequest<Rest>, reply: FastifyReply) => {
    const { project_id: projectId, table } = req.params;
    // No table name starts with a digit: /rest/v1/5 is row 5 of a table named v1 (the native route it always was)
    if (/^\d+$/.test(table)) return serveNativeRest(req, reply, dataPlane, rows, { project_id: projectId, table: 'v1', id: table });
    const { apiKey, userToken } = compatCredentials(req);
    const guess = await guessFor(req, dataPlane, projectId, apiKey, userToken);
    return serveRest(req, reply, rows, { guess, resolve: () => compatCaller(req, projectId, dataPlane) }, { projectId, table, rowId: null });
  };
  for (const method of ALL) {
    // supabase.from(table): the passthrough with the key in `apikey` and the user as Authorization: Bearer
    const door = { tags, security: SUPABASE_SECURITY, operationId: `supabase${method[0]}${method.slice(1).toLowerCase()}Rows` };
    // PUT on a collection only answers 405: served, not documented
    const { schema, config } = method === 'PUT' ? { schema: { hide: true }, config: {} } : restOperation(method, false, door);
    app.route<Rest>({ method, url: '/:project_id/rest/v1/:table', schema, config, handler: rest });
  }

  // on the data door the key comes first (an unknown one, or project, is 401); storage, realtime
  // and graphql are no door of Baseplate's, and say so to anyone
  const fail = (what: string, hint: string, door: boolean) => async (req: FastifyRequest) => {
    if (door) await compatCaller(req, (req.params as { project_id: string }).project_id, dataPlane);
    throw unsupported(what, hint);
  };
  app.route({
    method: [...ALL],
    url: '/:project_id/rest/v1/rpc/:fn',
    // what Baseplate does not have is refused by name, not documented
    schema: { hide: true, tags, summary: 'supabase.rpc(): 404 not_supported' },
    handler: fail('rpc (calling database functions)', 'Deploy an edge function and call it with supabase.functions.invoke().', true),
  });

  type Invoke = { Params: { project_id: string; name: string; '*'?: string } };
  const invoke = async (req: FastifyRequest<Invoke>, reply: FastifyReply) => {
    const { project_id: projectId, name } = req.params;
    return serveInvocation(req, reply, functions, await compatCaller(req, projectId, dataPlane), { projectId, name, path: req.params['*'] ?? '' }, HIDDEN);
  };
  for (const url of ['/:project_id/functions/v1/:name', '/:project_id/functions/v1/:name/*']) {
    app.route<Invoke>({
      method: [...ALL],
      url,
      schema: {
        tags,
        security: SUPABASE_SECURITY,
        operationId: url.endsWith('*') ? 'supabaseInvokeFunctionPath' : 'supabaseInvokeFunction',
        summary: 'supabase.functions.invoke(name): the function service (key with the function permission)',
        response: INVOCATION_RESPONSES,
        'x-body-optional': true,
      },
      config: wildcardPath(),
      handler: invoke,
    });
  }

  const features: Array<[string, string, string]> = [
    ['storage', 'Storage (supabase.storage)', 'Keep files elsewhere and their URLs in a table.'],
    ['realtime', 'Realtime (supabase.channel)', 'Poll the table, or have an edge function notify your clients.'],
    ['graphql', 'GraphQL', 'Use supabase.from(table) (the REST passthrough).'],
  ];
  for (const [path, what, hint] of features) {
    for (const url of [`/:project_id/${path}/v1`, `/:project_id/${path}/v1/*`]) {
      app.route({ method: [...ALL], url, schema: { hide: true, tags, summary: `${what}: 404 not_supported` }, handler: fail(what, hint, false) });
    }
  }
}
