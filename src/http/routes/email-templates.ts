// Email templates (SPEC 4.10): list, show, override, reset, preview.
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { EmailTemplateService } from '../../services/email-templates.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';
import { Type } from '@sinclair/typebox';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PK = { Params: { id: string; key: string } };

export function emailTemplateRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, templates: EmailTemplateService): void {
  const tags = ['email'];
  const owned = ownedProjectRoute(accounts, projects);
  const base = '/projects/:id/auth/templates';

  const listTemplates = { tags, security, operationId: 'listTemplates', summary: 'List the four templates (custom or default)', response: { 200: Type.Array(R.Template) } };
  app.get<P>(base, { schema: listTemplates, ...owned }, async (req) =>
    templates.list(projectOf(req).id),
  );

  app.post<P & { Body: S.TemplatePreview }>(
    `${base}/preview`,
    {
      schema: {
        tags,
        security,
        operationId: 'previewTemplate',
        summary: 'Render a template with sample values; nothing is saved or sent',
        body: S.TemplatePreview,
        response: { 200: R.RenderedTemplate },
        errors: { 422: ['validation_failed'] },
      },
      ...owned,
    },
    async (req) => templates.preview(projectOf(req).name, req.body),
  );

  app.get<PK>(`${base}/:key`, { schema: { tags, security, operationId: 'getTemplate', summary: 'Show one template', response: { 200: R.Template } }, ...owned }, async (req) =>
    templates.get(projectOf(req).id, req.params.key),
  );

  app.put<PK & { Body: S.TemplatePut }>(
    `${base}/:key`,
    {
      schema: { tags, security, operationId: 'putTemplate', summary: 'Set a custom template', body: S.TemplatePut, response: { 200: R.Template }, errors: { 422: ['validation_failed'] } },
      ...owned,
    },
    async (req) => templates.put(projectOf(req).id, req.params.key, req.body),
  );

  const resetTemplate = { tags, security, operationId: 'resetTemplate', summary: 'Reset a template to the built-in default', response: { 204: R.NoContent } };
  app.delete<PK>(`${base}/:key`, { schema: resetTemplate, ...owned }, async (req, reply) => {
    await templates.reset(projectOf(req).id, req.params.key);
    return reply.status(204).send();
  });
}
