// API keys of a project (SPEC 4.3, CONTRACT §4).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { KeyService } from '../../services/keys.ts';
import { platformAuth, ownedProject } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];

export function keyRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, keys: KeyService): void {
  const auth = platformAuth(accounts);
  const tags = ['api keys'];
  const project = ownedProject(projects);

  app.get<{ Params: { id: string } }>('/projects/:id/keys', { schema: { tags, security, summary: "List a project's keys (no secrets)" }, onRequest: auth }, async (req) =>
    keys.list((await project(req)).id),
  );

  app.post<{ Params: { id: string }; Body: S.KeyCreate }>(
    '/projects/:id/keys',
    { schema: { tags, security, summary: 'Create a key; the response carries the plaintext key once', body: S.KeyCreate }, onRequest: auth },
    async (req, reply) => reply.status(201).send(await keys.create((await project(req)).id, req.body)),
  );

  app.delete<{ Params: { id: string; key_id: string } }>(
    '/projects/:id/keys/:key_id',
    { schema: { tags, security, summary: 'Revoke a key (effective at once)' }, onRequest: auth },
    async (req, reply) => {
      await keys.revoke((await project(req)).id, req.params.key_id);
      return reply.status(204).send();
    },
  );
}
