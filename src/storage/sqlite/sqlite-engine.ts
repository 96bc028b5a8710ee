// Embedded engine: one SQLite file for the platform and one per project under DATA_DIR, so that
// projects never contend for one writer and deleting a project deletes its file. The main thread
// keeps a connection per open project for the platform's own records (keys, sessions, policies);
// statements over a project's tables run in worker threads (sqlite-worker-pool.ts).
import { rmSync, existsSync, realpathSync } from 'node:fs';
import { makeDirs } from '../../lib/make-dirs.ts';
import { join, sep } from 'node:path';
import type { ColumnType, Db, Dialect, Engine, EngineStats } from '../engine.ts';
import { quoteIdent, StoreMissing } from '../engine.ts';
import { migrate, type Migration } from '../migrate.ts';
import { platformMigrations, projectMigrations, type SchemaTypes } from '../schema.ts';
import type Database from 'better-sqlite3';
import { SqliteDb, type Reopen } from './sqlite-db.ts';
import { CheckpointQueue, openConnection, projectFile } from './sqlite-connection.ts';
import { SqliteWorkerPool } from './sqlite-worker-pool.ts';
import { HybridDb, InlineBudget } from './sqlite-hybrid-db.ts';
import { registerSqliteFunctions } from './sqlite-functions.ts';
import { sqliteDeadlineLibrary, sqliteWorkerScript } from './sqlite-build.ts';
import { SqlitePolicyCompiler } from './sqlite-policy-compiler.ts';
import { fileLimit, openProjectLimit, MAIN_THREAD_CACHE_KIB, MAIN_THREAD_WARM, workerOpenFiles } from './sqlite-open-limit.ts';
import { OpenFiles } from './sqlite-open-files.ts';
import { statementBound, StatementCache } from './sqlite-statement-cache.ts';
import { DEFAULT_MAX_RESULT_BYTES, DEFAULT_SQLITE_WORKER_IDLE_MS } from '../../config.ts';

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

/** booleans are stored as 0/1 and json as its canonical text; integers come back as BigInt (safeIntegers) */
function decodeValue(type: ColumnType, raw: unknown): unknown {
  if (raw === null || raw === undefined) return null;
  if (type === 'boolean') return raw === 1 || raw === 1n;
  if (type === 'json' && typeof raw === 'string') return JSON.parse(raw);
  if (type === 'integer' && typeof raw === 'bigint') return Number(raw);
  return raw;
}

export const sqliteDialect: Dialect = {
  kind: 'sqlite',
  columnType: (type) => COLUMN_TYPES[type],
  idColumn: '"id" INTEGER PRIMARY KEY AUTOINCREMENT',
  binaryCollation: '',
  remote: false,
  // SQLite cannot add a constraint later: a NOT NULL column gets a placeholder DEFAULT from our own
  // vocabulary (never user text), then the real default is written with a bound parameter.
  addColumn: (table, column, type, notNull) => ({
    add: `ALTER TABLE ${table} ADD COLUMN ${column} ${COLUMN_TYPES[type]}${notNull ? ` NOT NULL DEFAULT ${['integer', 'number', 'boolean'].includes(type) ? '0' : "''"}` : ''}`,
    afterBackfill: null,
  }),
  compilePolicy: (expr, ctx) => new SqlitePolicyCompiler().compile(expr, ctx),
  decodeValue,
  generatedId: 'NULL', // a NULL for an INTEGER PRIMARY KEY is the next rowid
  afterExplicitIds: async () => undefined, // AUTOINCREMENT already continues after the largest id
  assertTrue: (condition, failure) => `bp_assert(CASE WHEN (${condition}) THEN 1 ELSE 0 END, '${failure}')`,
  // AUTOINCREMENT takes one past the larger of the largest id ever used and the largest present
  nextId: async (db, name) => {
    const row = await db.get<{ n: number | bigint }>(
      `SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), COALESCE((SELECT max("id") FROM ${db.t(name)}), 0)) + 1 AS n`,
      [name],
    );
    return Number(row!.n);
  },
};

