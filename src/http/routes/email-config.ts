// A project's email configuration (SPEC 4.9, CONTRACT §7): secrets are write-only.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { EmailConfigService } from '../../services/email-config.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };

export function emailConfigRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, email: EmailConfigService): void {
  const tags = ['email'];
  const owned = ownedProjectRoute(accounts, projects);
  const base = '/projects/:id/auth/email-config';

  const getEmailConfig = { tags, security, operationId: 'getEmailConfig', summary: 'Show the email configuration (secrets omitted; has_* booleans)', response: { 200: R.EmailConfig } };
  app.get<P>(base, { schema: getEmailConfig, ...owned }, async (req) =>
    email.get(projectOf(req).id),
  );

  app.put<P & { Body: S.EmailConfigPut }>(
    base,
    {
      schema: {
        tags,
        security,
        operationId: 'putEmailConfig',
        summary: 'Create or update the email configuration',
        body: S.EmailConfigPut,
        response: { 200: R.EmailConfig },
        errors: { 422: ['validation_failed'] },
      },
      ...owned,
    },
    async (req) => email.put(projectOf(req).id, req.body),
  );

  app.post<P & { Body: S.EmailTestBody }>(
    `${base}/test`,
    {
      schema: {
        tags,
        security,
        operationId: 'sendTestEmail',
        summary: 'Send a test email through the configured provider',
        body: S.EmailTestBody,
        response: { 200: R.EmailSent },
        errors: { 422: ['validation_failed', 'email_not_configured'], 502: ['email_delivery_failed'] },
      },
      ...owned,
    },
    async (req) => {
      const p = projectOf(req);
      return email.sendTest(p.id, p.name, req.body.to);
    },
  );
}
