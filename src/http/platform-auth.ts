// The platform-token guard: routes that register it get request.caller or a 401.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService, Caller } from '../services/accounts.ts';
import { unauthorized } from '../errors.ts';

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
    if (token === undefined) throw unauthorized('missing_token', 'A platform token is required (Authorization: Bearer <token>).');
    request.caller = await accounts.authenticate(token);
  };
}

export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw unauthorized();
  return request.caller;
}
