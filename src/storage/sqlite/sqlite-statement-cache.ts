// Prepared statements of a thread's SQLite connections, kept for as long as their connection is
// open, under one bound for all of them. A thread keeps many connections open: a bound per
// connection would let memory grow with the open files times the statements each one caches (a
// prepared statement holds about 2 to 9 KiB), while one order across connections keeps the
// statements in use, whichever projects use them.
// Two segments: a statement enters on probation, a small segment of its own, and is kept for good
// (least recently used first out) only once it runs again. Most of a project's statements run once
// per schema version or per session (its tables, its policies, the credentials' look-up before the
// guard takes over), so they leave from probation and never crowd out the statements in use (a
// statement that runs twice is kept, whoever sends it: the bound, not the segments, is what holds
// against a project sending ever new ones).
// Measured after one read of each of 1,000 projects: 5 of each project's 6 statements had run
// once, about 11 MiB of the 1,000 files' memory. A statement that left probation unused and is
// prepared again was in use after all, only spread thin (a thousand projects read at random come
// back to one after probation has turned over): its connection remembers it (a hash, a few per
// connection), and it is kept at once.
// A statement's memory is SQLite's, outside V8's heap, and goes only when the garbage collector
// takes its small object; one evicted after a while in the cache is in V8's old generation, which
// V8 collects when that generation has grown, not when SQLite's memory has. A project that sends
// ever new query shapes turns the cache over: measured at the driver, 300,000 statements through a
// bound of 8,192 left 276 MiB resident and growing, 99 MiB with a full collection after each
// 4,096 evictions (about 15 ms each); in the service, whose requests make V8 collect anyway, 40,000
// reads of distinct shapes left 136 MiB, 121 with it. So a bound's worth of evictions (8,192 on the
// main thread) schedules a full collection: a project sending ever new shapes gets one for every
// 8,192 statements it has the thread prepare (a pause of some 25-45 ms for everyone, against
// several seconds of its own statements).
import type Database from 'better-sqlite3';
import { fullCollection } from '../../lib/idle-collection.ts';

/**
 * Statements kept per open file: room for the few each project's requests run again and again, in
 * every project a thread keeps open. A bound below the statements in use would have the requests
 * prepare them over and over.
 */
export const STATEMENTS_PER_FILE = 8;
/** the least bound: the platform's own statements, and a thread with few files */
const MIN_STATEMENTS = 512;

/** the share of the bound for statements that ran once */
const PROBATION_SHARE = 1 / 8;
/** statements a connection remembers having let go from probation */
const REMEMBERED_PER_CONNECTION = 16;

/**
 * The bound of a thread that keeps `openFiles` project files open: 8,192 statements for the main
 * thread's default 1,024 files (most hold 2 to 5 KiB), of which 1,024 on probation; 512 for a
 * worker's 64. An evicted statement's memory goes when the garbage collector takes its object.
 */
export function statementBound(openFiles: number): number {
  return Math.max(MIN_STATEMENTS, STATEMENTS_PER_FILE * openFiles);
}

interface Entry {
  sql: string;
  statement: Database.Statement;
  /** the statement's connection */
  owner: ConnectionStatements;
  /** ran more than once: kept in the main segment */
  kept: boolean;
}

export class StatementCache {
  /** least recently used first, in each segment */
  private readonly probation = new Set<Entry>();
  private readonly main = new Set<Entry>();
  private readonly probationLimit: number;
  private readonly mainLimit: number;
  private evicted = 0;
  private collecting = false;

  /** `collect`: a full garbage collection of this thread's heap (tests count them) */
  constructor(
    private readonly limit: number,
    private readonly collect: () => void = fullCollection,
  ) {
    if (limit < 1) throw new Error('internal: a statement cache holds at least one statement');
    this.probationLimit = Math.max(1, Math.floor(limit * PROBATION_SHARE));
    this.mainLimit = Math.max(0, limit - this.probationLimit);
  }

