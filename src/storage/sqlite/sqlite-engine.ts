// Embedded engine: one SQLite file for the platform and one per project under DATA_DIR, so that
// projects never contend for one writer and deleting a project deletes its file.
import Database from 'better-sqlite3';
import { mkdirSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ColumnType, Db, Dialect, Engine } from '../engine.ts';
import { quoteIdent } from '../engine.ts';
import { migrate } from '../migrate.ts';
import { platformMigrations, projectMigrations, type SchemaTypes } from '../schema.ts';
import { SqliteDb } from './sqlite-db.ts';
import { SqlitePolicyCompiler } from './sqlite-policy-compiler.ts';
import { registerSqliteFunctions } from '../../policy-language/index.ts';

const TYPES: SchemaTypes = { ts: 'TEXT', bool: 'INTEGER', bigint: 'INTEGER', serial: 'INTEGER PRIMARY KEY AUTOINCREMENT' };

const COLUMN_TYPES: Record<ColumnType, string> = {
  text: 'TEXT',
  integer: 'INTEGER',
  number: 'REAL',
  boolean: 'INTEGER',
  timestamp: 'TEXT',
  date: 'TEXT',
  json: 'TEXT',
};

// SQL LIKE pattern -> GLOB pattern: SQLite's LIKE ignores ASCII case, GLOB is the case-sensitive match.
function likeToGlob(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      const next = pattern[++i]!;
      out += next === '*' || next === '?' || next === '[' ? `[${next}]` : next;
    } else if (c === '%') out += '*';
    else if (c === '_') out += '?';
    else if (c === '*' || c === '?' || c === '[') out += `[${c}]`;
    else out += c;
  }
  return out;
}

export const sqliteDialect: Dialect = {
  kind: 'sqlite',
  columnType: (type) => COLUMN_TYPES[type],
  idColumn: '"id" INTEGER PRIMARY KEY AUTOINCREMENT',
  binaryCollation: '',
  // ilike: the policy language's bp_like (full Unicode lower-casing, as PostgreSQL's ICU lower)
  like: (column, ci, pattern) => (ci ? { sql: `bp_like(${column}, ?)`, param: pattern } : { sql: `${column} GLOB ?`, param: likeToGlob(pattern) }),
  // SQLite cannot add a constraint later: a NOT NULL column gets a placeholder DEFAULT from our own
  // vocabulary (never user text), then the real default is written with a bound parameter.
  addColumn: (table, column, type, notNull) => ({
    add: `ALTER TABLE ${table} ADD COLUMN ${column} ${COLUMN_TYPES[type]}${notNull ? ` NOT NULL DEFAULT ${['integer', 'number', 'boolean'].includes(type) ? '0' : "''"}` : ''}`,
    afterBackfill: null,
  }),
  compilePolicy: (expr, ctx) => new SqlitePolicyCompiler().compile(expr, ctx),
  afterExplicitIds: async () => undefined, // AUTOINCREMENT already continues after the largest id
};

export interface SqliteEngineOptions {
  dataDir: string;
  /** Called on every project connection right after it opens (e.g. to register SQL functions). */
  onOpenProject?: (db: Database.Database) => void;
  /** How many project files stay open at once. */
  maxOpenProjects?: number;
}

function open(file: string): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

export class SqliteEngine implements Engine {
  readonly kind = 'sqlite' as const;
  readonly dialect = sqliteDialect;
  readonly platform: SqliteDb;
  private projects = new Map<string, SqliteDb>();
  private readonly projectDir: string;

  private constructor(private readonly opts: SqliteEngineOptions) {
    mkdirSync(opts.dataDir, { recursive: true });
    this.projectDir = join(opts.dataDir, 'projects');
    mkdirSync(this.projectDir, { recursive: true });
    this.platform = new SqliteDb(open(join(opts.dataDir, 'platform.db')));
  }

  static async open(opts: SqliteEngineOptions): Promise<SqliteEngine> {
    const engine = new SqliteEngine(opts);
    await migrate(engine.platform, platformMigrations(quoteIdent, TYPES));
    return engine;
  }

  private file(projectId: string): string {
    if (!/^[a-z0-9]+$/.test(projectId)) throw new Error('invalid project id');
    return join(this.projectDir, `${projectId}.db`);
  }

  private async openProject(projectId: string, create: boolean): Promise<SqliteDb> {
    const cached = this.projects.get(projectId);
    if (cached) {
      // refresh LRU position
      this.projects.delete(projectId);
      this.projects.set(projectId, cached);
      return cached;
    }
    const file = this.file(projectId);
    if (!create && !existsSync(file)) throw new Error(`project store ${projectId} is missing`);
    const raw = open(file);
    registerSqliteFunctions(raw);
    this.opts.onOpenProject?.(raw);
    const db = new SqliteDb(raw);
    await migrate(db, projectMigrations(quoteIdent, TYPES));
    this.projects.set(projectId, db);
    // Close the least recently used files beyond the limit, never one inside an open transaction.
    const max = this.opts.maxOpenProjects ?? 256;
    for (const [id, conn] of this.projects) {
      if (this.projects.size <= max) break;
      if (conn.busy || id === projectId) continue;
      this.projects.delete(id);
      conn.raw.close();
    }
    return db;
  }

  async createProjectStore(projectId: string): Promise<void> {
    await this.openProject(projectId, true);
  }

  project(projectId: string): Promise<Db> {
    return this.openProject(projectId, false);
  }

  async dropProjectStore(projectId: string): Promise<void> {
    const conn = this.projects.get(projectId);
    if (conn) {
      this.projects.delete(projectId);
      conn.raw.close();
    }
    const file = this.file(projectId);
    for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  }

  async ping(): Promise<boolean> {
    try {
      await this.platform.get('SELECT 1 AS ok');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    for (const conn of this.projects.values()) conn.raw.close();
    this.projects.clear();
    if (this.platform.raw.open) this.platform.raw.close();
  }
}
