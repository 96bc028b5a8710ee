// Project auth settings (SPEC 4.8): the site URL and the allowed redirect URLs of email links.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { AuthSettingsService } from '../../services/auth-settings.ts';
import { platformAuth, ownedProject } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };

export function authSettingsRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, settings: AuthSettingsService): void {
  const auth = platformAuth(accounts);
  const tags = ['auth settings'];
  const project = ownedProject(projects);

  app.get<P>('/projects/:id/auth/settings', { schema: { tags, security, summary: 'Read the site URL and allowed redirect URLs' }, onRequest: auth }, async (req) =>
    settings.get((await project(req)).id),
  );

  app.put<P & { Body: S.AuthSettingsPut }>(
    '/projects/:id/auth/settings',
    { schema: { tags, security, summary: 'Update the site URL and/or the allowed redirect URLs', body: S.AuthSettingsPut }, onRequest: auth },
    async (req) => settings.update((await project(req)).id, req.body),
  );
}