  /**
   * The statements of one connection, under this cache's bound. `functions` registers the
   * engine's SQL functions on it, the first time a statement names one it lacks.
   */
  connection(db: Database.Database, functions?: (db: Database.Database) => void): ConnectionStatements {
    return new ConnectionStatements(db, this, functions ?? null);
  }

  /** How many statements are cached (tests). */
  get size(): number {
    return this.probation.size + this.main.size;
  }

  /** A hit: a statement on probation is now kept; the main segment's least recently used goes back on probation. */
  touch(entry: Entry): void {
    if (entry.kept) {
      this.main.delete(entry);
      this.main.add(entry);
      return;
    }
    this.probation.delete(entry);
    this.keep(entry);
  }

  /** A statement just prepared: on probation, or kept at once when it is one its connection let go. */
  add(entry: Entry, letGoBefore: boolean): void {
    if (letGoBefore) this.keep(entry);
    else this.enter(entry);
  }

  /** Into the main segment; its least recently used goes back on probation beyond its share. */
  private keep(entry: Entry): void {
    entry.kept = true;
    this.main.add(entry);
    if (this.main.size <= this.mainLimit) return;
    const oldest = this.main.values().next().value!;
    this.main.delete(oldest);
    oldest.kept = false;
    this.enter(oldest);
  }

  remove(entry: Entry): void {
    (entry.kept ? this.main : this.probation).delete(entry);
  }

  private enter(entry: Entry): void {
    this.probation.add(entry);
    if (this.probation.size <= this.probationLimit) return;
    const oldest = this.probation.values().next().value!;
    this.probation.delete(oldest);
    oldest.owner.letGo(oldest.sql);
    if (++this.evicted >= this.limit && !this.collecting) {
      this.collecting = true;
      // after the work under way: not on the path of the request that prepared the statement
      setImmediate(() => {
        this.evicted = 0;
        this.collecting = false;
        this.collect();
      });
    }
  }
}

export class ConnectionStatements {
  private readonly entries = new Map<string, Entry>();
  /** hashes of the statements let go from probation, oldest first */
  private readonly letGoes = new Set<number>();

  constructor(
    private readonly db: Database.Database,
    private readonly cache: StatementCache,
    private functions: ((db: Database.Database) => void) | null,
  ) {}

  prepare(sql: string): Database.Statement {
    const hit = this.entries.get(sql);
    if (hit) {
      this.cache.touch(hit);
      return hit.statement;
    }
    const entry = { sql, statement: this.prepareNew(sql), owner: this, kept: false };
    this.entries.set(sql, entry);
    this.cache.add(entry, this.letGoes.delete(hash(sql)));
    return entry.statement;
  }

  // Most connections never run a statement that calls one of the engine's functions (a read whose
  // policies and filters compare columns, as most do): registered on demand, they cost such a
  // connection nothing (registered at open: about 7 KiB each, 7 MiB for a thousand open files)
  private prepareNew(sql: string): Database.Statement {
    try {
      return this.db.prepare(sql);
    } catch (err) {
      if (!this.functions || !missingFunction(err)) throw err;
      this.functions(this.db);
      this.functions = null;
      return this.db.prepare(sql);
    }
  }

  /** Probation let the statement go. */
  letGo(sql: string): void {
    this.entries.delete(sql);
    this.letGoes.add(hash(sql));
    if (this.letGoes.size > REMEMBERED_PER_CONNECTION) this.letGoes.delete(this.letGoes.values().next().value!);
  }

  /** The connection closes: its statements leave the cache. */
  forget(): void {
    for (const entry of this.entries.values()) this.cache.remove(entry);
    this.entries.clear();
    this.letGoes.clear();
  }
}

/** SQLite's error for a statement naming a function the connection does not have (yet). */
const missingFunction = (err: unknown): boolean => /^no such function: /.test((err as { message?: string }).message ?? '');

/** FNV-1a over the text's UTF-16 units: a hash collision only keeps a statement sooner. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