export interface SqliteEngineOptions {
  dataDir: string;
  /**
   * SQLITE_OPEN_PROJECTS: project files the main thread keeps open, the least recently used closed
   * beyond it; the workers share as many among them (default and bound: sqlite-open-limit.ts).
   */
  maxOpenProjects?: number;
  /** Worker threads for statements over project tables (default 4). */
  workers?: number;
  /** Workers one project may hold at once (default: half, rounded up). */
  perProject?: number;
  /** Bound on every statement over project tables, in ms (0: none; default 30 s). */
  statementTimeoutMs?: number;
  /** SQLITE_WORKER_IDLE_MS: the workers exit after this long without a statement (0: never; default 30 s). */
  workerIdleMs?: number;
  /** MAX_RESULT_BYTES: the most a statement over project tables may hand back (result-budget.ts) */
  maxResultBytes?: number;
  /** PROJECT_MAX_BYTES: how large a project file may grow (none: SQLite's own bound) */
  projectMaxBytes?: number;
  /** beyond the statement timeout, how long a worker may stay silent before it is replaced (tests) */
  stuckGraceMs?: number;
}

// the main thread never blocks on another connection's write lock (see sqlite-db.ts)
const open = (file: string, project?: { extension: string; mustExist: boolean; maxBytes?: number }) =>
  openConnection(file, { busyTimeoutMs: 0, ...(project && { ...project, cacheKiB: MAIN_THREAD_CACHE_KIB }) });

const PLATFORM_MIGRATIONS = platformMigrations(quoteIdent, TYPES);
const PROJECT_MIGRATIONS = projectMigrations(quoteIdent, TYPES);

/**
 * Brings a file's schema up to date. How many migrations a file has is stamped in its header
 * (`user_version`), so that opening an up-to-date file reads one header field: no write lock, no
 * write. A file stamped 0 is new or older than the stamp: `migrate` applies what its own records
 * lack, then the stamp is written in the same transaction. A stamp beyond the list is a file a
 * newer release migrated: left as it is.
 */
async function migrateFile(db: SqliteDb, migrations: Migration[]): Promise<void> {
  const stamp = await db.getOnce<{ user_version: number }>('PRAGMA user_version');
  if (stamp!.user_version >= migrations.length) return;
  await db.tx(async (tx) => {
    await migrate(tx, migrations);
    await tx.run(`PRAGMA user_version = ${migrations.length}`);
  });
}

export class SqliteEngine implements Engine {
  readonly kind = 'sqlite' as const;
  readonly dialect = sqliteDialect;
  readonly platform: SqliteDb;
  private readonly projects: OpenFiles<SqliteDb>;
  /**
   * Connections the open-file limit closed, while something may hold them: the next statement on
   * one opens it again, and so does the next request for its project, so that a file never has
   * two. Forgotten once nothing holds them.
   */
  private readonly asleep = new Map<string, WeakRef<SqliteDb>>();
  private readonly forgetAsleep = new FinalizationRegistry<string>((id) => {
    if (this.asleep.get(id)?.deref() === undefined) this.asleep.delete(id);
  });
  /** first opens under way: concurrent requests share one, never open (and leak) a second connection */
  private opening = new Map<string, Promise<SqliteDb>>();
  /** projects whose store is being deleted: a first open that ends meanwhile keeps nothing */
  private readonly dropping = new Set<string>();
  private readonly projectDir: string;
  private readonly checkpoints: CheckpointQueue;
  private readonly workers: SqliteWorkerPool;
  private readonly maxResultBytes: number;
  private readonly inline = new InlineBudget();
  private readonly deadlineLibrary = sqliteDeadlineLibrary();
  private readonly maxOpen: number;
  private readonly statements: StatementCache;

