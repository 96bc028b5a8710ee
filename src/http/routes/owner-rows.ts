// Owner row access and the policy simulator (CONTRACT §10, issue [G]): the rows of a table under
// the platform token, through the passthrough's grammar and RowService, as the owner, an anonymous
// caller or an end user; and the simulator, which explains a caller's access row by row.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AccountService } from '../../services/accounts.ts';
import type { ProjectService } from '../../services/projects.ts';
import type { OwnerRowService } from '../../services/rows/owner-rows.ts';
import type { PolicySimulator } from '../../services/rows/simulator.ts';
import { ownedProjectRoute, projectOf } from '../platform-auth.ts';
import { restRequestOf, sendRest } from './rest.ts';
import * as S from '../schemas.ts';

const security = [{ platformToken: [] }];
type Rows = { Params: { id: string; table_id: string; row_id?: string }; Querystring: S.OwnerRowsQuery };
type Simulate = { Params: { id: string; table_id: string }; Body: S.SimulateBody };

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
  for (const url of [`${base}/rows`, `${base}/rows/:row_id`]) {
    const one = url.endsWith(':row_id');
    app.route<Rows>({
      // as on the passthrough, whose answers (405 for POST on a row, PUT on the collection) these routes share
      method: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
      url,
      schema: {
        tags,
        security,
        summary: one ? 'One row: get, update, replace, delete (as the owner, anonymous or an end user)' : 'Rows: list, insert/upsert, bulk update, bulk delete (as the owner, anonymous or an end user)',
        description: GRAMMAR,
        querystring: S.OwnerRowsQuery,
      },
      ...owned,
      handler: serve,
    });
  }

  app.post<Simulate>(
    `${base}/simulate`,
    { schema: { tags: ['rls policies'], security, summary: 'Simulate a caller’s access to the rows: which policies match each row, and why', description: SIMULATION, body: S.SimulateBody }, ...owned },
    async (req) => simulator.simulate(projectOf(req).id, req.params.table_id, req.body),
  );
}
