// Projects and their tables (SPEC 4.2, CONTRACT §2, §3).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { TableService } from '../../services/tables.ts';
import { platformAuth, callerOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PT = { Params: { id: string; table_id: string } };

export function projectRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, tables: TableService): void {
  const auth = platformAuth(accounts);
  const tags = ['projects'];
  const ttags = ['tables'];
  const owner = (req: { caller: unknown }) => callerOf(req as never).account.id;

  app.get('/projects', { schema: { tags, security, summary: 'List own projects' }, onRequest: auth }, async (req) => projects.list(owner(req)));

  app.post<{ Body: S.ProjectCreate }>('/projects', { schema: { tags, security, summary: 'Create a project', body: S.ProjectCreate }, onRequest: auth }, async (req, reply) =>
    reply.status(201).send(await projects.create(owner(req), req.body)),
  );

  app.get<P>('/projects/:id', { schema: { tags, security, summary: 'A project with its tables' }, onRequest: auth }, async (req) => {
    const project = await projects.get(owner(req), req.params.id);
    return { ...project, tables: await tables.list(project.id) };
  });

  app.patch<P & { Body: S.ProjectPatch }>(
    '/projects/:id',
    { schema: { tags, security, summary: 'Update name or description', body: S.ProjectPatch }, onRequest: auth },
    async (req) => projects.update(owner(req), req.params.id, req.body),
  );

  app.delete<P>('/projects/:id', { schema: { tags, security, summary: 'Delete a project and all its data' }, onRequest: auth }, async (req, reply) => {
    await projects.remove(owner(req), req.params.id);
    return reply.status(204).send();
  });

  app.get<P>('/projects/:id/tables', { schema: { tags: ttags, security, summary: 'List tables' }, onRequest: auth }, async (req) => {
    const project = await projects.get(owner(req), req.params.id);
    return tables.list(project.id);
  });

  app.post<P & { Body: S.TableCreate }>(
    '/projects/:id/tables',
    { schema: { tags: ttags, security, summary: 'Create a table', body: S.TableCreate }, onRequest: auth },
    async (req, reply) => {
      const project = await projects.get(owner(req), req.params.id);
      return reply.status(201).send(await tables.create(project.id, req.body));
    },
  );

  app.get<PT>('/projects/:id/tables/:table_id', { schema: { tags: ttags, security, summary: 'A table' }, onRequest: auth }, async (req) => {
    const project = await projects.get(owner(req), req.params.id);
    return tables.get(project.id, req.params.table_id);
  });

  app.patch<PT & { Body: S.TablePatch }>(
    '/projects/:id/tables/:table_id',
    { schema: { tags: ttags, security, summary: 'Rename the table; add, drop or rename columns', body: S.TablePatch }, onRequest: auth },
    async (req) => {
      const project = await projects.get(owner(req), req.params.id);
      return tables.alter(project.id, req.params.table_id, req.body);
    },
  );

  app.delete<PT>('/projects/:id/tables/:table_id', { schema: { tags: ttags, security, summary: 'Delete a table, its rows and policies' }, onRequest: auth }, async (req, reply) => {
    const project = await projects.get(owner(req), req.params.id);
    await tables.remove(project.id, req.params.table_id);
    return reply.status(204).send();
  });
}
