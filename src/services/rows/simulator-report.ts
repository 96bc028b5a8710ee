// What the policy simulator answers about one row: each stage's outcome (which policies matched,
// which were false and which NULL) and one sentence saying why the row is allowed, hidden or refused.
import type { PlannedStage, SimOperation, SimPolicy, SimRow, Stage } from './simulator-plan.ts';

/** A stage's outcome for one row. `open`: no enabled policy takes part (every row passes). */
export interface StageOutcome {
  open: boolean;
  passed: boolean;
  /** each policy taking part, by policy id: TRUE, FALSE, or NULL (not a match either) */
  results: Record<string, boolean | null>;
}

export interface RowReport {
  /** for INSERT the id the row would get: its explicit one, or the generator's next (Dialect.nextId) */
  id: number;
  exists: boolean;
  /** the stored row; for INSERT the candidate as it would be stored */
  row: Record<string, unknown> | null;
  /** UPDATE: the row with the patch applied, as it would be stored */
  after?: Record<string, unknown>;
  /** INSERT: the row is the candidate, not a stored row */
  candidate?: true;
  allowed: boolean;
  stages: Partial<Record<Stage, StageOutcome>>;
  reason: string;
}

/** How a stage's failure reads, by operation (the passthrough's answer included). */
const REFUSAL: Record<Stage, (op: SimOperation) => string> = {
  select: (op) =>
    op === 'SELECT'
      ? 'Hidden: no SELECT policy matched'
      : `Not touched: the caller cannot see the row, no SELECT policy matched`,
  update: () => 'Not touched: no UPDATE policy matched the row',
  delete: () => 'Not touched: no DELETE policy matched the row',
  check: (op) =>
    op === 'INSERT' ? 'Refused with 403 rls_violation: no INSERT policy matched the new row' : 'Refused with 403 rls_violation: no UPDATE policy matched the row after the update',
};

const AFTERWORD: Partial<Record<SimOperation, string>> = {
  UPDATE: ' (the passthrough answers 404 for it by id, and a filtered PATCH skips it)',
  DELETE: ' (the passthrough answers 404 for it by id, and a filtered DELETE skips it)',
};

/** The policy operation whose policies (with ALL ones) a stage applies. */
export const stageOperation = (op: SimOperation, stage: Stage): string => (stage === 'check' ? op : stage.toUpperCase());

export function stageOutcome(policyIds: string[], truths: (boolean | null)[]): StageOutcome {
  const results: Record<string, boolean | null> = {};
  policyIds.forEach((id, i) => (results[id] = truths[i]!));
  return { open: policyIds.length === 0, passed: policyIds.length === 0 || truths.includes(true), results };
}

export interface ReasonContext {
  op: SimOperation;
  anonymous: boolean;
  policies: ReadonlyMap<string, SimPolicy>;
}

/** Why each policy of a failed stage did not match, e.g. "'own rows' was NULL (anonymous caller: $auth.* is NULL)". */
function misses(outcome: StageOutcome, ctx: ReasonContext): string {
  const parts = Object.entries(outcome.results).map(([id, r]) => {
    const p = ctx.policies.get(id)!;
    if (!p.valid) return `'${p.name}' no longer validates, so it matches no row`;
    return r === null ? `'${p.name}' was NULL${ctx.anonymous ? ' (anonymous caller: $auth.* is NULL)' : ''}` : `'${p.name}' was false`;
  });
  return parts.join(', ');
}

/** Why a stage let the row through: open, or the policies that matched. */
function passes(op: SimOperation, stage: Stage, outcome: StageOutcome, ctx: ReasonContext): string {
  const operation = stageOperation(op, stage);
  if (outcome.open) return `no ${operation} policy is enabled`;
  const names = Object.entries(outcome.results)
    .filter(([, r]) => r === true)
    .map(([id]) => `'${ctx.policies.get(id)!.name}'`);
  const what = stage === 'check' ? (op === 'INSERT' ? ' the new row' : ' the row after the update') : '';
  return `${operation} ${names.length > 1 ? 'policies' : 'policy'} ${names.join(', ')} matched${what}`;
}

/** One human sentence: the first stage that hid or refused the row, or what let it through. */
export function reasonOf(stages: Stage[], outcomes: Partial<Record<Stage, StageOutcome>>, ctx: ReasonContext): string {
  const failed = stages.find((s) => !outcomes[s]!.passed);
  if (failed !== undefined) {
    const afterword = failed === 'check' ? '; nothing would be written.' : `${AFTERWORD[ctx.op] ?? ''}.`;
    return `${REFUSAL[failed](ctx.op)}: ${misses(outcomes[failed]!, ctx)}${afterword}`;
  }
  const verb = ctx.op === 'SELECT' ? 'Visible' : 'Allowed';
  return `${verb}: ${stages.map((s) => passes(ctx.op, s, outcomes[s]!, ctx)).join('; ')}.`;
}

/** One row's answer from its truths (in stage order, as simulator-plan.ts computed them); `r` undefined: no such row. */
export function explainRow(stages: PlannedStage[], id: number, r: SimRow | undefined, ctx: ReasonContext): RowReport {
  if (!r) return { id, exists: false, row: null, allowed: false, stages: {}, reason: `No row with id ${id} exists.` };
  const outcomes: RowReport['stages'] = {};
  let at = 0;
  for (const s of stages) {
    outcomes[s.stage] = stageOutcome(s.policyIds, r.truths.slice(at, at + s.policyIds.length));
    at += s.policyIds.length;
  }
  const names = stages.map((s) => s.stage);
  // an UPDATE without values checks the row as it is
  const after = ctx.op === 'UPDATE' ? { after: r.after ?? r.row } : {};
  const allowed = names.every((s) => outcomes[s]!.passed);
  return { id, exists: true, row: r.row, ...after, allowed, stages: outcomes, reason: reasonOf(names, outcomes, ctx) };
}
