// How every SQLite connection of the embedded engine is opened, on the main thread and in the
// worker threads alike.
import Database from 'better-sqlite3';
import { statfsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { RELEASE_MEMORY } from './sqlite-deadline.ts';

const WAL_SIZE_LIMIT = 4 * 1024 * 1024;
// (better-sqlite3 takes the entry point as a second argument; its typings omit it)
const EXTENSION_ENTRY_POINT = 'sqlite3_sqlitedeadline_init';

export function projectFile(projectDir: string, projectId: string): string {
  if (!/^[a-z0-9]+$/.test(projectId)) throw new Error('invalid project id');
  return join(projectDir, `${projectId}.db`);
}

export interface OpenOptions {
  /** refuse to create the file (a worker must never resurrect a deleted project) */
  mustExist?: boolean;
  /**
   * How long a statement waits, blocking its thread, for another connection's write lock. The
   * main thread uses 0 and waits asynchronously instead (sqlite-db.ts), so that it never blocks.
   */
  busyTimeoutMs?: number;
  /**
   * The engine's native extension (native/sqlite-deadline.c: the statement deadline, and the
   * connection settings only its C API can make), loaded before anything else runs.
   */
  extension?: string;
  /**
   * KiB of page cache (better-sqlite3 builds SQLite with 16 MB per connection): a thread keeps
   * many connections, and this bounds those in use (sqlite-open-files.ts releases the others'). A
   * change to the file's schema resets it to the default (SQLite reads it again with the schema).
   */
  cacheKiB?: number;
  /**
   * PROJECT_MAX_BYTES: the file grows no further (`max_page_count`, which SQLite keeps per
   * connection, so every connection to the file sets it). A write that needs more fails with
   * SQLITE_FULL; pages freed by deletes are used again first.
   */
  maxBytes?: number;
}

export function openConnection(file: string, opts: OpenOptions = {}): Database.Database {
  const db = new Database(file, { fileMustExist: opts.mustExist ?? false, timeout: Math.trunc(opts.busyTimeoutMs ?? 5000) });
  if (opts.extension) (db.loadExtension as (file: string, entryPoint: string) => void)(opts.extension, EXTENSION_ENTRY_POINT);
  // One call for every setting: opening is on the hot path of a project beyond the open-file limit.
  // A WAL kept on disk (the extension) is trimmed back to the limit at its next restart after a
  // large write grew it (about SQLite's default checkpoint, 1000 pages of 4 KiB).
  const cache = opts.cacheKiB ? `; PRAGMA cache_size = -${Math.trunc(opts.cacheKiB)}` : '';
  db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT}${cache}`);
  if (opts.maxBytes) db.pragma(`max_page_count = ${Math.floor(opts.maxBytes / pragmaNumber(db, 'page_size'))}`);
  return db;
}

const pragmaNumber = (db: Database.Database, name: string) => Number(db.pragma(name, { simple: true }));

/**
 * After SQLITE_FULL on `db`: the file's bound (PROJECT_MAX_BYTES, in bytes) when that is what
 * stopped the write, or null when it was the disk. SQLite reports both alike; the bound is the
 * cause when the disk had room for more than the bound still allowed.
 */
export function boundReached(db: Database.Database): number | null {
  const pageSize = pragmaNumber(db, 'page_size');
  const maxPages = pragmaNumber(db, 'max_page_count');
  const room = (maxPages - pragmaNumber(db, 'page_count')) * pageSize;
  const disk = statfsSync(dirname(db.name));
  return disk.bavail * disk.bsize > room ? maxPages * pageSize : null;
}

/**
 * Gives back what a connection opened with the extension needs only while in use: its page cache
 * and its mapping of the WAL index (native/sqlite-deadline.c), until its next statement. Through
 * its deadline setter, whose statement is prepared already.
 */
export function releaseMemory(db: Database.Database, setDeadline: (ms: number) => void): void {
  try {
    if (db.open) setDeadline(RELEASE_MEMORY);
  } catch {
    // it runs on its own (setImmediate): a release that fails leaves the memory in use, nothing else
  }
}

/**
 * The process's queue of checkpoints (native/sqlite-deadline.c), reached through a connection to
 * no file with the extension loaded.
 */
export class CheckpointQueue {
  private readonly db: Database.Database;
  private readonly forgetStatement: Database.Statement;

  constructor(extension: string) {
    this.db = openConnection(':memory:', { extension });
    this.forgetStatement = this.db.prepare('SELECT bp_checkpoints_forget(?)').pluck();
  }

  /**
   * Drops the checkpoints queued for the files whose path starts with `prefix` (absolute, as
   * SQLite names files: symbolic links resolved); true while one of them is under way.
   */
  forget(prefix: string): boolean {
    return this.forgetStatement.get(prefix) === 1;
  }

  /** forget, then waits for the one under way: before the files are deleted or the engine closes. */
  async forgetAndWait(prefix: string): Promise<void> {
    while (this.forget(prefix)) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  /** Files queued or being checkpointed (tests). */
  pending(): number {
    return this.db.prepare('SELECT bp_checkpoints_pending()').pluck().get() as number;
  }

  close(): void {
    this.db.close();
  }
}