  private constructor(private readonly opts: SqliteEngineOptions) {
    this.maxOpen = openProjectLimit(opts.maxOpenProjects, fileLimit());
    this.statements = new StatementCache(statementBound(this.maxOpen));
    this.projects = new OpenFiles<SqliteDb>({
      limit: this.maxOpen,
      warm: MAIN_THREAD_WARM,
      release: (db) => db.releaseMemory(),
      close: (db, projectId) => {
        // closed for the limit: checkpointed, a file opened by no one would be recovered first
        this.checkpoints.forget(db.raw.name);
        db.sleep();
        this.asleep.set(projectId, new WeakRef(db));
        this.forgetAsleep.register(db, projectId, db);
      },
      pinned: (db) => db.busy,
      later: (fn) => setImmediate(fn),
    });
    makeDirs(join(opts.dataDir, 'projects'));
    // as SQLite names the files (the checkpoint queue compares paths)
    this.projectDir = realpathSync(join(opts.dataDir, 'projects'));
    this.checkpoints = new CheckpointQueue(this.deadlineLibrary);
    this.platform = new SqliteDb(open(join(opts.dataDir, 'platform.db')), this.statements);
    const workers = opts.workers ?? 4;
    const statementTimeoutMs = opts.statementTimeoutMs ?? 30000;
    this.maxResultBytes = opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    this.workers = new SqliteWorkerPool({
      script: sqliteWorkerScript(),
      deadlineLibrary: this.deadlineLibrary,
      projectDir: this.projectDir,
      maxConnections: workerOpenFiles(this.maxOpen, workers),
      // a write waits for the lock at most as long as a statement may run (the busy handler
      // ignores interrupts)
      busyTimeoutMs: statementTimeoutMs || 5000,
      workers,
      perProject: opts.perProject ?? Math.ceil(workers / 2),
      statementTimeoutMs,
      idleMs: opts.workerIdleMs ?? DEFAULT_SQLITE_WORKER_IDLE_MS,
      maxResultBytes: this.maxResultBytes,
      projectMaxBytes: opts.projectMaxBytes,
      stuckGraceMs: opts.stuckGraceMs,
    });
  }

  static async open(opts: SqliteEngineOptions): Promise<SqliteEngine> {
    const engine = new SqliteEngine(opts);
    await migrateFile(engine.platform, PLATFORM_MIGRATIONS);
    return engine;
  }

  private file(projectId: string): string {
    return projectFile(this.projectDir, projectId);
  }

  private openProject(projectId: string, create: boolean): Promise<SqliteDb> {
    const cached = this.projects.use(projectId);
    if (cached) return Promise.resolve(cached);
    const asleep = this.asleep.get(projectId)?.deref();
    if (asleep) return new Promise((resolve) => resolve((asleep.wake(), asleep)));
    let opening = this.opening.get(projectId);
    if (!opening) {
      opening = this.openFile(projectId, create).finally(() => this.opening.delete(projectId));
      this.opening.set(projectId, opening);
    }
    return opening;
  }

  private async openFile(projectId: string, create: boolean): Promise<SqliteDb> {
    const file = this.file(projectId);
    if (!create && !existsSync(file)) throw new StoreMissing();
    const db = new SqliteDb(this.openRaw(file, !create), this.statements, { deadline: true, functions: registerSqliteFunctions, reopen: this.reopen(projectId, file), maxResultBytes: this.maxResultBytes });
    try {
      await migrateFile(db, PROJECT_MIGRATIONS);
      // deleted while its schema was checked: a connection kept now would hold the deleted file
      if (this.dropping.has(projectId) || !existsSync(file)) throw new StoreMissing();
    } catch (err) {
      db.close(); // not kept: the next request opens it afresh
      throw err;
    }
    this.projects.add(projectId, db);
    return db;
  }

