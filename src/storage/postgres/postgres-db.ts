// pg behind the async Db interface. SQL is written with `?` placeholders for both engines; they
// are rewritten to $1..$n here (generated SQL never contains a literal `?`).
import pg from 'pg';
import type { Db, SqlParam } from '../engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, QueryTimeout } from '../engine.ts';

// Result types the same as SQLite's: numbers for bigint/count, ISO strings for instants,
// 'YYYY-MM-DD' for dates.
const INT8 = 20, DATE = 1082, TIMESTAMP = 1114, TIMESTAMPTZ = 1184;
pg.types.setTypeParser(INT8, (v) => Number(v));
pg.types.setTypeParser(DATE, (v) => v);
pg.types.setTypeParser(TIMESTAMPTZ, (v) => new Date(v).toISOString());
pg.types.setTypeParser(TIMESTAMP, (v) => new Date(`${v.replace(' ', 'T')}Z`).toISOString());

const converted = new Map<string, string>();
export function numberedParams(sql: string): string {
  let out = converted.get(sql);
  if (out === undefined) {
    let n = 0;
    out = sql.replace(/\?/g, () => `$${++n}`);
    if (converted.size > 2000) converted.clear();
    converted.set(sql, out);
  }
  return out;
}

export function translatePgError(err: unknown): unknown {
  const e = err as { code?: string; constraint?: string; column?: string };
  if (e?.code === '23505') return new UniqueViolation(e.constraint ?? null);
  if (e?.code === '23502') return new NotNullViolation(e.column ?? null);
  if (e?.code === '57014') return new QueryTimeout();
  return err;
}

type Queryable = pg.Pool | pg.PoolClient;

export class PgDb implements Db {
  readonly kind = 'postgres' as const;
  constructor(
    private readonly conn: Queryable,
    readonly schema: string,
    private readonly inTx = false,
  ) {}

  t(name: string): string {
    return `${quoteIdent(this.schema)}.${quoteIdent(name)}`;
  }

  private async query(sql: string, params: readonly SqlParam[]): Promise<pg.QueryResult> {
    try {
      return await this.conn.query(numberedParams(sql), params as unknown[]);
    } catch (err) {
      throw translatePgError(err);
    }
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return (await this.query(sql, params)).rows as T[];
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return (await this.query(sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<{ changes: number }> {
    return { changes: (await this.query(sql, params)).rowCount ?? 0 };
  }

  async tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    if (this.inTx) return fn(this);
    const client = await (this.conn as pg.Pool).connect();
    try {
      await client.query('BEGIN');
      const result = await fn(new PgDb(client, this.schema, true));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}
