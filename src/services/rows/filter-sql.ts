// PostgREST filter tree -> a SQL boolean with bound values. Column names come from the parsed
// (checked) tree and are quoted; every value is a parameter; engine differences are dialect hooks.
import type { Filter } from '../../rest-query/index.ts';
import type { ColumnType, Dialect, SqlParam } from '../../storage/engine.ts';
import { quoteIdent } from '../../storage/engine.ts';
import { canonicalJson } from '../column-values.ts';

export interface Sql {
  sql: string;
  params: SqlParam[];
}

const OPS: Record<string, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

function param(type: ColumnType, value: unknown, dialect: Dialect): { sql: string; value: SqlParam } {
  if (type === 'json') {
    // one canonical text for the SQLite text comparison; PostgreSQL compares jsonb values
    const text = canonicalJson(JSON.parse(String(value)));
    return { sql: dialect.kind === 'postgres' ? '?::jsonb' : '?', value: text };
  }
  return { sql: '?', value: value as SqlParam };
}

export function compileFilter(filter: Filter, types: ReadonlyMap<string, ColumnType>, dialect: Dialect): Sql {
  const params: SqlParam[] = [];
  const walk = (f: Filter): string => {
    let sql: string;
    if (f.kind !== 'cond') {
      sql = f.items.length === 0 ? (f.kind === 'and' ? '1=1' : '1=0') : `(${f.items.map(walk).join(f.kind === 'and' ? ' AND ' : ' OR ')})`;
    } else {
      const type = types.get(f.column)!;
      const col = quoteIdent(f.column);
      const textCol = type === 'text' ? `${col}${dialect.binaryCollation}` : col;
      switch (f.op) {
        case 'is': {
          const v = f.value as string;
          sql = v === 'null' || v === 'unknown' ? `${col} IS NULL` : v === 'not_null' ? `${col} IS NOT NULL` : `${col} IS ${v === 'true' ? 'TRUE' : 'FALSE'}`;
          break;
        }
        case 'in': {
          const list = f.value as unknown[];
          if (list.length === 0) sql = '1=0';
          else {
            const parts = list.map((v) => {
              const p = param(type, v, dialect);
              params.push(p.value);
              return p.sql;
            });
            sql = `${textCol} IN (${parts.join(', ')})`;
          }
          break;
        }
        case 'like':
        case 'ilike': {
          const l = dialect.like(col, f.op === 'ilike', String(f.value));
          params.push(l.param);
          sql = l.sql;
          break;
        }
        default: {
          const p = param(type, f.value, dialect);
          params.push(p.value);
          sql = `${textCol} ${OPS[f.op]} ${p.sql}`;
        }
      }
    }
    return f.negated ? `NOT (${sql})` : sql;
  };
  const sql = walk(filter);
  return { sql, params };
}
