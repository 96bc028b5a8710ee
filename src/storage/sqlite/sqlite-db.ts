// A better-sqlite3 connection of the main thread behind the async Db interface. better-sqlite3 is
// synchronous, so a transaction that awaits would let other requests' statements slip into it: a
// per-connection lock makes every statement outside the open transaction wait until it ends. The
// connection never blocks the event loop on another connection's write lock (its busy timeout is
// 0): it waits for the lock asynchronously (`whenFree`), since worker threads write the same files.
import type Database from 'better-sqlite3';
import type { Db, RowFailure, RowTally, SqlParam } from '../engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, QueryTimeout, StorageFull, StoreMissing, SchemaMismatch, ROW_FAILURES } from '../engine.ts';
import { projectBusy } from '../fair-gate.ts';
import { AppError } from '../../errors.ts';
import { execute, tallyRows, type Mode } from './sqlite-rows.ts';
import { RESULT_TOO_LARGE, resultTooLarge } from '../result-budget.ts';
import { ASSERTION_CODE } from './sqlite-functions.ts';
import { boundReached } from './sqlite-connection.ts';
import { BOUND_REACHED } from './sqlite-worker-protocol.ts';
import { CALL_BOUND_FAILURES } from '../../policy-language/call-bounds.ts';
import type { ConnectionStatements, StatementCache } from './sqlite-statement-cache.ts';
import { deadlineSetter } from './sqlite-deadline.ts';
import { releaseMemory } from './sqlite-connection.ts';

/** SQLITE_MAX_VARIABLE_NUMBER of better-sqlite3's SQLite (SQLite's default since 3.32) */
const SQLITE_MAX_PARAMS = 32766;

/** how long a main-thread statement waits for another connection's write lock, asynchronously */
const BUSY_WAIT_MS = 5000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function toSqlite(params: readonly SqlParam[]): unknown[] {
  return params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));
}

const isBusy = (err: unknown) => String((err as { code?: unknown })?.code ?? '').startsWith('SQLITE_BUSY');

export function translateSqliteError(err: unknown): unknown {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    const m = /UNIQUE constraint failed: ([^\s,]+)/.exec(e.message ?? '');
    return new UniqueViolation(m ? m[1]!.split('.').pop()! : null);
  }
  if (e?.code === 'SQLITE_INTERRUPT') return new QueryTimeout(); // the statement deadline (sqlite-deadline.ts)
  // from a worker thread, where the rows were read (an AppError does not cross threads)
  if (e?.code === RESULT_TOO_LARGE) return resultTooLarge();
  // a function call past its bound (policy-language/call-bounds.ts), from either thread
  if (e?.code !== undefined && Object.hasOwn(CALL_BOUND_FAILURES, e.code)) return CALL_BOUND_FAILURES[e.code]!();
  // a write's own check failed (Dialect.assertTrue); the statement left nothing
  if (e?.code === ASSERTION_CODE && ROW_FAILURES.has(e.message ?? '')) return new AppError(e.message as RowFailure);
  // more parameters than SQLITE_MAX_VARIABLE_NUMBER (the table's policies are bound at each use)
  if (e?.code === 'SQLITE_ERROR' && e.message === 'too many SQL variables') return new AppError('query_too_complex.bound_values', { limit: SQLITE_MAX_PARAMS });
  // another connection of the project (a long write in a worker) held the write lock past the wait
  if (isBusy(err)) return projectBusy();
  // a column gone since the statement was built (SchemaMismatch; SQLite's types do not bind)
  if (e?.code === 'SQLITE_ERROR' && /^(no such column|table \S+ has no column named)\b/.test(e.message ?? '')) return new SchemaMismatch(err);
  if (e?.code === 'SQLITE_CONSTRAINT_NOTNULL') {
    const m = /NOT NULL constraint failed: ([^\s,]+)/.exec(e.message ?? '');
    return new NotNullViolation(m ? m[1]!.split('.').pop()! : null);
  }
  // SQLite's VFS reports a write that failed with ENOSPC (database, journal or WAL) as SQLITE_FULL,
  // as it does a file that reached max_page_count.
  if (e?.code === 'SQLITE_FULL') return new StorageFull();
  // from a worker thread, which told the file's bound from a full disk (sqlite-worker.ts)
  if (e?.code === BOUND_REACHED) return new StorageFull(Number(e.message));
  return err;
}

