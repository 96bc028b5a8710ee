// The platform side of a request: the platform-token guard (request.caller or a 401) and, on the
// routes below /projects/:id, the caller's project (request.project or a 404), each resolved once
// by a hook so that route handlers only read them.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountService, Caller } from '../services/accounts.ts';
import type { Project, ProjectService } from '../services/projects.ts';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    project: Project | null;
  }
}

export function decoratePlatformRequest(app: FastifyInstance): void {
  app.decorateRequest('caller', null);
  app.decorateRequest('project', null);
}

export function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(h);
  return m ? m[1] : undefined;
}

/** onRequest hook: the platform token, before the body is read and validated. */
export function platformAuth(accounts: AccountService) {
  return async (request: FastifyRequest): Promise<void> => {
    const token = bearer(request);
    if (token === undefined) throw new AppError('missing_token');
    request.caller = await accounts.authenticate(token);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('invalid_token.credential');
  return request.caller;
}

/**
 * The hooks of a route below /projects/:id: the platform token on request, then the caller's
 * project after the body was validated (a preHandler), so that a malformed body is a 422 whoever
 * owns the project, and another owner's project is a 404 like a missing one.
 */
export function ownedProjectRoute(accounts: AccountService, projects: ProjectService) {
  return {
    onRequest: platformAuth(accounts),
    preHandler: async (request: FastifyRequest): Promise<void> => {
      request.project = await projects.get(callerOf(request).account.id, (request.params as { id: string }).id);
    },
  };
}

/** The project the route's ownedProjectRoute hook resolved. */
export function projectOf(request: FastifyRequest): Project {
  if (!request.project) throw new Error(`${request.routeOptions.url ?? request.url} has no ownedProjectRoute hook`);
  return request.project;
}

/** The id of the project named by `:project_id` on the unauthenticated end-user routes, or 404 (ProjectService.exists). */
export function existingProject(projects: ProjectService) {
  return async (id: string): Promise<string> => {
    if (!(await projects.exists(id))) throw new AppError('not_found', { what: 'project' });
    return id;
  };
}
