// Projects and their tables (SPEC 4.2, CONTRACT §2, §3).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { TableService } from '../../services/tables.ts';
import { platformAuth, callerOf, ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PT = { Params: { id: string; table_id: string } };

export function projectRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, tables: TableService): void {
  const auth = platformAuth(accounts);
  const tags = ['projects'];
  const ttags = ['tables'];
  // the routes below a project; PATCH and DELETE /projects/:id change the project itself, and their
  // service methods look it up with the owner
  const owned = ownedProjectRoute(accounts, projects);
  const owner = (req: FastifyRequest) => callerOf(req).account.id;

  app.get('/projects', { schema: { tags, security, summary: 'List own projects' }, onRequest: auth }, async (req) => projects.list(owner(req)));

  app.post<{ Body: S.ProjectCreate }>('/projects', { schema: { tags, security, summary: 'Create a project', body: S.ProjectCreate }, onRequest: auth }, async (req, reply) =>
    reply.status(201).send(await projects.create(owner(req), req.body)),
  );

  app.get<P>('/projects/:id', { schema: { tags, security, summary: 'A project with its tables' }, ...owned }, async (req) => {
    const project = projectOf(req);
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

  app.get<P>('/projects/:id/tables', { schema: { tags: ttags, security, summary: 'List tables' }, ...owned }, async (req) =>
    tables.list(projectOf(req).id),
  );

  app.post<P & { Body: S.TableCreate }>(
    '/projects/:id/tables',
    { schema: { tags: ttags, security, summary: 'Create a table', body: S.TableCreate }, ...owned },
    async (req, reply) => reply.status(201).send(await tables.create(projectOf(req).id, req.body)),
  );

  app.get<PT>('/projects/:id/tables/:table_id', { schema: { tags: ttags, security, summary: 'A table' }, ...owned }, async (req) =>
    tables.get(projectOf(req).id, req.params.table_id),
  );

  app.patch<PT & { Body: S.TablePatch }>(
    '/projects/:id/tables/:table_id',
    { schema: { tags: ttags, security, summary: 'Rename the table; add, drop or rename columns', body: S.TablePatch }, ...owned },
    async (req) => tables.alter(projectOf(req).id, req.params.table_id, req.body),
  );

  app.delete<PT>('/projects/:id/tables/:table_id', { schema: { tags: ttags, security, summary: 'Delete a table, its rows and policies' }, ...owned }, async (req, reply) => {
    await tables.remove(projectOf(req).id, req.params.table_id);
    return reply.status(204).send();
  });
}
