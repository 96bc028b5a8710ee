// Platform accounts: /auth/* (SPEC 4.1, CONTRACT §1).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import { platformAuth, callerOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];

export function accountRoutes(app: FastifyInstance, accounts: AccountService): void {
  const auth = platformAuth(accounts);
  const tags = ['platform accounts'];

  app.post<{ Body: S.RegisterBody }>('/auth/register', { schema: { tags, summary: 'Create a platform account', body: S.RegisterBody } }, async (req, reply) =>
    reply.status(201).send(await accounts.register(req.body)),
  );

  app.post<{ Body: S.LoginBody }>('/auth/login', { schema: { tags, summary: 'Obtain a platform token', body: S.LoginBody } }, async (req) =>
    accounts.login(req.body, req.ip),
  );

  app.post('/auth/logout', { schema: { tags, security, summary: 'Invalidate the current token' }, onRequest: auth }, async (req, reply) => {
    await accounts.logout(callerOf(req));
    return reply.status(204).send();
  });

  app.get('/auth/me', { schema: { tags, security, summary: 'The authenticated account' }, onRequest: auth }, async (req) => callerOf(req).account);

  app.patch<{ Body: S.AccountPatch }>(
    '/auth/me',
    { schema: { tags, security, summary: 'Update the account (email/password need current_password)', body: S.AccountPatch }, onRequest: auth },
    async (req) => accounts.update(callerOf(req), req.body, req.ip),
  );

  app.delete('/auth/me', { schema: { tags, security, summary: 'Delete the account and all its projects' }, onRequest: auth }, async (req, reply) => {
    await accounts.remove(callerOf(req));
    return reply.status(204).send();
  });
}
