// End users: the application-facing auth routes (SPEC 4.6, the part without email) and the
// owner's administration (SPEC 4.7).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { EndUserService } from '../../services/end-users.ts';
import type { EmailFlowService } from '../../services/email-flows.ts';
import { ownedProjectRoute, projectOf, existingProject } from '../platform-auth.ts';
import { userToken } from '../data-plane-auth.ts';
import { AppError } from '../../errors.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';
import { Type } from '@sinclair/typebox';
import { END_USER_SECURITY } from '../openapi.ts';

const security = [{ platformToken: [] }];
type P = { Params: { project_id: string } };

function pageParam(raw: string | undefined, field: string, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,9}$/.test(raw)) throw new AppError('validation_failed.page_param', { field });
  return Math.min(Number(raw), max);
}

export function endUserRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, users: EndUserService, flows: EmailFlowService, maxRows: number): void {
  applicationRoutes(app, projects, users, flows);
  administrationRoutes(app, accounts, projects, users, maxRows);
}

/** What an application calls for its end users: register, login, logout, the current user. */
function applicationRoutes(app: FastifyInstance, projects: ProjectService, users: EndUserService, flows: EmailFlowService): void {
  const tags = ['end-user auth'];
  const existing = existingProject(projects);

  app.post<P & { Body: S.EndUserCredentials }>(
    '/:project_id/auth/register',
    {
      schema: {
        tags,
        operationId: 'registerEndUser',
        summary: 'Register an end user',
        body: S.EndUserCredentials,
        response: { 201: Type.Union([R.EndUserSession, R.PendingVerification]) },
        errors: { 409: ['email_taken'], 422: ['validation_failed'] },
      },
    },
    // with require_email_confirmation the flows send a verification email and start no session
    async (req, reply) => reply.status(201).send(await flows.register(await existing(req.params.project_id), req.body)),
  );

  const login = {
    tags,
    operationId: 'loginEndUser',
    summary: 'Obtain an end-user token',
    body: S.EndUserLogin,
    response: { 200: R.EndUserSession },
    errors: { 401: ['invalid_credentials'], 403: ['email_not_verified'], 429: ['rate_limited'] },
  };
  app.post<P & { Body: S.EndUserLogin }>('/:project_id/auth/login', { schema: login }, async (req) =>
    users.login(await existing(req.params.project_id), req.body, req.ip),
  );

  const logout = { tags, security: END_USER_SECURITY, operationId: 'logoutEndUser', summary: 'Invalidate the current end-user token (X-User-Token)', response: { 204: R.NoContent } };
  app.post<P>('/:project_id/auth/logout', { schema: logout }, async (req, reply) => {
    const pid = await existing(req.params.project_id);
    const { tokenHash } = await users.require(pid, userToken(req));
    await users.logout(pid, tokenHash);
    return reply.status(204).send();
  });

  const current = { tags, security: END_USER_SECURITY, operationId: 'getEndUser', summary: 'The current end user (X-User-Token)', response: { 200: R.EndUser } };
  app.get<P>('/:project_id/auth/user', { schema: current }, async (req) => {
    const pid = await existing(req.params.project_id);
    return (await users.require(pid, userToken(req))).user;
  });
}

/** The owner's administration: list and search, roles, removal. */
function administrationRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, users: EndUserService, maxRows: number): void {
  const atags = ['end-user administration'];
  const owned = ownedProjectRoute(accounts, projects);
  const userId = (raw: string) => {
    if (!/^[1-9]\d{0,15}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new AppError('not_found', { what: 'end user' });
    return Number(raw);
  };

  app.get<{ Params: { id: string }; Querystring: S.EndUserListQuery }>(
    '/projects/:id/end-users',
    {
      schema: {
        tags: atags,
        security,
        operationId: 'listEndUsers',
        summary: 'List end users, newest first',
        querystring: S.EndUserListQuery,
        response: { 200: Type.Array(R.EndUser) },
      },
      ...owned,
    },
    async (req) => {
      const pid = projectOf(req).id;
      const q = req.query;
      return users.list(pid, {
        limit: pageParam(q.limit, 'limit', 100, maxRows),
        offset: pageParam(q.offset, 'offset', 0, Number.MAX_SAFE_INTEGER),
        email: q.email,
      });
    },
  );

  app.patch<{ Params: { id: string; end_user_id: string }; Body: S.RoleBody }>(
    '/projects/:id/end-users/:end_user_id',
    {
      schema: { tags: atags, security, operationId: 'setEndUserRole', summary: 'Grant or clear (null) a role', body: S.RoleBody, response: { 200: R.EndUser }, errors: { 422: ['validation_failed'] } },
      ...owned,
    },
    async (req) => users.setRole(projectOf(req).id, userId(req.params.end_user_id), req.body.role),
  );

  app.delete<{ Params: { id: string; end_user_id: string } }>(
    '/projects/:id/end-users/:end_user_id',
    { schema: { tags: atags, security, operationId: 'deleteEndUser', summary: 'Remove an end user and end their sessions', response: { 204: R.NoContent } }, ...owned },
    async (req, reply) => {
      await users.remove(projectOf(req).id, userId(req.params.end_user_id));
      return reply.status(204).send();
    },
  );
}
