// RLS policies (SPEC 4.4, CONTRACT §4): stored per table in the project store; validated when
// created and again whenever applied. A stored policy that no longer validates (a renamed or
// dropped column) matches no rows and is logged once; it never becomes a 500.
import { creationTime } from './creation-time.ts';
import type { Db, Engine, Sql } from '../storage/engine.ts';
import type { Clock } from '../lib/clock.ts';
import { newId, isId } from '../lib/ids.ts';
import { AppError } from '../errors.ts';
import { charLength } from '../lib/validate.ts';
import { parsePolicy, PolicyError, validatePolicy, type ColumnInfo, type CompileContext, type TypedExpr } from '../policy-language/index.ts';
import type { TableInfo, TableService } from './tables.ts';
import type { AuthContext } from './end-users.ts';
import type { Operation } from './rows/rows.ts';
import { bumpSchemaVersion } from './project-schema.ts';
import { MAX_POLICY_COST, policyCost } from '../policy-language/cost.ts';

export const OPERATIONS = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'ALL'] as const;
export type PolicyOperation = (typeof OPERATIONS)[number];

export interface Policy {
  policy_id: string;
  name: string;
  operation: PolicyOperation;
  expression: string;
  enabled: boolean;
  created_at: string;
}

interface PolicyRow {
  id: string;
  name: string;
  operation: PolicyOperation;
  expression: string;
  enabled: number | boolean;
  created_at: string;
}

/** An enabled policy as the data plane applies it. */
export interface StoredPolicy {
  id: string;
  operation: string;
  expression: string;
}

export interface PolicyLog {
  warn(obj: Record<string, unknown>, msg: string): void;
}

const tooCostly = (cost: number) => new AppError('validation_failed.policy_cost', { cost, max: MAX_POLICY_COST });

const toPolicy = (r: PolicyRow): Policy => ({
  policy_id: r.id,
  name: r.name,
  operation: r.operation,
  expression: r.expression,
  enabled: r.enabled === true || r.enabled === 1,
  created_at: r.created_at,
});

export function columnsOf(table: TableInfo): ColumnInfo[] {
  return [{ name: 'id', type: 'integer' }, ...table.columns.map((c) => ({ name: c.name, type: c.type }))];
}

const CACHE_LIMIT = 2000;
/**
 * Compiled row filters kept, all projects together, and the largest kept (characters of SQL and
 * values): a bound on what one project's callers and tables can hold (500 tables, 1,000 remembered
 * callers each), whose eviction of others' filters costs them a compile only.
 */
export const COMPILED_FILTERS = 4096;
const COMPILED_FILTER_CHARS = 2048;
const sizeOf = (filter: Sql): number => filter.params.reduce<number>((n, p) => n + (typeof p === 'string' ? p.length : 8), filter.sql.length);

/** What a stored policy that no longer validates compiles to: it matches no rows. */
export const NO_MATCH: Sql = { sql: '1=0', params: [] };

export function invalidExpression(err: PolicyError): AppError {
  return new AppError('invalid_expression', { message: err.message, offending: err.offending, position: err.position });
}

export class PolicyService {
  // Validation is a pure function of (expression, column set): memoised, so applying a policy
  // re-validates it against the table as it is now without re-parsing on every request.
  private validated = new Map<string, TypedExpr | PolicyError>();
  /**
   * The same, by the objects of a cached schema version (project-schema.ts): a request finds its
   * policy's validated tree without building the text key above. A new version brings new objects.
   */
  private validatedFor = new WeakMap<object, { table: TableInfo; result: TypedExpr | PolicyError }>();
  private logged = new Set<string>();
  /**
   * Each operation's combined filter for one caller, compiled once (least recently used first, at
   * most COMPILED_FILTERS): keyed by the table's enabled policies (a number for the array of a
   * cached schema version: a new version brings a new array) and the caller's auth values. A filter
   * whose policies read the clock ($now, CURDATE) is compiled for every request.
   */
  private readonly filters = new Map<string, Sql | null>();
  private readonly policySets = new WeakMap<readonly StoredPolicy[], { table: TableInfo; id: number }>();
  private policySetCount = 0;

  constructor(
    private readonly engine: Engine,
    private readonly tables: TableService,
    private readonly clock: Clock,
    private readonly log: PolicyLog,
  ) {}

  private validatedAgainst(table: TableInfo, policy: { expression: string }): TypedExpr | PolicyError {
    const hit = this.validatedFor.get(policy);
    if (hit?.table === table) return hit.result;
    const result = this.validate(policy.expression, columnsOf(table));
    this.validatedFor.set(policy, { table, result });
    return result;
  }

  private validate(expression: string, columns: ColumnInfo[]): TypedExpr | PolicyError {
    const key = `${columns.map((c) => `${c.name}:${c.type}`).join(',')}\u0000${expression}`;
    let v = this.validated.get(key);
    if (v === undefined) {
      try {
        v = validatePolicy(expression, columns);
      } catch (err) {
        if (!(err instanceof PolicyError)) throw err;
        v = err;
      }
      if (this.validated.size >= CACHE_LIMIT) this.validated.clear();
      this.validated.set(key, v);
    }
    return v;
  }

