// Credentials of the application-facing routes: the project API key (Authorization: Bearer) and
// the optional end-user token (X-User-Token).
import type { FastifyRequest } from 'fastify';
import type { KeyCaller, KeyService } from '../services/keys.ts';
import type { ProjectService } from '../services/projects.ts';
import { unauthorized } from '../errors.ts';
import { bearer } from './platform-auth.ts';

export function userToken(request: FastifyRequest): string | undefined {
  const h = request.headers['x-user-token'];
  return typeof h === 'string' ? h.trim() : undefined;
}

/** The API key of this project, or 401 (also when the project does not exist). */
export async function apiKeyOf(request: FastifyRequest, projectId: string, projects: ProjectService, keys: KeyService): Promise<KeyCaller> {
  const token = bearer(request);
  if (token === undefined) throw unauthorized('missing_api_key', 'A project API key is required (Authorization: Bearer <key>).');
  if (!(await projects.find(projectId))) throw unauthorized('invalid_api_key', 'The API key is unknown, revoked or expired.');
  return keys.authenticate(projectId, token);
}