/**
 * A bound on data statements run on the main thread (sqlite-hybrid-db.ts): how long the next
 * statement may run, and what the statements took. An attempt out of time throws InlineExceeded,
 * and a statement past its allowance is interrupted (QueryTimeout): either way the caller gives
 * the work to a worker thread instead.
 */
export interface InlineProbe {
  /** ms the next statement may run (<= 0: none) */
  allowance(): number;
  spent(ms: number): void;
}

export class InlineExceeded extends Error {
  constructor() {
    super('the inline attempt is out of time');
  }
}


/**
 * A connection's view of its file (Db.stamp): data_version changes when another connection (of
 * this process or another) has committed since this one last read, total_changes() with each row
 * this connection writes, schema_version with a change of the schema; the connection's serial
 * number tells a reopened file's connection from the one before. Three prepared statements, not
 * one over the pragmas' table-valued functions: each of those prepares its PRAGMA again at every
 * run (about 8 us of CPU a read, 1,000 projects read at random).
 */
const STAMP_SQL = ['PRAGMA data_version', 'SELECT total_changes()', 'PRAGMA schema_version'];
let connections = 0;

/**
 * How a project file's connection is opened again after the open-file limit closed it
 * (sqlite-open-files.ts) while a request still held it: in place, so that what holds it goes on
 * (a sign-up across its password hash, a read whose statement ran in a worker) and the file never
 * has two main-thread connections.
 */
export interface Reopen {
  /** the file's connection, opened as the first time (its functions registered) */
  open(): Database.Database;
  /** told once it is open again: it counts against the open-file limit again */
  reopened(db: SqliteDb): void;
  /** told when its transaction, or its wait for the write lock, ends: the limit could not close it meanwhile */
  unpinned(): void;
}

export interface SqliteDbOptions {
  /** the connection has the engine's extension: its statements can be bounded (probing) */
  deadline?: boolean;
  /** a project file's connection, which the open-file limit may close (sleep) and this opens again */
  reopen?: Reopen;
  /** registers the engine's SQL functions on the connection, when a statement first needs one */
  functions?: (db: Database.Database) => void;
  /** MAX_RESULT_BYTES: the most a statement's rows may hold (a project file's connection) */
  maxResultBytes?: number;
}

export class SqliteDb implements Db {
  readonly kind = 'sqlite' as const;
  private serial = ++connections;
  private statements: ConnectionStatements;
  /** the connection's statement deadline (sqlite-deadline.ts), needed to probe */
  private setDeadline: ((ms: number) => void) | null;
  /** asleep: closed for the open-file limit (opened again by the next statement); closed: for good */
  private state: 'open' | 'asleep' | 'closed' = 'open';
  /**
   * Set while a transaction holds the connection: every statement from outside it waits, then
   * checks again in the very step it runs in (`while (...) await`), since another waiter's
   * transaction may have begun in between.
   */
  private lockedUntil: Promise<void> | null = null;
  /** statements waiting for another connection's write lock */
  private waiting = 0;

  /** `cache`: the thread's statement cache, where the connection keeps its prepared statements */
  constructor(
    private conn: Database.Database,
    private readonly cache: StatementCache,
    private readonly opts: SqliteDbOptions = {},
  ) {
    this.statements = cache.connection(conn, opts.functions);
    this.setDeadline = opts.deadline ? deadlineSetter(conn) : null;
  }

  /** Gives back the page cache and WAL index mapping of a project file's connection (sqlite-open-files.ts). */
  releaseMemory(): void {
    if (this.setDeadline) releaseMemory(this.conn, this.setDeadline);
  }

  /** The connection now (another one after a reopen). */
  get raw(): Database.Database {
    return this.conn;
  }

  /**
   * Closes the connection for good; its statements leave the cache, and a project's connection
   * then fails its statements as a deleted project's do. Closing does not checkpoint (the
   * engine's extension turns SQLite's checkpoint-on-close off): the WAL is part of the database,
   * SQLite moves it into the file as it grows, and a shutdown with a thousand files open would
   * otherwise write and sync each of them (over 5 s, measured) before the process may exit.
   */
  close(): void {
    this.shut();
    this.state = 'closed';
  }

  /** Closes the connection for the open-file limit: its next statement opens it again (opts.reopen). */
  sleep(): void {
    if (!this.opts.reopen) throw new Error('internal: only a project file sleeps');
    this.shut();
    this.state = 'asleep';
  }

  /** Opens the connection again if the open-file limit closed it (sleep). */
  wake(): void {
    if (this.state === 'asleep') return this.reopen(this.opts.reopen!);
    // closed for good (its project deleted, or the engine closed): as a deleted project's
    if (this.state === 'closed' && this.opts.reopen) throw new StoreMissing();
  }

