// Projects and their tables (SPEC 4.2, CONTRACT §2, §3).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { TableService } from '../../services/tables.ts';
import { platformAuth, callerOf, ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import { Type } from '@sinclair/typebox';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];
type P = { Params: { id: string } };
type PT = { Params: { id: string; table_id: string } };

export function projectRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, tables: TableService): void {
  projectItselfRoutes(app, accounts, projects, tables);
  tableRoutes(app, accounts, projects, tables);
}

function projectItselfRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, tables: TableService): void {
  const auth = platformAuth(accounts);
  const tags = ['projects'];
  // PATCH and DELETE /projects/:id change the project itself, and their service methods look it up
  // with the owner; GET resolves it as the routes below a project do
  const owned = ownedProjectRoute(accounts, projects);
  const owner = (req: FastifyRequest) => callerOf(req).account.id;

  app.get(
    '/projects',
    { schema: { tags, security, operationId: 'listProjects', summary: 'List own projects', response: { 200: Type.Array(R.Project) } }, onRequest: auth },
    async (req) => projects.list(owner(req)),
  );

  app.post<{ Body: S.ProjectCreate }>(
    '/projects',
    {
      schema: { tags, security, operationId: 'createProject', summary: 'Create a project', body: S.ProjectCreate, response: { 201: R.Project }, errors: { 422: ['validation_failed'] } },
      onRequest: auth,
    },
    async (req, reply) => reply.status(201).send(await projects.create(owner(req), req.body)),
  );

  const getProject = { tags, security, operationId: 'getProject', summary: 'A project with its tables', response: { 200: R.ProjectWithTables } };
  app.get<P>('/projects/:id', { schema: getProject, ...owned }, async (req) => {
    const project = projectOf(req);
    return { ...project, tables: await tables.list(project.id) };
  });

  app.patch<P & { Body: S.ProjectPatch }>(
    '/projects/:id',
    {
      schema: { tags, security, operationId: 'updateProject', summary: 'Update name or description', body: S.ProjectPatch, response: { 200: R.Project }, errors: { 422: ['validation_failed'] } },
      onRequest: auth,
    },
    async (req) => projects.update(owner(req), req.params.id, req.body),
  );

  const deleteProject = { tags, security, operationId: 'deleteProject', summary: 'Delete a project and all its data', response: { 204: R.NoContent } };
  app.delete<P>('/projects/:id', { schema: deleteProject, onRequest: auth }, async (req, reply) => {
    await projects.remove(owner(req), req.params.id);
    return reply.status(204).send();
  });
}

function tableRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, tables: TableService): void {
  const ttags = ['tables'];
  const owned = ownedProjectRoute(accounts, projects);

  const listTables = { tags: ttags, security, operationId: 'listTables', summary: 'List tables', response: { 200: Type.Array(R.Table) } };
  app.get<P>('/projects/:id/tables', { schema: listTables, ...owned }, async (req) =>
    tables.list(projectOf(req).id),
  );

  app.post<P & { Body: S.TableCreate }>(
    '/projects/:id/tables',
    {
      schema: {
        tags: ttags,
        security,
        operationId: 'createTable',
        summary: 'Create a table',
        body: S.TableCreate,
        response: { 201: R.Table },
        errors: { 409: ['duplicate_table', 'duplicate_column'], 422: ['validation_failed', 'invalid_name', 'invalid_default'] },
      },
      ...owned,
    },
    async (req, reply) => reply.status(201).send(await tables.create(projectOf(req).id, req.body)),
  );

  app.get<PT>('/projects/:id/tables/:table_id', { schema: { tags: ttags, security, operationId: 'getTable', summary: 'A table', response: { 200: R.Table } }, ...owned }, async (req) =>
    tables.get(projectOf(req).id, req.params.table_id),
  );

  app.patch<PT & { Body: S.TablePatch }>(
    '/projects/:id/tables/:table_id',
    {
      schema: {
        tags: ttags,
        security,
        operationId: 'alterTable',
        summary: 'Rename the table; add, drop or rename columns',
        body: S.TablePatch,
        response: { 200: R.Table },
        errors: { 409: ['duplicate_table', 'duplicate_column', 'unique_violation'], 422: ['validation_failed', 'invalid_name', 'invalid_default', 'unknown_column'] },
      },
      ...owned,
    },
    async (req) => tables.alter(projectOf(req).id, req.params.table_id, req.body),
  );

  const deleteTable = { tags: ttags, security, operationId: 'deleteTable', summary: 'Delete a table, its rows and policies', response: { 204: R.NoContent } };
  app.delete<PT>('/projects/:id/tables/:table_id', { schema: deleteTable, ...owned }, async (req, reply) => {
    await tables.remove(projectOf(req).id, req.params.table_id);
    return reply.status(204).send();
  });
}
