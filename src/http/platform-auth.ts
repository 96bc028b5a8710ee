// The platform-token guard: routes that register it get request.caller or a 401.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService, Caller } from '../services/accounts.ts';
import type { ProjectService } from '../services/projects.ts';
import { AppError } from '../errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

export function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(h);
  return m ? m[1] : undefined;
}

export function platformAuth(accounts: AccountService) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const token = bearer(request);
    if (token === undefined) throw new AppError('missing_token');
    request.caller = await accounts.authenticate(token);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new AppError('invalid_token.credential');
  return request.caller;
}

/** The caller's project named by `:id` (404 when it is missing or another owner's). */
export function ownedProject(projects: ProjectService) {
  return (req: { caller: unknown; params: { id: string } }) => projects.get(callerOf(req as never).account.id, req.params.id);
}

/** The id of the project named by `:project_id` on the unauthenticated end-user routes, or 404. */
export function existingProject(projects: ProjectService) {
  return async (id: string): Promise<string> => {
    const p = await projects.find(id);
    if (!p) throw new AppError('not_found', { what: 'project' });
    return p.id;
  };
}
