// One request's view of a table for the passthrough: column types, the policies' row filters, and
// the SQL that reads rows out (select lists and the RETURNING list of a write).
import type { ColumnType, Db, Engine, Sql } from '../../storage/engine.ts';
import { quoteIdent } from '../../storage/engine.ts';
import { AppError } from '../../errors.ts';
import type { SelectItem } from '../../rest-query/index.ts';
import type { TableInfo } from '../tables.ts';
import type { AuthContext } from '../end-users.ts';

export type Operation = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

/** A request's row filter of each operation from its policies (null: none, open). */
export type RowFilters = (op: Operation) => Sql | null;

/**
 * A select list whose SQL aliases are positional (`"#0"`, `"#1"`…): no user alias (`__proto__`, or
 * the name of another column) becomes a key of the driver's row objects or shadows a column in
 * ORDER BY, and none can be a column name (those match ^[a-z_][a-z0-9_]*$).
 */
export interface Projection {
  sql: string;
  items: SelectItem[];
}

/**
 * What a write's RETURNING carries: the id, the post-write check (an assertion that fails the
 * statement when a written row does not pass the operation's policies: Dialect.assertTrue), whether
 * the caller may SELECT it (`filtered`), and the selected columns (`items`; null when no
 * representation is returned).
 */
export interface Returning extends Sql {
  filtered: boolean;
  items: SelectItem[] | null;
}

/** What a write did: how many rows it touched, and those the caller may see, in answer order. */
export interface Written {
  count: number;
  rows: Record<string, unknown>[];
}

/** One RETURNING row, checked: its id, the raw row, and the row to show (null: none asked, or hidden). */
export interface Returned {
  id: number;
  raw: Record<string, unknown>;
  row: Record<string, unknown> | null;
}

export const rlsViolation = () => new AppError('rls_violation');

const truth = (sql: string) => `CASE WHEN (${sql}) THEN 1 ELSE 0 END`;

// The n-th selected column's name in a statement's result ("#0", "#1", ...): made once, so that
// decoding a row looks up the same string every time rather than building one per value.
const COLUMN_KEYS: string[] = [];
const columnKey = (n: number) => (COLUMN_KEYS[n] ??= `#${n}`);

export class Scope {
  readonly types: Map<string, ColumnType>;

  constructor(
    readonly db: Db,
    readonly table: TableInfo,
    private readonly engine: Engine,
    private readonly filters: RowFilters,
    readonly auth: AuthContext | null,
    readonly projectId: string,
  ) {
    this.types = new Map<string, ColumnType>([['id', 'integer'], ...table.columns.map((c) => [c.name, c.type] as [string, ColumnType])]);
  }

  get t(): string {
    return this.db.t(this.table.name);
  }

  /**
   * A write of this table that may make the store grow, in its transaction `tx`, within
   * PROJECT_MAX_BYTES (Engine.growing); `always` for one whose size its request does not tell.
   */
  growing<T>(tx: Db, write: (tx: Db) => Promise<T>, always: boolean): Promise<T> {
    return this.engine.growing(this.projectId, tx, write, { table: this.table.name, always });
  }

  /** The operation's policy filter (the policies of the schema version the request read). */
  policy(op: Operation): Sql | null {
    return this.filters(op);
  }

  projection(select: SelectItem[] | null): Projection {
    const items = select ?? [{ column: 'id', alias: 'id' }, ...this.table.columns.map((c) => ({ column: c.name, alias: c.name }))];
    return { sql: items.map((i, n) => `${quoteIdent(i.column)} AS "${columnKey(n)}"`).join(', '), items };
  }

  decode(raw: Record<string, unknown>, items: SelectItem[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const decodeValue = this.engine.dialect.decodeValue;
    for (let n = 0; n < items.length; n++) {
      const { column, alias } = items[n]!;
      const value = decodeValue(this.types.get(column)!, raw[columnKey(n)]);
      // a column named `__proto__` (possible before such names were refused) must come back as a
      // key rather than replace the object's prototype; every other name is a plain assignment
      if (alias === '__proto__') Object.defineProperty(out, alias, { value, enumerable: true, writable: true, configurable: true });
      else out[alias] = value;
    }
    return out;
  }

  /**
   * The RETURNING list of a write. `check`: the operation whose policies every written row must
   * pass, or fail the statement (403 rls_violation, nothing written); `newIds`: the write generates
   * ids, each of which must stay an exact JSON number (2^53 - 1 at most) or fail it. `show`: the
   * `select` of the rows to return, or null for none; `filter`: whether they must pass the SELECT
   * policies (false when the WHERE clause already applied them to these values); `mustShow`: a row
   * they hide fails the statement instead (406, nothing written: a single object is a row its
   * caller may see).
   */
  returning(check: Operation | null, show: { select: SelectItem[] | null } | null, filter: boolean, newIds = false, mustShow = false): Returning {
    const parts = ['"id" AS "#id"'];
    const params: Sql['params'] = [];
    const dialect = this.engine.dialect;
    const policy = check === null ? null : this.policy(check);
    if (policy) {
      parts.push(`${dialect.assertTrue(policy.sql, 'rls_violation')} AS "#ok"`);
      params.push(...policy.params);
    }
    if (newIds) parts.push(`${dialect.assertTrue(`"id" <= ${Number.MAX_SAFE_INTEGER}`, 'id_exhausted')} AS "#safe"`);
    const see = show !== null && filter ? this.policy('SELECT') : null;
    if (see) {
      parts.push(mustShow ? `${dialect.assertTrue(see.sql, 'not_single.hidden')} AS "#see"` : `${truth(see.sql)} AS "#see"`);
      params.push(...see.params);
    }
    const filtered = see !== null && !mustShow;
    let items: SelectItem[] | null = null;
    if (show !== null) {
      const p = this.projection(show.select);
      parts.push(p.sql);
      items = p.items;
    }
    return { sql: parts.join(', '), params, filtered, items };
  }

  /** A write's RETURNING rows (the statement checked them), with the rows to show. */
  collect(raw: Record<string, unknown>[], ret: Returning): Returned[] {
    return raw.map((r) => {
      const id = Number(r['#id']);
      const shown = ret.items !== null && (!ret.filtered || Number(r['#see']) === 1);
      return { id, raw: r, row: shown ? this.decode(r, ret.items!) : null };
    });
  }
}
