// How every SQLite connection of the embedded engine is opened, on the main thread and in the
// worker threads alike.
import Database from 'better-sqlite3';
import { join } from 'node:path';

const WAL_SIZE_LIMIT = 4 * 1024 * 1024;

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
}

export function openConnection(file: string, opts: OpenOptions = {}): Database.Database {
  const db = new Database(file, { fileMustExist: opts.mustExist ?? false });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${Math.trunc(opts.busyTimeoutMs ?? 5000)}`);
  // a WAL kept on disk (sqlite-deadline.c) is truncated to 0 bytes when the last connection closes
  // only under a limit; a WAL that a large write grew beyond the limit is trimmed back at its next
  // restart (about SQLite's default checkpoint, 1000 pages of 4 KiB)
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
  return db;
}