  /** A project file's main-thread connection: data statements are tried here first (sqlite-hybrid-db.ts), with the deadline and (on demand) the functions of a worker's. */
  private openRaw(file: string, mustExist: boolean): Database.Database {
    let raw: Database.Database;
    try {
      raw = open(file, { extension: this.deadlineLibrary, mustExist, maxBytes: this.opts.projectMaxBytes });
    } catch (err) {
      // its project is gone; a file that is there but cannot be opened (out of descriptors) is not
      throw mustExist && (err as { code?: string }).code === 'SQLITE_CANTOPEN' && !existsSync(file) ? new StoreMissing() : err;
    }
    return raw;
  }

  private reopen(projectId: string, file: string): Reopen {
    return {
      open: () => this.openRaw(file, true),
      reopened: (db) => {
        this.asleep.delete(projectId);
        this.forgetAsleep.unregister(db);
        this.projects.add(projectId, db);
      },
      // files it kept from closing while it was busy close now (the limit holds once it is idle)
      unpinned: () => this.projects.trim(projectId),
    };
  }

  async createProjectStore(projectId: string): Promise<void> {
    await this.openProject(projectId, true);
  }

  project(projectId: string): Promise<Db> {
    return this.openProject(projectId, false);
  }

  /** The main thread's connection: its statements run one at a time, never holding a worker. */
  callers(projectId: string): Promise<Db> {
    return this.openProject(projectId, false);
  }

  /** The platform's connection: its statements run one at a time on the main thread. */
  platformFor(): Db {
    return this.platform;
  }

  async data(projectId: string): Promise<Db> {
    const main = await this.openProject(projectId, false); // exists and is migrated
    return new HybridDb(main, this.workers.db(projectId), this.inline, projectId);
  }

  /** Never: a project file stops growing at PROJECT_MAX_BYTES by itself (max_page_count). */
  storageRoom(): 'free' {
    return 'free';
  }

  grew(): void {}

  storageFreed(): void {}

  growing<T>(_projectId: string, tx: Db, write: (tx: Db) => Promise<T>): Promise<T> {
    return write(tx);
  }

  async dropProjectStore(projectId: string): Promise<void> {
    this.dropping.add(projectId);
    try {
      this.projects.take(projectId)?.close();
      this.asleep.get(projectId)?.deref()?.close(); // what holds it fails as on a missing store
      this.asleep.delete(projectId);
      this.workers.closeProject(projectId);
      const file = this.file(projectId);
      await this.checkpoints.forgetAndWait(file);
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    } finally {
      this.dropping.delete(projectId); // (the file is gone: an open finds it missing)
    }
  }

  async ping(): Promise<boolean> {
    try {
      await this.platform.get('SELECT 1 AS ok');
      return true;
    } catch {
      return false;
    }
  }

  stats(): EngineStats {
    const { gate, threads } = this.workers.stats();
    return { gate, pool: null, sqlite: { openProjects: this.projects.size, maxOpenProjects: this.maxOpen, workerThreads: threads } };
  }

  /** Project files the main thread has open (tests: the limit holds). */
  get openProjects(): number {
    return this.projects.size;
  }

  /** Connections the limit closed that something may still hold (tests: they are forgotten). */
  get asleepProjects(): number {
    return this.asleep.size;
  }

  /** Of those, the ones keeping their page cache (tests). */
  get warmProjects(): number {
    return this.projects.warmCount;
  }

  /** Worker threads started so far (tests: a statement past its deadline must not cost a worker). */
  get workersStarted(): number {
    return this.workers.started;
  }

  /** Of those, started in place of one that failed (tests). */
  get workersReplaced(): number {
    return this.workers.replaced;
  }

  async close(): Promise<void> {
    await this.workers.close();
    for (const conn of this.projects.takeAll()) conn.close();
    for (const held of this.asleep.values()) held.deref()?.close();
    this.asleep.clear();
    this.platform.close();
    // its files are no longer ours to write once it has closed
    await this.checkpoints.forgetAndWait(this.projectDir + sep);
    this.checkpoints.close();
  }
}
