// The policy simulator's statements: which policies take part in which stage of an operation, each
// compiled by the engine's policy compiler (the one the passthrough uses), and one read-only SELECT
// that computes every (stage, policy) truth per row. A write's post-write check is evaluated over
// the values it would store, bound as parameters in a derived table ("#v"): no INSERT or UPDATE is
// ever issued, so no row, id or sequence changes.
import type { ColumnType, Dialect, Sql } from '../../storage/engine.ts';
import { quoteIdent } from '../../storage/engine.ts';
import { PolicyError, type AuthContext } from '../../policy-language/index.ts';
import { NO_MATCH, type Policy, type PolicyService } from '../policies.ts';
import type { TableInfo } from '../tables.ts';
import { toParam } from '../column-values.ts';
import type { RowValues } from './row-input.ts';
import type { Scope } from './scope.ts';
import { stageOperation } from './simulator-report.ts';

export const SIM_OPERATIONS = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;
export type SimOperation = (typeof SIM_OPERATIONS)[number];
export type Stage = 'select' | 'update' | 'delete' | 'check';

/**
 * The stages of each operation, as the passthrough runs them: SELECT policies gate reads and the
 * rows a write touches, UPDATE and DELETE policies restrict the rows touched, and INSERT and UPDATE
 * policies check the row as written (`check`, over the values after the write).
 */
export const STAGES: Record<SimOperation, Stage[]> = {
  SELECT: ['select'],
  INSERT: ['check'],
  UPDATE: ['select', 'update', 'check'],
  DELETE: ['select', 'delete'],
};

/** A policy of the table as the simulator reports it. */
export interface SimPolicy extends Policy {
  /** the stages of this operation it takes part in ([] when disabled or for another operation) */
  stages: Stage[];
  /** whether it validates against the table as it is now; if not it matches no rows (`error` says why) */
  valid: boolean;
  error: PolicyError | null;
}

/** One stage: the enabled policies taking part, and each one's SQL over the row the stage reads. */
export interface PlannedStage {
  stage: Stage;
  policyIds: string[];
  sql: Sql[];
}

/** Values bound as a one-row derived table "#v", and how a policy's column reads them. */
export interface BoundValues {
  from: Sql;
  ref: ReadonlyMap<string, string>;
}

/**
 * A non-empty row's values as the columns of `(SELECT CAST(? AS type) AS "#v0", …) AS "#v"`, typed
 * as the table stores them (as the passthrough's merging upsert binds its values).
 */
export function boundValues(dialect: Dialect, types: ReadonlyMap<string, ColumnType>, row: RowValues): BoundValues {
  const names = [...row.keys()];
  const ref = new Map(names.map((n, i) => [n, `"#v"."#v${i}"`]));
  const casts = names.map((n, i) => `CAST(? AS ${dialect.columnType(types.get(n)!)}) AS "#v${i}"`);
  const params = names.map((n) => toParam(types.get(n)!, row.get(n)));
  return { from: { sql: `(SELECT ${casts.join(', ')}) AS "#v"`, params }, ref };
}

/**
 * Which policies take part in each stage of `op`, compiled for `auth`. The check stage reads the
 * row after the write: its columns come from `after` where it holds them.
 */
export function planStages(
  service: PolicyService,
  table: TableInfo,
  policies: Policy[],
  op: SimOperation,
  ctx: { auth: AuthContext | null; now: Date; after: BoundValues | null },
): { policies: SimPolicy[]; stages: PlannedStage[] } {
  const takesPart = (p: Policy, stage: Stage) => p.enabled && (p.operation === 'ALL' || p.operation === stageOperation(op, stage));
  const reported = policies.map((p): SimPolicy => {
    const applied = service.apply(table, p, { auth: ctx.auth, now: ctx.now });
    const error = applied instanceof PolicyError ? applied : null;
    return { ...p, stages: STAGES[op].filter((s) => takesPart(p, s)), valid: error === null, error };
  });
  const after = ctx.after;
  const afterRef = after ? (name: string) => after.ref.get(name) ?? quoteIdent(name) : undefined;
  const stages = STAGES[op].map((stage): PlannedStage => {
    const members = policies.filter((p) => takesPart(p, stage));
    const columnRef = stage === 'check' ? afterRef : undefined;
    const sql = members.map((p) => {
      const applied = service.apply(table, p, { auth: ctx.auth, now: ctx.now, columnRef });
      return applied instanceof PolicyError ? NO_MATCH : applied;
    });
    return { stage, policyIds: members.map((p) => p.policy_id), sql };
  });
  return { policies: reported, stages };
}

/** The SELECT-list entries of every (stage, policy) truth: 1, 0, or NULL (neither), as "#r0", "#r1"… in stage order. */
function truthColumns(stages: PlannedStage[]): Sql {
  const parts: string[] = [];
  const params: Sql['params'] = [];
  for (const s of stages.flatMap((st) => st.sql)) {
    parts.push(`CASE WHEN (${s.sql}) THEN 1 WHEN NOT (${s.sql}) THEN 0 END AS "#r${parts.length}"`);
    params.push(...s.params, ...s.params);
  }
  return { sql: parts.map((p) => `, ${p}`).join(''), params };
}

