// Platform accounts: /auth/* (SPEC 4.1, CONTRACT §1).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import { platformAuth, callerOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];

export function accountRoutes(app: FastifyInstance, accounts: AccountService): void {
  const auth = platformAuth(accounts);
  const tags = ['platform accounts'];

  const registerAccount = {
    tags,
    operationId: 'registerAccount',
    summary: 'Create a platform account',
    body: S.RegisterBody,
    response: { 201: R.PlatformSession },
    errors: { 409: ['email_taken'], 422: ['validation_failed'] },
  };
  app.post<{ Body: S.RegisterBody }>('/auth/register', { schema: registerAccount }, async (req, reply) =>
    reply.status(201).send(await accounts.register(req.body)),
  );

  const login = {
    tags,
    operationId: 'login',
    summary: 'Obtain a platform token',
    body: S.LoginBody,
    response: { 200: R.PlatformSession },
    errors: { 401: ['invalid_credentials'], 429: ['rate_limited'] },
  };
  app.post<{ Body: S.LoginBody }>('/auth/login', { schema: login }, async (req) => accounts.login(req.body, req.ip));

  app.post('/auth/logout', { schema: { tags, security, operationId: 'logout', summary: 'Invalidate the current token', response: { 204: R.NoContent } }, onRequest: auth }, async (req, reply) => {
    await accounts.logout(callerOf(req));
    return reply.status(204).send();
  });

  const getAccount = { tags, security, operationId: 'getAccount', summary: 'The authenticated account', response: { 200: R.Account } };
  app.get('/auth/me', { schema: getAccount, onRequest: auth }, async (req) => callerOf(req).account);

  app.patch<{ Body: S.AccountPatch }>(
    '/auth/me',
    {
      schema: {
        tags,
        security,
        operationId: 'updateAccount',
        summary: 'Update the account (email/password need current_password)',
        body: S.AccountPatch,
        response: { 200: R.Account },
        errors: { 403: ['invalid_credentials'], 409: ['email_taken'], 422: ['validation_failed'], 429: ['rate_limited'] },
      },
      onRequest: auth,
    },
    async (req) => accounts.update(callerOf(req), req.body, req.ip),
  );

  const deleteAccount = { tags, security, operationId: 'deleteAccount', summary: 'Delete the account and all its projects', response: { 204: R.NoContent } };
  app.delete('/auth/me', { schema: deleteAccount, onRequest: auth }, async (req, reply) => {
    await accounts.remove(callerOf(req));
    return reply.status(204).send();
  });
}
