// The embedded engine's files as `baseplate backup` and `restore` (src/cli/) copy and check them.
// A live server keeps its files open in WAL mode and writes at any time; a copy is taken through
// SQLite's online backup API from a read-only connection of this process, so it is one consistent
// state of its file (every transaction committed by then, none half) and the server never waits.
import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync } from 'node:fs';

// better-sqlite3 copies the first step's 100 pages, then as many as the progress callback asks for:
// everything else at once, inside the one read transaction of a single step. A write by the server
// between the two steps makes SQLite start the copy over within that second step, so the copy never
// mixes two states.
const ALL_PAGES = 0x7fffffff;

function openReadOnly(file: string): Database.Database {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  // a reader may wait for a moment while the server recovers or restarts its WAL
  db.pragma('busy_timeout = 5000');
  return db;
}

/**
 * Copies the database `source` (possibly open and written by another process) into `dest`, a new
 * file (mode 0600), as one consistent snapshot. The copy is a plain rollback-journal file: one file, nothing
 * beside it, its bytes fixed once this resolves (the manifest's checksum is taken of them).
 */
export async function snapshotFile(source: string, dest: string): Promise<void> {
  const db = openReadOnly(source);
  try {
    // created empty first, readable by the owner alone (a copy holds password hashes and tokens)
    closeSync(openSync(dest, 'wx', 0o600));
    const copied = await db.backup(dest, { progress: () => ALL_PAGES });
    // a source still locked after the busy timeout ends the copy before its first page, reported
    // as a finished copy of nothing
    if (copied.totalPages === 0 || copied.remainingPages !== 0) throw new Error('the database stayed locked by another connection; nothing was copied');
  } finally {
    db.close();
  }
  const copy = new Database(dest, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = DELETE');
  } finally {
    copy.close();
  }
}

/** `PRAGMA integrity_check` of a file that no one else uses: [] when sound, else what SQLite found. */
export function integrityProblems(file: string): string[] {
  if (!existsSync(file)) return ['the file is missing'];
  let db: Database.Database | undefined;
  try {
    db = openReadOnly(file);
    const rows = db.pragma('integrity_check') as { integrity_check: string }[];
    const found = rows.map((r) => r.integrity_check);
    return found.length === 1 && found[0] === 'ok' ? [] : found;
  } catch (err) {
    // a damaged header or schema fails before the check can run ("file is not a database", ...)
    return [err instanceof Error ? err.message : String(err)];
  } finally {
    db?.close();
  }
}

/**
 * Whether another connection has the database open (a running server keeps its platform file open
 * while it runs). In WAL mode every open connection holds a shared lock on the file, so an exclusive
 * lock is granted only to a sole user; a file that is no database at all is no server's.
 */
export function openElsewhere(file: string): boolean {
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { fileMustExist: true, timeout: 0 });
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return false;
  } catch (err) {
    return String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY');
  } finally {
    db?.close();
  }
}

/** The ids of the projects a platform file lists. */
export function projectIds(platformFile: string): string[] {
  const db = openReadOnly(platformFile);
  try {
    return (db.prepare('SELECT id FROM "projects" ORDER BY id').all() as { id: string }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

/** Whether the platform file lists the project (read live, beside a running server). */
export function listsProject(platformFile: string, projectId: string): boolean {
  const db = openReadOnly(platformFile);
  try {
    return db.prepare('SELECT 1 FROM "projects" WHERE id = ?').get(projectId) !== undefined;
  } finally {
    db.close();
  }
}

/** Removes projects from a platform file (a backup's copy, before its checksum is taken). */
export function forgetProjects(platformFile: string, ids: string[]): void {
  const db = new Database(platformFile, { fileMustExist: true });
  try {
    const remove = db.prepare('DELETE FROM "projects" WHERE id = ?');
    db.transaction(() => ids.forEach((id) => remove.run(id)))();
  } finally {
    db.close();
  }
}
