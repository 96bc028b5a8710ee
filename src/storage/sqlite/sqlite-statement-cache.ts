// Prepared statements of a thread's SQLite connections, kept for as long as their connection is
// open, under one bound for all of them. A thread keeps many connections open: a bound per
// connection would let memory grow with the open files times the statements each one caches (a
// prepared statement holds about 2 to 9 KiB), while one least-recently-used order across
// connections keeps the statements in use, whichever projects use them, and lets go first of those
// a project runs once (its tables and policies, read again only when they change).
import type Database from 'better-sqlite3';

/**
 * Statements kept per open file: the two or three a project's requests run (credentials, data),
 * with room for those it runs once per schema version (its tables and policies), which age out
 * first. A bound below the statements in use would have the requests prepare them over and over.
 */
export const STATEMENTS_PER_FILE = 8;
/** the least bound: the platform's own statements, and a thread with few files */
const MIN_STATEMENTS = 512;

/**
 * The bound of a thread that keeps `openFiles` project files open: 8,192 statements for the main
 * thread's default 1,024 files (most hold 2 to 5 KiB), 512 for a worker's 64. An evicted
 * statement's memory goes when the garbage collector takes its object.
 */
export function statementBound(openFiles: number): number {
  return Math.max(MIN_STATEMENTS, STATEMENTS_PER_FILE * openFiles);
}

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
