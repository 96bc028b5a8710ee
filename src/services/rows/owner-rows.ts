// Owner row access (CONTRACT §10): the project's owner reads and writes a table, addressed by its
// table id, through the passthrough's own RowService, as itself (no policy) or as a caller of the
// passthrough (anonymous or an end user, under every policy). One implementation, so the grammar,
// the errors and every guarantee of a write (column whitelist, types, ids, transactions, the
// project's fair share, the statement timeout) are the passthrough's.
import type { Engine } from '../../storage/engine.ts';
import { AppError } from '../../errors.ts';
import type { EndUserService } from '../end-users.ts';
import type { ProjectSchema, ProjectSchemaCache } from '../project-schema.ts';
import type { TableInfo } from '../tables.ts';
import type { RestRequestParts, RestResponse, RowService } from './rows.ts';
import { authOfActingAs, rowCallerOf, takeActingAs } from './acting-as.ts';

/** The table with this id at the project's current schema version (the data plane's view of it), or 404. */
export async function tableById(schemas: ProjectSchemaCache, projectId: string, tableId: string): Promise<{ schema: ProjectSchema; table: TableInfo }> {
  const schema = await schemas.get(projectId);
  for (const table of schema.tables.values()) if (table.id === tableId) return { schema, table };
  throw new AppError('not_found', { what: 'table' });
}

export class OwnerRowService {
  constructor(
    private readonly engine: Engine,
    private readonly schemas: ProjectSchemaCache,
    private readonly endUsers: EndUserService,
    private readonly rows: RowService,
  ) {}

  /** One request of the owner's row routes (`rowId`: the per-row routes); `request.query` carries `as` (takeActingAs). */
  async handle(projectId: string, tableId: string, rowId: string | null, request: RestRequestParts): Promise<RestResponse> {
    const query = new URLSearchParams(request.query);
    const as = takeActingAs(query);
    const { schema, table } = await tableById(this.schemas, projectId, tableId);
    const auth = await authOfActingAs(await this.engine.project(projectId), this.endUsers, as);
    return this.rows.handle({ ...request, query, projectId, table: table.name, rowId, version: schema.version, ...rowCallerOf(as, auth) });
  }
}
