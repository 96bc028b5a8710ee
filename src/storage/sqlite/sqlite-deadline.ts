// The statement deadline of a SQLite connection: the native extension (native/sqlite-deadline.c,
// built by sqlite-build.ts) interrupts a statement that runs past it. Loading it also keeps the
// file's WAL and shared-memory index on disk when the file closes, so that a reopen finds them.
import type Database from 'better-sqlite3';

const ENTRY_POINT = 'sqlite3_sqlitedeadline_init';

// a repeated interrupt can abort the clearing statement itself before its function runs: retried
const CLEAR_ATTEMPTS = 5;

/**
 * Loads the extension into a connection and returns the deadline setter: `set(ms)` bounds every
 * statement run until the next `set` (ms <= 0: no bound); a statement past it fails with
 * SQLITE_INTERRUPT. Clearing (ms <= 0) never throws.
 */
export function installDeadline(db: Database.Database, library: string): (ms: number) => void {
  // (better-sqlite3 takes the entry point as a second argument; its typings omit it)
  (db.loadExtension as (file: string, entryPoint: string) => void)(library, ENTRY_POINT);
  const st = db.prepare('SELECT bp_set_deadline(?)');
  return (ms) => {
    if (ms > 0) return void st.get(ms);
    for (let attempt = 1; ; attempt++) {
      try {
        return void st.get(0);
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_INTERRUPT' || attempt >= CLEAR_ATTEMPTS) throw err;
      }
    }
  };
}
