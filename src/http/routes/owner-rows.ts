// Owner row access and the policy simulator (CONTRACT §10, issue [G]): the rows of a table under
// the platform token, through the passthrough's grammar and RowService, as the owner, an anonymous
// caller or an end user; and the simulator, which explains a caller's access row by row.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { OwnerRowService } from '../../services/rows/owner-rows.ts';
import type { PolicySimulator } from '../../services/rows/simulator.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import { restRequestOf, sendRest } from './rest.ts';
import { restOperation, type RestMethod } from '../rest-docs.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';

const security = [{ platformToken: [] }];
type Rows = { Params: { id: string; table_id: string; row_id?: string }; Querystring: S.OwnerRowsQuery };
type Simulate = { Params: { id: string; table_id: string }; Body: S.SimulateBody };

const METHODS: RestMethod[] = ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'];

const ownerRowPath = (single: boolean) =>
  Type.Object({
    id: Type.String({ description: 'The project id' }),
    table_id: Type.String({ description: 'The table id' }),
    ...(single ? { row_id: Type.String({ description: 'The row id (an integer)' }) } : {}),
  });

const GRAMMAR =
  'The REST passthrough’s grammar and answers exactly (filters, select, order, limit/offset or Range, Prefer, on_conflict, columns, ' +
  'Accept: application/vnd.pgrst.object+json), with every table permission.';

const SIMULATION =
  'Writes nothing. Answers { operation, as, auth, stages, policies: [{ policy_id, name, operation, expression, enabled, stages, valid, error }], ' +
  'rows: [{ id, exists, row, after? (UPDATE), candidate? (INSERT), allowed, stages: { <stage>: { open, passed, results: { <policy_id>: true|false|null } } }, reason }] }. ' +
  'Stages: SELECT select; INSERT check; UPDATE select, update, check; DELETE select, delete.';

export function ownerRowRoutes(app: FastifyInstance, accounts: AccountService, projects: ProjectService, ownerRows: OwnerRowService, simulator: PolicySimulator): void {
  const tags = ['owner rows'];
  const owned = ownedProjectRoute(accounts, projects);
  const base = '/projects/:id/tables/:table_id';
  const serve = async (req: FastifyRequest<Rows>, reply: FastifyReply) => {
    const { table_id: tableId, row_id: rowId } = req.params;
    return sendRest(reply, await ownerRows.handle(projectOf(req).id, tableId, rowId ?? null, restRequestOf(req)));
  };
  const door = { tags, security, description: GRAMMAR, query: S.OwnerRowsQuery.properties, keyPermissions: false };
  for (const single of [false, true]) {
    const url = single ? `${base}/rows/:row_id` : `${base}/rows`;
    for (const method of METHODS) {
      // as on the passthrough, whose answers these routes share: PUT on the collection and POST on a
      // row only answer 405 (served, not documented)
      const documented = single ? method !== 'POST' : method !== 'PUT';
      const operationId = `${method.toLowerCase()}Owner${single ? 'Row' : 'Rows'}`;
      const { schema, config } = documented ? restOperation(method, single, { ...door, operationId, params: ownerRowPath(single) }) : { schema: { hide: true }, config: {} };
      // `as` is validated by Fastify; the rest of the query is the grammar's (documented only)
      app.route<Rows>({ method, url, schema: { ...schema, querystring: S.OwnerRowsQuery }, config, ...owned, handler: serve });
    }
  }

  app.post<Simulate>(
    `${base}/simulate`,
    {
      schema: {
        tags: ['rls policies'],
        security,
        operationId: 'simulatePolicies',
        summary: 'Simulate a caller’s access to the rows: which policies match each row, and why',
        description: SIMULATION,
        body: S.SimulateBody,
        response: { 200: R.Simulation },
        // `values` is checked as the passthrough checks a body; 404 for the table or an unknown end user
        errors: { 400: ['unknown_column', 'query_too_complex'], 422: ['validation_failed', 'invalid_value', 'read_only_column'] },
      },
      ...owned,
    },
    async (req) => simulator.simulate(projectOf(req).id, req.params.table_id, req.body),
  );
}