  private reopen(how: Reopen): void {
    const conn = how.open();
    this.conn = conn;
    this.statements = this.cache.connection(conn, this.opts.functions);
    this.setDeadline = this.opts.deadline ? deadlineSetter(conn) : null;
    this.serial = ++connections; // a stamp of the last connection never matches this one's
    this.state = 'open';
    how.reopened(this);
  }

  private shut(): void {
    this.statements.forget();
    if (this.conn.open) this.conn.close();
  }

  t(name: string): string {
    return quoteIdent(name);
  }

  all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return this.statement(sql, params, 'all', null) as Promise<T[]>;
  }

  get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return this.statement(sql, params, 'get', null) as Promise<T | undefined>;
  }

  run(sql: string, params: readonly SqlParam[] = []): Promise<{ changes: number }> {
    return this.statement(sql, params, 'run', null) as Promise<{ changes: number }>;
  }

  stamp(): string | null {
    if (this.lockedUntil) return null;
    this.wake();
    try {
      let stamp = String(this.serial);
      for (const sql of STAMP_SQL) stamp += ` ${this.prepare(sql).pluck().get() as number}`;
      return stamp;
    } catch (err) {
      if (isBusy(err)) return null;
      throw this.translate(err);
    }
  }

  /** A read run once, its statement not kept (a header field read at open: kept, it would stay for as long as the file). */
  getOnce<T>(sql: string): Promise<T | undefined> {
    return this.whenFree(() => this.raw.prepare(sql).get() as T | undefined);
  }

  async runBestEffort(sql: string, params: readonly SqlParam[] = []): Promise<void> {
    while (this.lockedUntil) await this.lockedUntil;
    this.wake();
    try {
      this.exec(sql, params, 'run', null);
    } catch (err) {
      const e = this.translate(err);
      if (!(e instanceof StorageFull) && !(e instanceof AppError && e.code === 'project_busy')) throw e;
    }
  }

  tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.transaction(fn, null);
  }

  /** This connection with every statement (in transactions too) bounded by `probe`. */
  probing(probe: InlineProbe): Db {
    if (!this.setDeadline) throw new Error('internal: probing needs the deadline extension');
    return {
      kind: 'sqlite',
      t: (n) => quoteIdent(n),
      all: (sql, params = []) => this.statement(sql, params, 'all', probe) as never,
      get: (sql, params = []) => this.statement(sql, params, 'get', probe) as never,
      run: (sql, params = []) => this.statement(sql, params, 'run', probe) as never,
      runBestEffort: (sql, params = []) => this.statement(sql, params, 'run', probe).then(() => undefined),
      tx: (fn) => this.transaction(fn, probe),
      // outside a transaction: it waits for one of this connection's, as every statement does
      tally: (sql, params, keep) => this.whenFree(() => this.tallyNow(sql, params, keep, probe)),
    };
  }

  private statement(sql: string, params: readonly SqlParam[], mode: Mode, probe: InlineProbe | null): Promise<unknown> {
    return this.whenFree(() => this.exec(sql, params, mode, probe));
  }

  /** A transaction's statements: the write lock is held, nothing to wait for. */
  private inside(probe: InlineProbe | null): Db {
    const run = (sql: string, params: readonly SqlParam[], mode: Mode) => this.inTx(() => this.exec(sql, params, mode, probe));
    return {
      kind: 'sqlite',
      t: (n) => quoteIdent(n),
      all: async (sql, params = []) => run(sql, params, 'all') as never,
      get: async (sql, params = []) => run(sql, params, 'get') as never,
      run: async (sql, params = []) => run(sql, params, 'run') as never,
      runBestEffort: async (sql, params = []) => void run(sql, params, 'run'),
      tx: (fn) => fn(this.inside(probe)),
      ...(probe && { tally: async (sql, params, keep) => this.inTx(() => this.tallyNow(sql, params, keep, probe)) }),
    };
  }

  /** Db.tally within the probe's allowance: the rows are read, and counted, under the deadline. */
  private tallyNow(sql: string, params: readonly SqlParam[], keep: number, probe: InlineProbe): RowTally {
    return this.bounded(probe, () => tallyRows(this.prepare(sql).iterate(...toSqlite(params)) as Iterable<Row>, keep, this.maxResultBytes));
  }

  /** MAX_RESULT_BYTES on a project file's statements (result-budget.ts); the platform's are not bounded */
  /** translateSqliteError, and a full file told from a full disk (PROJECT_MAX_BYTES) */
  private translate(err: unknown): unknown {
    const e = translateSqliteError(err);
    if (!(e instanceof StorageFull) || !this.raw.open) return e;
    const limit = boundReached(this.raw);
    return limit === null ? e : new StorageFull(limit);
  }

  private get maxResultBytes(): number {
    return this.opts.maxResultBytes ?? Number.POSITIVE_INFINITY;
  }

  private inTx<T>(op: () => T): T {
    // its project deleted (or the engine closed) while the transaction awaited
    if (this.state === 'closed' && this.opts.reopen) throw new StoreMissing();
    try {
      return op();
    } catch (err) {
      throw this.translate(err);
    }
  }

  private prepare(sql: string): Database.Statement {
    return this.statements.prepare(sql);
  }

  private exec(sql: string, params: readonly SqlParam[], mode: Mode, probe: InlineProbe | null): unknown {
    const st = this.prepare(sql);
    const args = toSqlite(params);
    const max = this.maxResultBytes;
    return probe ? this.bounded(probe, () => execute(st, args, mode, max)) : execute(st, args, mode, max);
  }

  /** Runs `op` (one statement, read to its end) within the probe's allowance. */
  private bounded<T>(probe: InlineProbe, op: () => T): T {
    const ms = probe.allowance();
    if (ms <= 0) throw new InlineExceeded();
    this.setDeadline!(ms);
    const t0 = performance.now();
    try {
      return op();
    } finally {
      this.setDeadline!(0);
      probe.spent(performance.now() - t0);
    }
  }

  /**
   * Runs `op` (a statement from outside any transaction) once no transaction of this connection
   * is open, in the step of that check (with none open, at once: the caller's own step), retrying
   * later while another connection holds the write lock (never blocking).
   */
  private async whenFree<T>(op: () => T): Promise<T> {
    for (let waited = 0, pause = 1; ; waited += pause, pause = Math.min(pause * 2, 50)) {
      while (this.lockedUntil) await this.lockedUntil;
      this.wake();
      try {
        return op();
      } catch (err) {
        if (!isBusy(err) || waited >= BUSY_WAIT_MS) throw this.translate(err);
      }
      await this.pause(pause);
    }
  }

  /** A wait for the write lock; the connection counts as busy meanwhile (the LRU must not close it). */
  private async pause(ms: number): Promise<void> {
    this.waiting++;
    try {
      await sleep(ms);
    } finally {
      this.waiting--;
      if (!this.busy) this.opts.reopen?.unpinned();
    }
  }

  private async transaction<T>(fn: (db: Db) => Promise<T>, probe: InlineProbe | null): Promise<T> {
    const release = await this.begin();
    try {
      try {
        const result = await fn(this.inside(probe));
        // in WAL mode a full disk shows at COMMIT: translated like any statement's failure
        this.inTx(() => this.raw.exec('COMMIT'));
        return result;
      } catch (err) {
        if (this.raw.inTransaction) this.raw.exec('ROLLBACK');
        throw err;
      }
    } finally {
      this.lockedUntil = null;
      release();
      if (!this.busy) this.opts.reopen?.unpinned();
    }
  }

  /**
   * Takes the write lock, and claims the connection (`lockedUntil`, released by the function
   * returned). While another connection holds the lock, this connection's other statements (reads
   * need no lock in WAL mode) keep running: the connection is claimed only once BEGIN IMMEDIATE
   * has succeeded, synchronously with it. Claimed a step later (after an await), a statement
   * whose wait ended meanwhile ran inside this transaction, and a rollback undid its write after
   * it had been answered.
   */
  private async begin(): Promise<() => void> {
    for (let waited = 0, pause = 1; ; waited += pause, pause = Math.min(pause * 2, 50)) {
      while (this.lockedUntil) await this.lockedUntil;
      this.wake();
      try {
        this.raw.exec('BEGIN IMMEDIATE');
        let release!: () => void;
        this.lockedUntil = new Promise<void>((r) => (release = r));
        return release;
      } catch (err) {
        if (!isBusy(err) || waited >= BUSY_WAIT_MS) throw this.translate(err);
      }
      await this.pause(pause);
    }
  }

  /** True while a transaction is open or a statement waits for the write lock (both span awaits). */
  get busy(): boolean {
    return this.lockedUntil !== null || this.waiting > 0;
  }
}

type Row = Record<string, unknown>;
