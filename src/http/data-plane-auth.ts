// Credentials of the application-facing routes: the project API key (Authorization: Bearer) and
// the optional end-user token (X-User-Token), resolved once per request by a hook into
// request.dataCaller.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DataPlaneCaller, DataPlaneService } from '../services/data-plane.ts';
import { bearer } from './platform-auth.ts';

declare module 'fastify' {
  interface FastifyRequest {
    dataCaller: DataPlaneCaller | null;
  }
}

export function decorateDataPlaneRequest(app: FastifyInstance): void {
  app.decorateRequest('dataCaller', null);
}

export function userToken(request: FastifyRequest): string | undefined {
  const h = request.headers['x-user-token'];
  return typeof h === 'string' ? h.trim() : undefined;
}

/**
 * preHandler hook of a route below /:project_id: the key, end user and schema version of the
 * request, or 401 (also for a project that does not exist).
 */
export function dataCallerHook(dataPlane: DataPlaneService) {
  return async (request: FastifyRequest): Promise<void> => {
    const projectId = (request.params as { project_id: string }).project_id;
    request.dataCaller = await dataPlane.resolve(projectId, bearer(request), userToken(request));
  };
}

/** The caller the route's dataCallerHook resolved. */
export function dataCallerOf(request: FastifyRequest): DataPlaneCaller {
  if (!request.dataCaller) throw new Error(`${request.routeOptions.url ?? request.url} has no dataCallerHook`);
  return request.dataCaller;
}
