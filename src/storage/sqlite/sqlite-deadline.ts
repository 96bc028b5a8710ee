// The statement deadline of a SQLite connection: the native extension (native/sqlite-deadline.c,
// built by sqlite-build.ts, loaded when the connection opens: sqlite-connection.ts) interrupts a
// statement that runs past it.
import type Database from 'better-sqlite3';

// a repeated interrupt can abort the clearing statement itself before its function runs: retried
const CLEAR_ATTEMPTS = 5;

/** `set(RELEASE_MEMORY)`: no bound, and the connection gives back what it needs only while in use (sqlite-open-files.ts) */
export const RELEASE_MEMORY = -1;

/**
 * The deadline of the statement this thread runs (performance.now(); 0: none), for the engine's
 * own SQL functions. SQLite notices an interrupt between rows, never between the calls of one
 * row's expression, so a row whose policies call a costly function a hundred times held the main
 * thread for seconds (a hostile review): each call looks here first (pastDeadline). One statement
 * runs at a time on a thread, and every statement sets its own deadline or clears it.
 */
let deadlineAt = 0;

export const pastDeadline = (): boolean => deadlineAt !== 0 && performance.now() > deadlineAt;

/**
 * The deadline setter of a connection opened with the extension: `set(ms)` bounds every statement
 * run until the next `set` (ms <= 0: no bound; RELEASE_MEMORY: none, and the page cache and WAL
 * index mapping released); a statement past it fails with SQLITE_INTERRUPT. Clearing (ms <= 0)
 * never throws.
 */
export function deadlineSetter(db: Database.Database): (ms: number) => void {
  const st = db.prepare('SELECT bp_set_deadline(?)');
  return (ms) => {
    deadlineAt = ms > 0 ? performance.now() + ms : 0;
    // whole milliseconds, at least one: a fraction bound as such (a double) is cut to 0 in C,
    // which would clear the deadline instead (an inline attempt's last fraction of a millisecond)
    if (ms > 0) return void st.get(Math.max(1, Math.ceil(ms)));
    const clear = ms === RELEASE_MEMORY ? RELEASE_MEMORY : 0;
    for (let attempt = 1; ; attempt++) {
      try {
        return void st.get(clear);
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_INTERRUPT' || attempt >= CLEAR_ATTEMPTS) throw err;
      }
    }
  };
}
