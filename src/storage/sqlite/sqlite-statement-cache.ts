// Prepared statements of a thread's SQLite connections, kept for as long as their connection is
// open, under one bound for all of them. A thread keeps up to SQLITE_OPEN_PROJECTS connections
// open: a bound per connection would let memory grow with the open files times the statements
// each one caches (a prepared statement holds about 4 to 13 KiB), while one least-recently-used
// order across connections keeps the statements in use, whichever projects use them.
import type Database from 'better-sqlite3';

// Bounds per thread, at most about 100 MiB on the main thread and 25 MiB in each worker: several
// statements for each of a thousand open projects, where a project's requests use a few each.
export const MAIN_THREAD_STATEMENTS = 8192;
export const WORKER_STATEMENTS = 2048;

interface Entry {
  sql: string;
  statement: Database.Statement;
  /** the entries of the statement's connection */
  owner: Map<string, Entry>;
}

export class StatementCache {
  /** least recently used first */
  private readonly used = new Set<Entry>();

  constructor(private readonly limit: number) {}

  /** The statements of one connection, under this cache's bound. */
  connection(db: Database.Database): ConnectionStatements {
    return new ConnectionStatements(db, this);
  }

  /** How many statements are cached (tests). */
  get size(): number {
    return this.used.size;
  }

  touch(entry: Entry): void {
    this.used.delete(entry);
    this.used.add(entry);
  }

  add(entry: Entry): void {
    this.used.add(entry);
    if (this.used.size <= this.limit) return;
    const oldest = this.used.values().next().value!;
    this.used.delete(oldest);
    oldest.owner.delete(oldest.sql);
  }

  remove(entry: Entry): void {
    this.used.delete(entry);
  }
}

export class ConnectionStatements {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: Database.Database,
    private readonly cache: StatementCache,
  ) {}

  prepare(sql: string): Database.Statement {
    const hit = this.entries.get(sql);
    if (hit) {
      this.cache.touch(hit);
      return hit.statement;
    }
    const entry = { sql, statement: this.db.prepare(sql), owner: this.entries };
    this.entries.set(sql, entry);
    this.cache.add(entry);
    return entry.statement;
  }

  /** The connection closes: its statements leave the cache. */
  forget(): void {
    for (const entry of this.entries.values()) this.cache.remove(entry);
    this.entries.clear();
  }
}
