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
  type PlannedStage,
  type RowPick,
  type SimOperation,
  type SimPolicy,
  type SimRow,
} from './simulator-plan.ts';
import { reasonOf, stageOutcome, type RowReport, type StageOutcome } from './simulator-report.ts';

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

export interface Simulation {
  operation: SimOperation;
  as: string;
  auth: AuthContext | null;
  stages: string[];
  policies: (Omit<SimPolicy, 'error'> & { valid: boolean; error: { code: string; message: string; details: unknown } | null })[];
  rows: RowReport[];
}

const notApplicable = (field: string, why: string) => new AppError('validation_failed.not_applicable', { field, why });

/** The operation (any case), and the fields that do not fit it refused rather than ignored. */
function checkInput(input: SimulateInput): SimOperation {
  const op = input.operation.toUpperCase() as SimOperation;
  if (!SIM_OPERATIONS.includes(op)) throw new AppError('validation_failed.one_of', { field: 'operation', allowed: SIM_OPERATIONS.join(', ') });
  if (op === 'INSERT') {
    if (input.values === undefined) throw new AppError('validation_failed.simulated_insert');
    for (const field of ['row_ids', 'filter', 'limit'] as const)
      if (input[field] !== undefined) throw notApplicable(field, 'an INSERT is simulated on its candidate row (values), not on stored rows.');
  } else if (input.values !== undefined && op !== 'UPDATE') {
    throw notApplicable('values', 'only INSERT (the candidate row) and UPDATE (the patch) take values.');
  }
  if (input.row_ids !== undefined) {
    if (input.row_ids.length > MAX_SIMULATED_ROWS) throw new AppError('validation_failed.schema', { where: 'field', field: 'row_ids', reason: 'too_many' });
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
    const stored = await this.policies.ofTable(store, table.id);
    const now = this.clock.now();
    const scope = new Scope(await this.engine.data(projectId, schema.version), table, this.engine, () => null, auth);
    const values = input.values === undefined ? null : this.checkValues(scope, op, input.values, auth, now);
    // an INSERT's candidate takes the id it would get (policies may read `id`); UPDATE binds its patch
    if (op === 'INSERT' && !values!.has('id')) values!.set('id', await this.engine.dialect.nextId(scope.db, table.name));
    const bound = values && values.size > 0 ? boundValues(this.engine.dialect, scope.types, values) : null;
    const plan = planStages(this.policies, table, stored, op, { auth, now, after: bound });
    const byId = new Map(plan.policies.map((p) => [p.policy_id, { ...p, valid: p.error === null }]));
    const explain = (id: number, r: SimRow | undefined) => this.report(op, plan.stages, id, r, { op, anonymous: auth === null, policies: byId });
    let rows: RowReport[];
    if (op === 'INSERT') {
      const candidate = await readCandidate(scope, plan.stages, bound!);
      rows = [{ ...explain(Number(values!.get('id')), candidate), exists: false, candidate: true }];
    } else {
      const pick = this.pick(input);
      const found = await readStoredRows(scope, plan.stages, pick, op === 'UPDATE' ? bound : null);
      const byRow = new Map(found.map((r) => [Number(r.row.id), r]));
      rows = 'ids' in pick ? pick.ids.map((id) => explain(id, byRow.get(id))) : found.map((r) => explain(Number(r.row.id), r));
    }
    return {
      operation: op,
      as: actingAsText(as),
      auth: auth && { id: auth.id, email: auth.email, role: auth.role, email_verified: auth.email_verified },
      stages: STAGES[op],
      policies: plan.policies.map(({ error, ...p }) => ({ ...p, valid: error === null, error: error && errorBody(invalidExpression(error)) })),
      rows,
    };
  }

  /** INSERT: the candidate as it would be stored (defaults, $auth.* markers); UPDATE: the patch. Checked as the passthrough checks a body. */
  private checkValues(scope: Scope, op: SimOperation, body: Record<string, unknown>, auth: AuthContext | null, now: Date): RowValues {
    const columns = scope.table.columns;
    if (op === 'UPDATE') return checkObject(body, inputOptions(columns, null, null));
    const given = checkObject(body, inputOptions(columns, MAX_EXPLICIT_ID, null));
    return completeForInsert([given], columns, new Set(given.keys()), false, auth, now)[0]!;
  }

  private pick(input: SimulateInput): RowPick {
    if (input.row_ids !== undefined) return { ids: [...new Set(input.row_ids)] };
    return { filter: input.filter ?? 'all', limit: input.limit ?? DEFAULT_SIMULATED_ROWS };
  }

  private report(op: SimOperation, stages: PlannedStage[], id: number, r: SimRow | undefined, ctx: Parameters<typeof reasonOf>[2]): RowReport {
    if (!r) return { id, exists: false, row: null, allowed: false, stages: {}, reason: `No row with id ${id} exists.` };
    const outcomes: RowReport['stages'] = {};
    let at = 0;
    for (const s of stages) {
      outcomes[s.stage] = stageOutcome(s.policyIds, r.truths.slice(at, at + s.policyIds.length));
      at += s.policyIds.length;
    }
    const names = stages.map((s) => s.stage);
    const allowed = names.every((s) => (outcomes[s] as StageOutcome).passed);
    // an UPDATE without values checks the row as it is
    const after = op === 'UPDATE' ? { after: r.after ?? r.row } : {};
    return { id, exists: true, row: r.row, ...after, allowed, stages: outcomes, reason: reasonOf(names, outcomes, ctx) };
  }
}

function errorBody(err: AppError): { code: string; message: string; details: unknown } {
  return { code: err.code, message: err.message, details: err.details };
}