/** Every stage passes: a stage with policies needs one of them TRUE; null when every stage is open. */
function allowedSql(stages: PlannedStage[]): Sql | null {
  const closed = stages.filter((s) => s.sql.length > 0);
  if (closed.length === 0) return null;
  const one = (s: PlannedStage) => `(${s.sql.map((p) => `(${p.sql})`).join(' OR ')})`;
  return { sql: closed.map(one).join(' AND '), params: closed.flatMap((s) => s.sql.flatMap((p) => p.params)) };
}

/** Which stored rows to explain: these ids, or the first `limit` by id of a kind (allowed, not allowed, any). */
export type RowPick = { ids: number[] } | { filter: 'all' | 'visible' | 'hidden'; limit: number };

function pickSql(pick: RowPick, stages: PlannedStage[]): { where: Sql | null; limit: number } {
  if ('ids' in pick) {
    if (pick.ids.length === 0) return { where: { sql: '1=0', params: [] }, limit: 0 };
    // padded to a power of two with its last id (the same set): engines keep prepared statements
    // by their text, so a table sees a few shapes rather than one per count
    const ids = Array.from({ length: 2 ** Math.ceil(Math.log2(pick.ids.length)) }, (_, i) => pick.ids[Math.min(i, pick.ids.length - 1)]!);
    return { where: { sql: `"id" IN (${ids.map(() => '?').join(', ')})`, params: ids }, limit: pick.ids.length };
  }
  const allowed = allowedSql(stages);
  if (pick.filter === 'all') return { where: null, limit: pick.limit };
  if (pick.filter === 'visible') return { where: allowed, limit: pick.limit };
  const where = allowed ? { sql: `CASE WHEN ${allowed.sql} THEN 0 ELSE 1 END = 1`, params: allowed.params } : { sql: '1=0', params: [] };
  return { where, limit: pick.limit };
}

/** A row read by the simulator: the stored (or candidate) row, the row after an UPDATE's patch, and each (stage, policy) truth. */
export interface SimRow {
  row: Record<string, unknown>;
  after: Record<string, unknown> | null;
  truths: (boolean | null)[];
}

const truth = (v: unknown): boolean | null => (v === null || v === undefined ? null : Number(v) === 1);

/** Decodes a row read with `scope.projection(null)`, the patched columns "#a0"… and the truths. */
function readRow(scope: Scope, raw: Record<string, unknown>, stages: PlannedStage[], patched: string[]): SimRow {
  const row = scope.decode(raw, scope.projection(null).items);
  let after: Record<string, unknown> | null = null;
  if (patched.length > 0) {
    const values = Object.fromEntries(patched.map((_, i) => [`#${i}`, raw[`#a${i}`]]));
    after = { ...row, ...scope.decode(values, patched.map((c) => ({ column: c, alias: c }))) };
  }
  const n = stages.reduce((sum, s) => sum + s.sql.length, 0);
  return { row, after, truths: Array.from({ length: n }, (_, i) => truth(raw[`#r${i}`])) };
}

/** Stored rows with every stage's truths; `patch`: an UPDATE's values, for the check stage and `after`. */
export async function readStoredRows(scope: Scope, stages: PlannedStage[], pick: RowPick, patch: BoundValues | null): Promise<SimRow[]> {
  const p = scope.projection(null);
  const truths = truthColumns(stages);
  const patched = patch ? [...patch.ref.keys()] : [];
  const afterCols = patched.map((c, i) => `, ${patch!.ref.get(c)} AS "#a${i}"`).join('');
  const from = patch ? { sql: ` CROSS JOIN ${patch.from.sql}`, params: patch.from.params } : { sql: '', params: [] };
  const { where, limit } = pickSql(pick, stages);
  const raw = await scope.db.all<Record<string, unknown>>(
    `SELECT ${p.sql}${afterCols}${truths.sql} FROM ${scope.t}${from.sql}${where ? ` WHERE ${where.sql}` : ''} ORDER BY "id" LIMIT ?`,
    [...truths.params, ...from.params, ...(where?.params ?? []), limit],
  );
  return raw.map((r) => readRow(scope, r, stages, patched));
}

/** An INSERT's candidate (every column and the id it would get, bound in `candidate`) with its check stage's truths. */
export async function readCandidate(scope: Scope, stages: PlannedStage[], candidate: BoundValues): Promise<SimRow> {
  const truths = truthColumns(stages);
  const columns = scope.projection(null).items.map((item, n) => `${candidate.ref.get(item.column)!} AS "#${n}"`);
  const raw = await scope.db.get<Record<string, unknown>>(`SELECT ${columns.join(', ')}${truths.sql} FROM ${candidate.from.sql}`, [
    ...truths.params,
    ...candidate.from.params,
  ]);
  return readRow(scope, raw!, stages, []);
}
