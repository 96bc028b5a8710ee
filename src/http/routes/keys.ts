// API keys of a project (SPEC 4.3, CONTRACT §4).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { KeyService } from '../../services/keys.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import { Type } from '@sinclair/typebox';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];

export function keyRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, keys: KeyService): void {
  const tags = ['api keys'];
  const owned = ownedProjectRoute(accounts, projects);

  const listKeys = { tags, security, operationId: 'listKeys', summary: "List a project's keys (no secrets)", response: { 200: Type.Array(R.ApiKey) } };
  app.get<{ Params: { id: string } }>('/projects/:id/keys', { schema: listKeys, ...owned }, async (req) =>
    keys.list(projectOf(req).id),
  );

  app.post<{ Params: { id: string }; Body: S.KeyCreate }>(
    '/projects/:id/keys',
    {
      schema: {
        tags,
        security,
        operationId: 'createKey',
        summary: 'Create a key; the response carries the plaintext key once',
        body: S.KeyCreate,
        response: { 201: R.ApiKeyWithSecret },
        errors: { 422: ['validation_failed'] },
      },
      ...owned,
    },
    async (req, reply) => reply.status(201).send(await keys.create(projectOf(req).id, req.body)),
  );

  app.delete<{ Params: { id: string; key_id: string } }>(
    '/projects/:id/keys/:key_id',
    { schema: { tags, security, operationId: 'revokeKey', summary: 'Revoke a key (effective at once)', response: { 204: R.NoContent } }, ...owned },
    async (req, reply) => {
      await keys.revoke(projectOf(req).id, req.params.key_id);
      return reply.status(204).send();
    },
  );
}
