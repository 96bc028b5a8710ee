// Project auth settings (SPEC 4.8): the site URL and the allowed redirect URLs of email links.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { AuthSettingsService } from '../../services/auth-settings.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };

export function authSettingsRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, settings: AuthSettingsService): void {
  const tags = ['auth settings'];
  const owned = ownedProjectRoute(accounts, projects);

  const getAuthSettings = { tags, security, operationId: 'getAuthSettings', summary: 'Read the site URL and allowed redirect URLs', response: { 200: R.AuthSettings } };
  app.get<P>('/projects/:id/auth/settings', { schema: getAuthSettings, ...owned }, async (req) =>
    settings.get(projectOf(req).id),
  );

  app.put<P & { Body: S.AuthSettingsPut }>(
    '/projects/:id/auth/settings',
    {
      schema: {
        tags,
        security,
        operationId: 'updateAuthSettings',
        summary: 'Update the site URL and/or the allowed redirect URLs',
        body: S.AuthSettingsPut,
        response: { 200: R.AuthSettings },
        errors: { 422: ['validation_failed'] },
      },
      ...owned,
    },
    async (req) => settings.update(projectOf(req).id, req.body),
  );
}
