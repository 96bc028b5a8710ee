// Email templates (SPEC 4.10): list, show, override, reset, preview.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { EmailTemplateService } from '../../services/email-templates.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PK = { Params: { id: string; key: string } };

export function emailTemplateRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, templates: EmailTemplateService): void {
  const tags = ['email'];
  const owned = ownedProjectRoute(accounts, projects);
  const base = '/projects/:id/auth/templates';

  app.get<P>(base, { schema: { tags, security, summary: 'List the four templates (custom or default)' }, ...owned }, async (req) =>
    templates.list(projectOf(req).id),
  );

  app.post<P & { Body: S.TemplatePreview }>(
    `${base}/preview`,
    { schema: { tags, security, summary: 'Render a template with sample values; nothing is saved or sent', body: S.TemplatePreview }, ...owned },
    async (req) => templates.preview(projectOf(req).name, req.body),
  );

  app.get<PK>(`${base}/:key`, { schema: { tags, security, summary: 'Show one template' }, ...owned }, async (req) =>
    templates.get(projectOf(req).id, req.params.key),
  );

  app.put<PK & { Body: S.TemplatePut }>(
    `${base}/:key`,
    { schema: { tags, security, summary: 'Set a custom template', body: S.TemplatePut }, ...owned },
    async (req) => templates.put(projectOf(req).id, req.params.key, req.body),
  );

  app.delete<PK>(`${base}/:key`, { schema: { tags, security, summary: 'Reset a template to the built-in default' }, ...owned }, async (req, reply) => {
    await templates.reset(projectOf(req).id, req.params.key);
    return reply.status(204).send();
  });
}
