// Email templates (SPEC 4.10): list, show, override, reset, preview.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { EmailTemplateService } from '../../services/email-templates.ts';
import { platformAuth, ownedProject } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PK = { Params: { id: string; key: string } };

export function emailTemplateRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, templates: EmailTemplateService): void {
  const auth = platformAuth(accounts);
  const tags = ['email'];
  const project = ownedProject(projects);
  const base = '/projects/:id/auth/templates';

  app.get<P>(base, { schema: { tags, security, summary: 'List the four templates (custom or default)' }, onRequest: auth }, async (req) =>
    templates.list((await project(req)).id),
  );

  app.post<P & { Body: S.TemplatePreview }>(
    `${base}/preview`,
    { schema: { tags, security, summary: 'Render a template with sample values; nothing is saved or sent', body: S.TemplatePreview }, onRequest: auth },
    async (req) => templates.preview((await project(req)).name, req.body),
  );

  app.get<PK>(`${base}/:key`, { schema: { tags, security, summary: 'Show one template' }, onRequest: auth }, async (req) =>
    templates.get((await project(req)).id, req.params.key),
  );

  app.put<PK & { Body: S.TemplatePut }>(
    `${base}/:key`,
    { schema: { tags, security, summary: 'Set a custom template', body: S.TemplatePut }, onRequest: auth },
    async (req) => templates.put((await project(req)).id, req.params.key, req.body),
  );

  app.delete<PK>(`${base}/:key`, { schema: { tags, security, summary: 'Reset a template to the built-in default' }, onRequest: auth }, async (req, reply) => {
    await templates.reset((await project(req)).id, req.params.key);
    return reply.status(204).send();
  });
}
