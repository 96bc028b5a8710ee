// Runs policy expressions against a real table `t` on SQLite and on PostgreSQL.
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AuthContext, ColumnInfo, CompiledSql, TypedExpr } from '../../src/policy-language/index.js';
import { validatePolicy } from '../../src/policy-language/index.js';
import { registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.js';
import { SqlitePolicyCompiler } from '../../src/storage/sqlite/sqlite-policy-compiler.js';
import { PostgresPolicyCompiler } from '../../src/storage/postgres/postgres-policy-compiler.js';
import { sqliteDialect } from '../../src/storage/sqlite/sqlite-engine.js';
import { postgresDialect, ROW_ASSERTION } from '../../src/storage/postgres/postgres-engine.js';
import { PLATFORM_SCHEMA } from '../../src/storage/postgres/postgres-db.js';
import { quoteIdent } from '../../src/storage/engine.js';
import { createTestDatabase, type EngineName, type TestDatabase } from '../support/postgres.js';

/** The conformance table: one column of every type (plus id). */
export const COLUMNS: ColumnInfo[] = [
  { name: 'id', type: 'integer' },
  { name: 'owner_id', type: 'integer' },
  { name: 'name', type: 'text' },
  { name: 'email', type: 'text' },
  { name: 'tags', type: 'text' },
  { name: 'qty', type: 'integer' },
  { name: 'price', type: 'number' },
  { name: 'active', type: 'boolean' },
  { name: 'created_at', type: 'timestamp' },
  { name: 'due', type: 'date' },
  { name: 'data', type: 'json' },
];

/** Column values as the service receives them from JSON (json column: the JSON text). */
export type Row = Partial<Record<string, string | number | bigint | boolean | null>>;

export const DEFAULT_AUTH: AuthContext = { id: 7, email: 'alice@example.com', role: 'editor', email_verified: true };
export const NO_ROLE_AUTH: AuthContext = { ...DEFAULT_AUTH, role: null };
export const UNVERIFIED_AUTH: AuthContext = { ...DEFAULT_AUTH, email_verified: false };
/** the callers every differential test runs as: a user, a user without a role, an unverified one, anonymous */
export const CALLERS: Array<AuthContext | null> = [DEFAULT_AUTH, NO_ROLE_AUTH, UNVERIFIED_AUTH, null];
export const DEFAULT_NOW = new Date('2024-03-15T12:00:00.000Z');

// The engines' own column types, so the conformance table runs on exactly what the service stores.
const SQLITE_TYPES = (t: ColumnInfo['type']) => sqliteDialect.columnType(t);
const PG_TYPES = (t: ColumnInfo['type']) => postgresDialect.columnType(t);

export interface Engine {
  name: EngineName;
  /** true when the row matches the expression */
  matches(expr: string, row: Row, auth: AuthContext | null, now: Date): Promise<boolean>;
  /** per caller, for each row, whether it matches (the rows are inserted once, one query per caller) */
  matchRows(expr: string, rows: Row[], callers: Array<AuthContext | null>, now: Date): Promise<boolean[][]>;
  compile(expr: string, auth: AuthContext | null, now: Date): { sql: string; params: unknown[] };
  /** compiles an expression that is typed already (a translated REST filter), as DEFAULT_AUTH at DEFAULT_NOW */
  compileTyped(expr: TypedExpr): CompiledSql;
  /** per compiled expression, for each row, whether it matches (the rows are inserted once) */
  matchCompiled(compiled: CompiledSql[], rows: Row[]): Promise<boolean[][]>;
  /** size of the engine's plan for a query filtered by expr (SQLite: bytecode steps; PostgreSQL: EXPLAIN VERBOSE text) */
  planSize(expr: string): Promise<number>;
  close(): Promise<void>;
}

let nextId = 1;

export async function openEngine(name: EngineName): Promise<Engine> {
  return name === 'sqlite' ? openSqlite() : openPostgres();
}

function openSqlite(): Engine {
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  const defs = COLUMNS.map((c) => `"${c.name}" ${SQLITE_TYPES(c.type)}${c.name === 'id' ? ' PRIMARY KEY' : ''}`);
  db.exec(`CREATE TABLE t (${defs.join(', ')})`);
  const compiler = new SqlitePolicyCompiler();
  const compile = (expr: string, auth: AuthContext | null, now: Date) => compiler.compile(validatePolicy(expr, COLUMNS), { auth, now });
  const insert = (row: Row): number => {
    const id = nextId++;
    const names = Object.keys(row);
    const values = names.map((n) => {
      const v = row[n];
      const type = COLUMNS.find((c) => c.name === n)!.type;
      if (v === null || v === undefined) return null;
      if (type === 'boolean') return v ? 1 : 0;
      if (type === 'integer') return BigInt(v as number);
      return v;
    });
    db.prepare(`INSERT INTO t (id${names.map((n) => `, "${n}"`).join('')}) VALUES (?${names.map(() => ', ?').join('')})`).run(id, ...values);
    return id;
  };
  const matchCompiled = async (compiled: CompiledSql[], rows: Row[]) => {
    try {
      const ids = rows.map(insert);
      return compiled.map(({ sql, params }) => {
        const hits = new Set(db.prepare(`SELECT id FROM t WHERE (${sql})`).pluck().all(...(params as unknown[])) as number[]);
        return ids.map((id) => hits.has(id));
      });
    } finally {
      db.prepare('DELETE FROM t').run();
    }
  };
  const matchRows = (expr: string, rows: Row[], callers: Array<AuthContext | null>, now: Date) =>
    matchCompiled(callers.map((auth) => compile(expr, auth, now)), rows);
  return {
    name: 'sqlite',
    compile,
    compileTyped: (expr) => compiler.compile(expr, { auth: DEFAULT_AUTH, now: DEFAULT_NOW }),
    matchCompiled,
    matchRows,
    matches: async (expr, row, auth, now) => (await matchRows(expr, [row], [auth], now))[0]![0]!,
    async planSize(expr) {
      const { sql, params } = compile(expr, DEFAULT_AUTH, DEFAULT_NOW);
      return db.prepare(`EXPLAIN SELECT count(*) AS c FROM t WHERE id = ? AND (${sql})`).all(1, ...params).length;
    },
    async close() {
      db.close();
    },
  };
}

/** the service's driver convention: `?` placeholders become $1..$n in order */
export function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

async function openPostgres(): Promise<Engine> {
  const tdb: TestDatabase = await createTestDatabase();
  // a policy must never take the database long: a slow expression fails here rather than stalling CI
  const client = new pg.Client({ connectionString: tdb.url, statement_timeout: 5000 });
  await client.connect();
  const defs = COLUMNS.map((c) => `"${c.name}" ${PG_TYPES(c.type)}${c.name === 'id' ? ' PRIMARY KEY' : ''}`);
  await client.query(`CREATE TABLE t (${defs.join(', ')})`);
  // the platform schema's bp_assert, which some compiled functions call (JSON_CONTAINS's bound)
  await client.query(`CREATE SCHEMA ${quoteIdent(PLATFORM_SCHEMA)}`);
  await client.query(ROW_ASSERTION);
  const compiler = new PostgresPolicyCompiler();
  const compile = (expr: string, auth: AuthContext | null, now: Date) => compiler.compile(validatePolicy(expr, COLUMNS), { auth, now });
  /** inserts the rows in one statement (a column a row lacks is NULL); returns their ids */
  const insert = async (rows: Row[]): Promise<number[]> => {
    const names = [...new Set(rows.flatMap((r) => Object.keys(r)))];
    const ids = rows.map(() => nextId++);
    const params: unknown[] = [];
    const bind = (v: unknown, type: string) => `$${params.push(typeof v === 'bigint' ? v.toString() : v ?? null)}::${type}`;
    const tuples = rows.map((r, k) => `(${[bind(ids[k], 'bigint'), ...names.map((n) => bind(r[n], PG_TYPES(COLUMNS.find((c) => c.name === n)!.type)))].join(', ')})`);
    await client.query(`INSERT INTO t (id${names.map((n) => `, "${n}"`).join('')}) VALUES ${tuples.join(', ')}`, params);
    return ids;
  };
  const matchCompiled = async (compiled: CompiledSql[], rows: Row[]) => {
    try {
      const ids = await insert(rows);
      const out: boolean[][] = [];
      for (const { sql, params } of compiled) {
        const r = await client.query(numbered(`SELECT id FROM t WHERE (${sql})`), params);
        const hits = new Set(r.rows.map((x: { id: string }) => Number(x.id)));
        out.push(ids.map((id) => hits.has(id)));
      }
      return out;
    } finally {
      await client.query('DELETE FROM t');
    }
  };
  const matchRows = (expr: string, rows: Row[], callers: Array<AuthContext | null>, now: Date) =>
    matchCompiled(callers.map((auth) => compile(expr, auth, now)), rows);
  return {
    name: 'postgres',
    compile,
    compileTyped: (expr) => compiler.compile(expr, { auth: DEFAULT_AUTH, now: DEFAULT_NOW }),
    matchCompiled,
    matchRows,
    matches: async (expr, row, auth, now) => (await matchRows(expr, [row], [auth], now))[0]![0]!,
    async planSize(expr) {
      const { sql, params } = compile(expr, DEFAULT_AUTH, DEFAULT_NOW);
      const r = await client.query(numbered(`EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) AS c FROM t WHERE id = ? AND (${sql})`), [1, ...params]);
      return r.rows.reduce((n: number, x: Record<string, string>) => n + x['QUERY PLAN']!.replace(/\s+/g, '').length, 0);
    },
    async close() {
      await client.end();
      await tdb.drop();
    },
  };
}
