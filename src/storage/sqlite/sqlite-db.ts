// A better-sqlite3 connection of the main thread behind the async Db interface. better-sqlite3 is
// synchronous, so a transaction that awaits would let other requests' statements slip into it: a
// per-connection lock makes every statement outside the open transaction wait until it ends. The
// connection never blocks the event loop on another connection's write lock (its busy timeout is
// 0): it waits for the lock asynchronously (`whenFree`), since worker threads write the same files.
import type Database from 'better-sqlite3';
import type { Db, SqlParam } from '../engine.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, QueryTimeout, StorageFull } from '../engine.ts';
import { projectBusy } from '../fair-gate.ts';
import { AppError } from '../../errors.ts';

const CACHE_LIMIT = 500;
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
  // another connection of the project (a long write in a worker) held the write lock past the wait
  if (isBusy(err)) return projectBusy();
  if (e?.code === 'SQLITE_CONSTRAINT_NOTNULL') {
    const m = /NOT NULL constraint failed: ([^\s,]+)/.exec(e.message ?? '');
    return new NotNullViolation(m ? m[1]!.split('.').pop()! : null);
  }
  // SQLite's VFS reports a write that failed with ENOSPC (database, journal or WAL) as SQLITE_FULL,
  // as it does a file that reached max_page_count.
  if (e?.code === 'SQLITE_FULL') return new StorageFull();
  return err;
}

export class SqliteDb implements Db {
  readonly kind = 'sqlite' as const;
  private statements = new Map<string, Database.Statement>();
  private lockedUntil: Promise<void> | null = null;
  /** statements waiting for another connection's write lock */
  private waiting = 0;
  private readonly inner: Db;

  constructor(readonly raw: Database.Database) {
    const self = this;
    this.inner = {
      kind: 'sqlite',
      t: (n) => quoteIdent(n),
      // inside the transaction the write lock is held: nothing to wait for
      all: async (sql, params = []) => self.inTx(() => self.exec(sql, params, 'all')) as never,
      get: async (sql, params = []) => self.inTx(() => self.exec(sql, params, 'get')) as never,
      run: async (sql, params = []) => self.inTx(() => self.exec(sql, params, 'run')) as never,
      runBestEffort: async (sql, params = []) => self.inTx(() => void self.exec(sql, params, 'run')),
      tx: (fn) => fn(self.inner),
    };
  }

  t(name: string): string {
    return quoteIdent(name);
  }

  private inTx<T>(op: () => T): T {
    try {
      return op();
    } catch (err) {
      throw translateSqliteError(err);
    }
  }

  private prepare(sql: string): Database.Statement {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.raw.prepare(sql);
      if (this.statements.size >= CACHE_LIMIT) this.statements.clear();
      this.statements.set(sql, st);
    }
    return st;
  }

  private exec(sql: string, params: readonly SqlParam[], mode: 'all' | 'get' | 'run'): unknown {
    const st = this.prepare(sql);
    const args = toSqlite(params);
    if (mode === 'run') {
      if (st.reader) return { changes: st.all(...args).length };
      return { changes: st.run(...args).changes };
    }
    if (!st.reader) {
      st.run(...args);
      return mode === 'all' ? [] : undefined;
    }
    return mode === 'all' ? st.all(...args) : st.get(...args);
  }

  /** Runs `op`, retrying later while another connection holds the write lock (never blocking). */
  private async whenFree<T>(op: () => T): Promise<T> {
    for (let waited = 0, pause = 1; ; waited += pause, pause = Math.min(pause * 2, 50)) {
      try {
        return op();
      } catch (err) {
        if (!isBusy(err) || waited >= BUSY_WAIT_MS) throw translateSqliteError(err);
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
    }
  }

  private async idle(): Promise<void> {
    while (this.lockedUntil) await this.lockedUntil;
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    if (this.lockedUntil) await this.idle();
    return this.whenFree(() => this.exec(sql, params, 'all') as T[]);
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    if (this.lockedUntil) await this.idle();
    return this.whenFree(() => this.exec(sql, params, 'get') as T | undefined);
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<{ changes: number }> {
    if (this.lockedUntil) await this.idle();
    return this.whenFree(() => this.exec(sql, params, 'run') as { changes: number });
  }

  async runBestEffort(sql: string, params: readonly SqlParam[] = []): Promise<void> {
    if (this.lockedUntil) await this.idle();
    try {
      this.exec(sql, params, 'run');
    } catch (err) {
      const e = translateSqliteError(err);
      if (!(e instanceof StorageFull) && !(e instanceof AppError && e.code === 'project_busy')) throw e;
    }
  }

  async tx<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    await this.begin();
    let release!: () => void;
    this.lockedUntil = new Promise<void>((r) => (release = r));
    try {
      try {
        const result = await fn(this.inner);
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
    }
  }

  /**
   * Takes the write lock. While another connection holds it, this connection's other statements
   * (reads need no lock in WAL mode) keep running: the transaction claims the connection only once
   * BEGIN IMMEDIATE has succeeded, synchronously with it.
   */
  private async begin(): Promise<void> {
    for (let waited = 0, pause = 1; ; waited += pause, pause = Math.min(pause * 2, 50)) {
      await this.idle();
      try {
        this.raw.exec('BEGIN IMMEDIATE');
        return;
      } catch (err) {
        if (!isBusy(err) || waited >= BUSY_WAIT_MS) throw translateSqliteError(err);
      }
      await this.pause(pause);
    }
  }

  /** True while a transaction is open or a statement waits for the write lock (both span awaits). */
  get busy(): boolean {
    return this.lockedUntil !== null || this.waiting > 0;
  }
}
