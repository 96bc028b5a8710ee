// Credentials of the application-facing routes: the project API key (Authorization: Bearer) and
// the optional end-user token (X-User-Token).
import type { FastifyRequest } from 'fastify';
import type { DataPlaneCaller, DataPlaneService } from '../services/data-plane.ts';
import { bearer } from './platform-auth.ts';

export function userToken(request: FastifyRequest): string | undefined {
  const h = request.headers['x-user-token'];
  return typeof h === 'string' ? h.trim() : undefined;
}

/** The key, end user and schema version of a data-plane request, or 401 (also for a project that does not exist). */
export function dataCaller(request: FastifyRequest, projectId: string, dataPlane: DataPlaneService): Promise<DataPlaneCaller> {
  return dataPlane.resolve(projectId, bearer(request), userToken(request));
}
