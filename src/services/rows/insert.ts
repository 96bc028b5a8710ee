// INSERT statements of the passthrough: plain bulk inserts as multi-row statements, and upserts
// row by row. Every statement's RETURNING carries the post-write check and the representation, so
// rows are never read back by a re-computed id.
import type { Db, Engine, SqlParam } from '../../storage/engine.ts';
import { quoteIdent } from '../../storage/engine.ts';
import { toParam } from '../column-values.ts';
import type { RowValues } from './row-input.ts';
import type { Returning, Scope, Written } from './scope.ts';

/** Bound parameters in one statement: SQLite's limit (SQLITE_MAX_VARIABLE_NUMBER); PostgreSQL's is 65535. */
export const MAX_BOUND_PARAMS = 32766;
/** Rows in one statement: past this, fewer statements save little, while one statement holds its
 * connection longer and a prepared statement grows with it. */
export const MAX_ROWS_PER_STATEMENT = 1024;

/**
 * Slices of at most `max` rows whose sizes are powers of two: the engines cache prepared statements
 * by their text, so a table sees a dozen statement shapes rather than one per row count.
 */
function slices<T>(items: T[], max: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; ) {
    let size = 1;
    while (size * 2 <= Math.min(max, items.length - i)) size *= 2;
    out.push(items.slice(i, i + size));
    i += size;
  }
  return out;
}

/** Consecutive rows that all carry an explicit id, or all lack one. */
function runsById(rows: RowValues[]): RowValues[][] {
  const runs: RowValues[][] = [];
  for (const row of rows) {
    const last = runs[runs.length - 1];
    if (last && last[0]!.has('id') === row.has('id')) last.push(row);
    else runs.push([row]);
  }
  return runs;
}

export class Inserter {
  constructor(private readonly engine: Engine) {}

  /**
   * Plain INSERT of complete rows (every row of a run has the same keys, in the same order), in
   * multi-row statements within the parameter limit. After explicit ids the engine's id generator
   * is moved past them before any row needs a generated id.
   */
  async rows(tx: Db, scope: Scope, rows: RowValues[], ret: Returning, out: Written): Promise<void> {
    for (const run of runsById(rows)) {
      const width = Math.max(1, run[0]!.size);
      const max = Math.min(MAX_ROWS_PER_STATEMENT, Math.floor((MAX_BOUND_PARAMS - ret.params.length) / width));
      for (const part of slices(run, max)) scope.collect(await this.statement(tx, scope, part, ret, null), ret, out);
      if (run[0]!.has('id')) await this.engine.dialect.afterExplicitIds(tx, scope.t);
    }
  }

  /** One row of an upsert whose conflict key is set: inserted unless a row with that key exists
   * (ON CONFLICT DO NOTHING). Returns whether it was inserted. */
  async ifAbsent(tx: Db, scope: Scope, row: RowValues, target: string, ret: Returning, out: Written): Promise<boolean> {
    const raw = await this.statement(tx, scope, [row], ret, target);
    scope.collect(raw, ret, out);
    if (raw.length > 0 && row.has('id')) await this.engine.dialect.afterExplicitIds(tx, scope.t);
    return raw.length > 0;
  }

  /**
   * The UPDATE half of an upsert: the existing row with `target` = `key`, only if the caller may
   * update it and see it (its existing values pass the UPDATE and SELECT policies). Returns whether
   * it was updated.
   */
  async merge(tx: Db, scope: Scope, target: string, key: unknown, sent: RowValues, ret: Returning, out: Written): Promise<boolean> {
    // the key itself is set too, so that a row sending nothing else still runs the checks
    const set = new Map([[target, key], ...[...sent].filter(([k]) => k !== 'id' && k !== target)]);
    const keyType = scope.types.get(target)!;
    const where = [`${quoteIdent(target)} = ?`];
    const params: SqlParam[] = [...[...set].map(([c, v]) => toParam(scope.types.get(c)!, v)), toParam(keyType, key)];
    for (const op of ['UPDATE', 'SELECT'] as const) {
      const p = await scope.policy(op, tx);
      if (!p) continue;
      where.push(`(${p.sql})`);
      params.push(...p.params);
    }
    const sets = [...set.keys()].map((c) => `${quoteIdent(c)} = ?`).join(', ');
    const raw = await tx.all<Record<string, unknown>>(`UPDATE ${scope.t} SET ${sets} WHERE ${where.join(' AND ')} RETURNING ${ret.sql}`, [...params, ...ret.params]);
    scope.collect(raw, ret, out);
    return raw.length > 0;
  }

  /** One multi-row INSERT … RETURNING, optionally ON CONFLICT (target) DO NOTHING. */
  private statement(tx: Db, scope: Scope, rows: RowValues[], ret: Returning, target: string | null): Promise<Record<string, unknown>[]> {
    const cols = [...rows[0]!.keys()];
    const conflict = target === null ? '' : ` ON CONFLICT (${quoteIdent(target)}) DO NOTHING`;
    const tuple = cols.length ? `(${cols.map(() => '?').join(', ')})` : `(${this.generatedId})`;
    const params = rows.flatMap((row) => cols.map((c) => toParam(scope.types.get(c)!, row.get(c))));
    const names = cols.length ? cols.map(quoteIdent).join(', ') : '"id"';
    return tx.all(`INSERT INTO ${scope.t} (${names}) VALUES ${rows.map(() => tuple).join(', ')}${conflict} RETURNING ${ret.sql}`, [...params, ...ret.params]);
  }

  /** A VALUES entry that makes the engine generate the id, for a table without other columns
   * (`DEFAULT VALUES` inserts one row only). */
  private get generatedId(): string {
    return this.engine.kind === 'postgres' ? 'DEFAULT' : 'NULL';
  }
}
