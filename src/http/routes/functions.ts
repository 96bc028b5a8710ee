// Edge functions (CONTRACT §8): deployment by the owner, invocation with a project API key holding
// the `function` permission (and optionally an end-user token).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { DataPlaneCaller, DataPlaneService } from '../../services/data-plane.ts';
import type { FunctionService } from '../../services/functions.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import { dataCallerHook, dataCallerOf } from '../data-plane-auth.ts';
import { AppError } from '../../errors.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';
import { Type } from '@sinclair/typebox';
import { DATA_PLANE_SECURITY, wildcardPath } from '../openapi.ts';

const security = [{ platformToken: [] }];
type PN = { Params: { id: string; name: string } };
/** What an invocation answers: the function's own status, headers and body (any media type, or none), or one of Baseplate's errors. */
const anyBody = (description: string) => ({ description, content: { 'application/json': { schema: {} }, '*/*': { schema: {} } } });
export const INVOCATION_RESPONSES = {
  200: anyBody("The function's response: its status, headers and body are the function's own (a JSON value, or text with the content type it set)"),
  default: anyBody(
    "The function's own status and body, or Baseplate's error `{ code, message, details, hint }`: 401 `missing_api_key`/`invalid_api_key`, 403 `insufficient_permission` (the key lacks `function`), " +
      '404 `not_found`, 500 `function_error`, `function_out_of_memory`, `function_invalid_response` or `function_response_too_large`, 503 `function_busy` (with Retry-After), 504 `function_timeout`.',
  ),
};

// credentials stay with the service: the function learns its caller from context.auth
export const HIDDEN_HEADERS: ReadonlySet<string> = new Set(['authorization', 'x-user-token', 'cookie']);

export function functionRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, dataPlane: DataPlaneService, functions: FunctionService): void {
  const tags = ['edge functions'];
  const owned = ownedProjectRoute(accounts, projects);
  app.addHook('onClose', () => functions.close());

  const listFunctions = { tags, security, operationId: 'listFunctions', summary: 'List deployed functions', response: { 200: Type.Array(R.FunctionInfo) } };
  app.get<{ Params: { id: string } }>('/projects/:id/functions', { schema: listFunctions, ...owned }, async (req) =>
    functions.list(projectOf(req).id),
  );

  const getFunction = { tags, security, operationId: 'getFunction', summary: 'Show a function and its code', response: { 200: R.FunctionWithCode } };
  app.get<PN>('/projects/:id/functions/:name', { schema: getFunction, ...owned }, async (req) =>
    functions.get(projectOf(req).id, req.params.name),
  );

  app.put<PN & { Body: S.FunctionDeploy }>(
    '/projects/:id/functions/:name',
    {
      schema: {
        tags,
        security,
        operationId: 'deployFunction',
        summary: 'Deploy (create or replace) a function',
        body: S.FunctionDeploy,
        response: { 201: R.FunctionWithCode, 200: R.FunctionWithCode },
        errors: { 422: ['validation_failed', 'invalid_function'], 503: ['function_busy'] },
      },
      ...owned,
    },
    async (req, reply) => {
      const { created, fn } = await functions.deploy(projectOf(req).id, req.params.name, req.body.code);
      return reply.status(created ? 201 : 200).send(fn);
    },
  );

  const deleteFunction = { tags, security, operationId: 'deleteFunction', summary: 'Delete a function', response: { 204: R.NoContent } };
  app.delete<PN>('/projects/:id/functions/:name', { schema: deleteFunction, ...owned }, async (req, reply) => {
    await functions.remove(projectOf(req).id, req.params.name);
    return reply.status(204).send();
  });

  const caller = dataCallerHook(dataPlane);
  type Invoke = { Params: { project_id: string; name: string; '*'?: string } };
  const invoke = async (req: FastifyRequest<Invoke>, reply: FastifyReply) => {
    const { project_id: projectId, name } = req.params;
    return serveInvocation(req, reply, functions, dataCallerOf(req), { projectId, name, path: req.params['*'] ?? '' }, HIDDEN_HEADERS);
  };
  for (const url of ['/:project_id/functions/:name', '/:project_id/functions/:name/*']) {
    app.route<Invoke>({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url,
      schema: {
        tags,
        security: DATA_PLANE_SECURITY,
        operationId: url.endsWith('*') ? 'invokeFunctionPath' : 'invokeFunction',
        summary: 'Invoke a function (API key with the function permission; optional X-User-Token)',
        response: INVOCATION_RESPONSES,
        'x-body-optional': true,
      },
      config: wildcardPath(),
      preHandler: caller,
      handler: invoke,
    });
  }
}

/**
 * Invokes a function for a resolved caller (also the supabase-js door, compat/functions.ts): the key
 * needs `function`; `hidden` headers (credentials) never reach the function.
 */
export async function serveInvocation(
  req: FastifyRequest,
  reply: FastifyReply,
  functions: FunctionService,
  { key, auth }: DataPlaneCaller,
  target: { projectId: string; name: string; path: string },
  hidden: ReadonlySet<string>,
): Promise<FastifyReply> {
  if (!key.permissions.has('function')) throw new AppError('insufficient_permission', { permission: 'function' });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (!hidden.has(k) && typeof v === 'string') headers[k] = v;
  const res = await functions.invoke(
    target.projectId,
    target.name,
    { method: req.method, path: `/${target.path}`, query: req.query as Record<string, string | string[]>, headers, body: req.body ?? null },
    key,
    auth,
  );
  // the service's origin is shared by every project: content a function serves is never sniffed
  // and, unless it is JSON, runs sandboxed (no script access to the origin)
  reply.status(res.status).headers(res.headers).header('x-content-type-options', 'nosniff');
  if (res.body === undefined || res.status === 204 || res.status === 205 || res.status === 304) return reply.send();
  if (typeof res.body === 'string' && res.headers['content-type']) return reply.header('content-security-policy', 'sandbox').send(res.body);
  return reply.type('application/json; charset=utf-8').send(JSON.stringify(res.body));
}
