// The policy simulator (issue [G]): for a table, a caller (anonymous or an end user, read now) and
// an operation, which rows the passthrough would let that caller read, update, delete or insert,
// and which policy decided it, stage by stage. It writes nothing, ever: every statement is one
// read-only SELECT (simulator-plan.ts) under the project's fair share and statement timeout.
import type { Engine } from '../../storage/engine.ts';
import type { Clock } from '../../lib/clock.ts';
import { AppError } from '../../errors.ts';
import type { AuthContext, EndUserService } from '../end-users.ts';
import { invalidExpression, type PolicyService } from '../policies.ts';
import type { ProjectSchemaCache } from '../project-schema.ts';
import { actingAsText, authOfActingAs, parseActingAs } from './acting-as.ts';
import { tableById } from './owner-rows.ts';
import { checkObject, completeForInsert, inputOptions, MAX_EXPLICIT_ID, type RowValues } from './row-input.ts';
import { Scope } from './scope.ts';
import {
  boundValues,
  planStages,
  readCandidate,
  readStoredRows,
  SIM_OPERATIONS,
  STAGES,
  type BoundValues,
  type RowPick,
  type SimOperation,
  type SimPolicy,
} from './simulator-plan.ts';
import { explainRow, type RowReport } from './simulator-report.ts';

/** At most this many rows are explained per request (row_ids, limit). */
export const MAX_SIMULATED_ROWS = 100;
export const DEFAULT_SIMULATED_ROWS = 20;

export interface SimulateInput {
  as: string;
  operation: string;
  row_ids?: number[];
  filter?: 'all' | 'visible' | 'hidden';
  limit?: number;
  values?: Record<string, unknown>;
}

/** A policy as the answer lists it: its validation error in the flat shape. */
export type SimulatedPolicy = Omit<SimPolicy, 'error'> & { error: { code: string; message: string; details: unknown } | null };

export interface Simulation {
  operation: SimOperation;
  as: string;
  auth: AuthContext | null;
  stages: string[];
  policies: SimulatedPolicy[];
  rows: RowReport[];
}

const notApplicable = (field: string, why: string) => new AppError('validation_failed.not_applicable', { field, why });

/** The operation (any case), and the fields that do not fit it refused rather than ignored. */
function checkInput(input: SimulateInput): SimOperation {
  const op = input.operation.toUpperCase() as SimOperation;
  if (!SIM_OPERATIONS.includes(op)) throw new AppError('validation_failed.one_of', { field: 'operation', allowed: SIM_OPERATIONS });
  if (op === 'INSERT') {
    if (input.values === undefined) throw new AppError('validation_failed.simulated_insert');
    for (const field of ['row_ids', 'filter', 'limit'] as const)
      if (input[field] !== undefined) throw notApplicable(field, 'an INSERT is simulated on its candidate row (values), not on stored rows.');
  } else if (input.values !== undefined && op !== 'UPDATE') {
    throw notApplicable('values', 'only INSERT (the candidate row) and UPDATE (the patch) take values.');
  }
  // (the request schema says the same; the bound on the work is the service's own)
  if ((input.row_ids?.length ?? 0) > MAX_SIMULATED_ROWS) throw new AppError('validation_failed.schema', { where: 'field', field: 'row_ids', reason: 'too_many' });
  if ((input.limit ?? 1) > MAX_SIMULATED_ROWS || (input.limit ?? 1) < 1) throw new AppError('validation_failed.schema', { where: 'field', field: 'limit', reason: 'out_of_range' });
  if (input.row_ids !== undefined) {
    for (const field of ['filter', 'limit'] as const) if (input[field] !== undefined) throw notApplicable(field, 'row_ids names the rows to explain.');
  }
  return op;
}

export class PolicySimulator {
  constructor(
    private readonly engine: Engine,
    private readonly schemas: ProjectSchemaCache,
    private readonly policies: PolicyService,
    private readonly endUsers: EndUserService,
    private readonly clock: Clock,
  ) {}

  async simulate(projectId: string, tableId: string, input: SimulateInput): Promise<Simulation> {
    const op = checkInput(input);
    const as = parseActingAs(input.as, false);
    const { schema, table } = await tableById(this.schemas, projectId, tableId);
    const store = await this.engine.project(projectId);
    const auth = await authOfActingAs(store, this.endUsers, as);
    const policies = await this.policies.ofTable(store, table.id);
    const scope = new Scope(await this.engine.data(projectId, schema.version), table, this.engine, () => null, auth, projectId);
    const now = this.clock.now();
    const values = input.values === undefined ? null : await this.bind(scope, op, input.values, now);
    const plan = planStages(this.policies, table, policies, op, { auth, now, after: values });
    const ctx = { op, anonymous: auth === null, policies: new Map(plan.policies.map((p) => [p.policy_id, p])) };
    let rows: RowReport[];
    if (op === 'INSERT') {
      const candidate = await readCandidate(scope, plan.stages, values!);
      rows = [{ ...explainRow(plan.stages, Number(candidate.row.id), candidate, ctx), exists: false, candidate: true }];
    } else {
      const pick = this.pick(input);
      const found = await readStoredRows(scope, plan.stages, pick, op === 'UPDATE' ? values : null);
      const byId = new Map(found.map((r) => [Number(r.row.id), r]));
      rows = ('ids' in pick ? pick.ids : [...byId.keys()]).map((id) => explainRow(plan.stages, id, byId.get(id), ctx));
    }
    return {
      operation: op,
      as: actingAsText(as),
      auth: auth && { id: auth.id, email: auth.email, role: auth.role, email_verified: auth.email_verified },
      stages: STAGES[op],
      policies: plan.policies.map((p) => ({ ...p, error: p.error && errorBody(invalidExpression(p.error)) })),
      rows,
    };
  }

  /**
   * `values` checked as the passthrough checks a body and bound for the check stage: INSERT's
   * candidate as it would be stored (defaults, $auth.* markers, and the id it would get, which
   * policies may read), or UPDATE's patch (null when empty: the check reads the row as it is).
   */
  private async bind(scope: Scope, op: SimOperation, body: Record<string, unknown>, now: Date): Promise<BoundValues | null> {
    const columns = scope.table.columns;
    let row: RowValues;
    if (op === 'UPDATE') {
      row = checkObject(body, inputOptions(columns, null, null));
    } else {
      const given = checkObject(body, inputOptions(columns, MAX_EXPLICIT_ID, null));
      row = completeForInsert([given], columns, new Set(given.keys()), false, scope.auth, now)[0]!;
      if (!row.has('id')) row.set('id', await this.engine.dialect.nextId(scope.db, scope.table.name));
    }
    return row.size > 0 ? boundValues(this.engine.dialect, scope.types, row) : null;
  }

  private pick(input: SimulateInput): RowPick {
    if (input.row_ids !== undefined) return { ids: [...new Set(input.row_ids)] };
    return { filter: input.filter ?? 'all', limit: input.limit ?? DEFAULT_SIMULATED_ROWS };
  }
}

function errorBody(err: AppError): { code: string; message: string; details: unknown } {
  return { code: err.code, message: err.message, details: err.details };
}
