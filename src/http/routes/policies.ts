// RLS policies of a table (SPEC 4.4, CONTRACT §4).
import type { FastifyInstance } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { PolicyService } from '../../services/policies.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import { Type } from '@sinclair/typebox';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];
type PT = { Params: { id: string; table_id: string } };
type PTP = { Params: { id: string; table_id: string; policy_id: string } };

export function policyRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, policies: PolicyService): void {
  const tags = ['rls policies'];
  const owned = ownedProjectRoute(accounts, projects);
  const base = '/projects/:id/tables/:table_id/rls-policies';

  app.get<PT>(base, { schema: { tags, security, operationId: 'listPolicies', summary: "List a table's policies", response: { 200: Type.Array(R.Policy) } }, ...owned }, async (req) =>
    policies.list(projectOf(req).id, req.params.table_id),
  );

  app.post<PT & { Body: S.PolicyCreate }>(base, {
      schema: { tags, security, operationId: 'createPolicy', summary: 'Create a policy', body: S.PolicyCreate, response: { 201: R.Policy }, errors: { 422: ['validation_failed', 'invalid_expression'] } },
      ...owned,
    }, async (req, reply) =>
    reply.status(201).send(await policies.create(projectOf(req).id, req.params.table_id, req.body)),
  );

  app.post<PT & { Body: S.PolicyValidate }>(
    `${base}/validate`,
    {
      schema: {
        tags,
        security,
        operationId: 'validatePolicy',
        summary: 'Check an expression against the table as create would (200 { valid: true } or 422); stores nothing',
        body: S.PolicyValidate,
        response: { 200: R.PolicyValid },
        errors: { 422: ['validation_failed', 'invalid_expression'] },
      },
      ...owned,
    },
    async (req) => policies.check(projectOf(req).id, req.params.table_id, req.body.expression),
  );

  app.patch<PTP & { Body: S.PolicyPatch }>(
    `${base}/:policy_id`,
    {
      schema: {
        tags,
        security,
        operationId: 'updatePolicy',
        summary: 'Rename, change the expression, enable or disable a policy',
        body: S.PolicyPatch,
        response: { 200: R.Policy },
        errors: { 422: ['validation_failed', 'invalid_expression'] },
      },
      ...owned,
    },
    async (req) => policies.update(projectOf(req).id, req.params.table_id, req.params.policy_id, req.body),
  );

  app.delete<PTP>(`${base}/:policy_id`, { schema: { tags, security, operationId: 'deletePolicy', summary: 'Delete a policy', response: { 204: R.NoContent } }, ...owned }, async (req, reply) => {
    await policies.remove(projectOf(req).id, req.params.table_id, req.params.policy_id);
    return reply.status(204).send();
  });
}
