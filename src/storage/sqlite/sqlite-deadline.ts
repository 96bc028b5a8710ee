// The statement-deadline extension (native/sqlite-deadline.c): built once from source into
// build/ (npm ci's postinstall does it; start-up redoes it when the library is missing or older
// than its source), then loaded into every SQLite connection. It needs a C compiler, which the
// machine already has for better-sqlite3 and isolated-vm.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SOURCE = join(ROOT, 'native', 'sqlite-deadline.c');
const LIBRARY = join(ROOT, 'build', `sqlite-deadline${process.platform === 'darwin' ? '.dylib' : '.so'}`);
const ENTRY_POINT = 'sqlite3_sqlitedeadline_init';
// the watchdog thread outlives the connection that loaded the library: never unload it
const NODELETE = process.platform === 'linux' ? ['-Wl,-z,nodelete'] : [];

function stale(): boolean {
  return !existsSync(LIBRARY) || statSync(LIBRARY).mtimeMs < statSync(SOURCE).mtimeMs;
}

/** The library's path, compiled first if needed. Concurrent builders each rename a whole file into place. */
export function sqliteDeadlineLibrary(): string {
  if (!stale()) return LIBRARY;
  const headers = join(dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  mkdirSync(dirname(LIBRARY), { recursive: true });
  const tmp = `${LIBRARY}.${process.pid}.tmp`;
  try {
    execFileSync(process.env.CC ?? 'cc', ['-O2', '-fPIC', '-shared', '-pthread', ...NODELETE, '-I', headers, SOURCE, '-o', tmp], { stdio: ['ignore', 'ignore', 'pipe'] });
    renameSync(tmp, LIBRARY);
  } catch (err) {
    rmSync(tmp, { force: true });
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    throw new Error(`the embedded engine needs a C compiler (cc) to build its statement-deadline extension: ${detail}`);
  }
  return LIBRARY;
}

/**
 * Loads the extension into a connection and returns the deadline setter: `set(ms)` bounds every
 * statement run until the next `set` (ms <= 0: no bound); a statement past it fails with SQLITE_INTERRUPT.
 */
export function installDeadline(db: Database.Database): (ms: number) => void {
  // (better-sqlite3 takes the entry point as a second argument; its typings omit it)
  (db.loadExtension as (file: string, entryPoint: string) => void)(sqliteDeadlineLibrary(), ENTRY_POINT);
  const st = db.prepare('SELECT bp_set_deadline(?)');
  return (ms) => void st.get(ms);
}