  private checkInput(input: { name?: string; expression?: string }, columns: ColumnInfo[]): void {
    if (input.name !== undefined) {
      const n = input.name.trim();
      if (n.length < 1 || charLength(n) > 100) throw new AppError('validation_failed.policy_name', { reason: n.length < 1 ? 'empty' : 'too_long' });
    }
    if (input.expression !== undefined) {
      const v = this.validate(input.expression, columns);
      if (v instanceof PolicyError) throw invalidExpression(v);
      const cost = policyCost(v);
      if (cost > MAX_POLICY_COST) throw tooCostly(cost);
    }
  }

  /** MAX_POLICY_COST over the table's policies as they would be: `expression` added, or in place of the policy `replacing`. */
  private async checkCost(db: Db, info: TableInfo, expression: string, replacing: string | null): Promise<void> {
    const columns = columnsOf(info);
    // a stored policy that no longer fits the table (a column dropped) weighs as parsed: adding
    // the column back makes it apply again
    const costOf = (e: string) => {
      const v = this.validate(e, columns);
      if (!(v instanceof PolicyError)) return policyCost(v);
      try {
        return policyCost(parsePolicy(e));
      } catch {
        return 0; // stored before a rule that refuses it now: it never applies
      }
    };
    let cost = costOf(expression);
    for (const p of await this.ofTable(db, info.id)) if (p.policy_id !== replacing) cost += costOf(p.expression);
    if (cost > MAX_POLICY_COST) throw tooCostly(cost);
  }

  private async table(projectId: string, tableId: string): Promise<{ db: Db; info: TableInfo }> {
    const t = await this.tables.get(projectId, tableId);
    const info: TableInfo = { id: t.id, name: t.name, columns: t.columns.filter((c) => !c.primary_key) };
    return { db: await this.engine.project(projectId), info };
  }

  async list(projectId: string, tableId: string): Promise<Policy[]> {
    const { db, info } = await this.table(projectId, tableId);
    return this.ofTable(db, info.id);
  }

  /** Every policy of a table, enabled or not, in the order they apply. */
  async ofTable(db: Db, tableId: string): Promise<Policy[]> {
    const rows = await db.all<PolicyRow>(
      `SELECT id, name, operation, expression, enabled, created_at FROM ${db.t('_bp_policies')} WHERE table_id = ? ORDER BY created_at, id`,
      [tableId],
    );
    return rows.map(toPolicy);
  }

  /** Validates an expression against the table as create would, storing nothing (the console's live check). */
  async check(projectId: string, tableId: string, expression: string): Promise<{ valid: true }> {
    const { info } = await this.table(projectId, tableId);
    this.checkInput({ expression }, columnsOf(info));
    return { valid: true };
  }

