// The statement deadline of a SQLite connection: the native extension (native/sqlite-deadline.c,
// built by sqlite-build.ts) interrupts a statement that runs past it.
import type Database from 'better-sqlite3';

const ENTRY_POINT = 'sqlite3_sqlitedeadline_init';

/**
 * Loads the extension into a connection and returns the deadline setter: `set(ms)` bounds every
 * statement run until the next `set` (ms <= 0: no bound); a statement past it fails with SQLITE_INTERRUPT.
 */
export function installDeadline(db: Database.Database, library: string): (ms: number) => void {
  // (better-sqlite3 takes the entry point as a second argument; its typings omit it)
  (db.loadExtension as (file: string, entryPoint: string) => void)(library, ENTRY_POINT);
  const st = db.prepare('SELECT bp_set_deadline(?)');
  return (ms) => void st.get(ms);
}