  async create(projectId: string, tableId: string, input: { name: string; operation: string; expression: string; enabled?: boolean }): Promise<Policy> {
    const { db, info } = await this.table(projectId, tableId);
    const operation = input.operation.toUpperCase() as PolicyOperation;
    if (!OPERATIONS.includes(operation)) throw new AppError('validation_failed.one_of', { field: 'operation', allowed: OPERATIONS });
    this.checkInput(input, columnsOf(info));
    await this.checkCost(db, info, input.expression, null);
    const row: PolicyRow = {
      id: newId(),
      name: input.name.trim(),
      operation,
      expression: input.expression,
      enabled: input.enabled ?? true,
      created_at: '',
    };
    await db.tx(async (tx) => {
      const latest = `SELECT MAX(created_at) AS latest FROM ${tx.t('_bp_policies')} WHERE table_id = ?`;
      row.created_at = (await creationTime(tx, this.clock.now(), latest, [info.id])).toISOString();
      await tx.run(`INSERT INTO ${tx.t('_bp_policies')} (id, table_id, name, operation, expression, enabled, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
        row.id,
        info.id,
        row.name,
        row.operation,
        row.expression,
        row.enabled as boolean,
        row.created_at,
      ]);
      await bumpSchemaVersion(tx);
    });
    return toPolicy(row);
  }

  private async load(db: Db, tableId: string, policyId: string): Promise<PolicyRow> {
    if (!isId(policyId)) throw new AppError('not_found', { what: 'policy' });
    const row = await db.get<PolicyRow>(
      `SELECT id, name, operation, expression, enabled, created_at FROM ${db.t('_bp_policies')} WHERE id = ? AND table_id = ?`,
      [policyId, tableId],
    );
    if (!row) throw new AppError('not_found', { what: 'policy' });
    return row;
  }

  async update(projectId: string, tableId: string, policyId: string, input: { name?: string; expression?: string; enabled?: boolean }): Promise<Policy> {
    const { db, info } = await this.table(projectId, tableId);
    const row = await this.load(db, info.id, policyId);
    this.checkInput(input, columnsOf(info));
    if (input.expression !== undefined) await this.checkCost(db, info, input.expression, row.id);
    const next: PolicyRow = {
      ...row,
      name: input.name !== undefined ? input.name.trim() : row.name,
      expression: input.expression ?? row.expression,
      enabled: input.enabled ?? (row.enabled === true || row.enabled === 1),
    };
    await db.tx(async (tx) => {
      await tx.run(`UPDATE ${tx.t('_bp_policies')} SET name = ?, expression = ?, enabled = ? WHERE id = ?`, [next.name, next.expression, next.enabled as boolean, row.id]);
      await bumpSchemaVersion(tx);
    });
    return toPolicy(next);
  }

  async remove(projectId: string, tableId: string, policyId: string): Promise<void> {
    const { db, info } = await this.table(projectId, tableId);
    await this.load(db, info.id, policyId);
    await db.tx(async (tx) => {
      await tx.run(`DELETE FROM ${tx.t('_bp_policies')} WHERE id = ?`, [policyId]);
      await bumpSchemaVersion(tx);
    });
  }

  /** Every enabled policy of the project, by table id, in the order they apply. */
  async enabledByTable(db: Db): Promise<Map<string, StoredPolicy[]>> {
    const rows = await db.all<StoredPolicy & { table_id: string }>(
      `SELECT id, table_id, operation, expression FROM ${db.t('_bp_policies')} WHERE enabled = ? ORDER BY created_at, id`,
      [true],
    );
    const out = new Map<string, StoredPolicy[]>();
    for (const { table_id, ...r } of rows) {
      const list = out.get(table_id);
      if (list) list.push(r);
      else out.set(table_id, [r]);
    }
    return out;
  }

  /**
   * The combined row filter of each operation (its own policies and ALL ones, ORed; null when it
   * has none) for one caller, from the table's enabled policies.
   */
  rowFilters(rows: readonly StoredPolicy[], table: TableInfo, auth: AuthContext | null): (op: Operation) => Sql | null {
    if (rows.length === 0) return () => null;
    const prefix = this.filterKey(rows, table, auth);
    const now = this.clock.now();
    return (op) => {
      const key = prefix + op;
      const hit = this.filters.get(key);
      if (hit !== undefined) {
        this.filters.delete(key);
        this.filters.set(key, hit);
        return hit;
      }
      let clock = false;
      const ctx = {
        auth,
        get now() {
          return (clock = true), now;
        },
      };
      const filter = this.combine(table, rows.filter((r) => r.operation === op || r.operation === 'ALL'), ctx);
      if (!clock && (filter === null || sizeOf(filter) <= COMPILED_FILTER_CHARS)) this.keepFilter(key, filter && Object.freeze({ sql: filter.sql, params: Object.freeze(filter.params) as Sql['params'] }));
      return filter;
    };
  }

  /** What a filter is compiled from: the policy set (and its table) and every auth value the compiler may read. */
  private filterKey(rows: readonly StoredPolicy[], table: TableInfo, auth: AuthContext | null): string {
    let set = this.policySets.get(rows);
    if (set?.table !== table) this.policySets.set(rows, (set = { table, id: ++this.policySetCount }));
    return `${set.id} ${JSON.stringify(auth)} `;
  }

  /** Compiled filters kept (tests: the bound holds). */
  get compiledFilters(): number {
    return this.filters.size;
  }

  private keepFilter(key: string, filter: Sql | null): void {
    this.filters.set(key, filter);
    if (this.filters.size > COMPILED_FILTERS) this.filters.delete(this.filters.keys().next().value!);
  }

  private combine(table: TableInfo, rows: { id: string; expression: string }[], ctx: CompileContext): Sql | null {
    if (rows.length === 0) return null;
    const parts = rows.map((r) => {
      const applied = this.apply(table, r, ctx);
      if (!(applied instanceof PolicyError)) return applied;
      const key = `${r.id}\u0000${r.expression}\u0000${columnsOf(table).map((c) => c.name).join(',')}`;
      if (!this.logged.has(key)) {
        this.logged.add(key);
        this.log.warn({ policy_id: r.id, table: table.name, offending: applied.offending, position: applied.position }, 'stored RLS policy no longer validates; it matches no rows');
      }
      return NO_MATCH;
    });
    return { sql: parts.map((p) => `(${p.sql})`).join(' OR '), params: parts.flatMap((p) => p.params) };
  }

  /**
   * One stored policy compiled for a caller (`ctx.columnRef` may point its columns elsewhere than
   * the table's own, as the policy simulator does for the values a write would store), or the
   * error it no longer validates with: such a policy matches no rows (NO_MATCH).
   */
  apply(table: TableInfo, policy: { expression: string }, ctx: CompileContext): Sql | PolicyError {
    const v = this.validatedAgainst(table, policy);
    if (v instanceof PolicyError) return v;
    const compiled = this.engine.dialect.compilePolicy(v, ctx);
    return { sql: compiled.sql, params: compiled.params as Sql['params'] };
  }
}
