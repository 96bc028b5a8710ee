// The statement-deadline extension (native/sqlite-deadline.c), which the embedded engine builds for
// itself when missing or older than its source (the install step builds it ahead). It needs a C
// compiler, as better-sqlite3 and isolated-vm already do.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ROOT, replaceFile, workerScript } from '../../bundles.ts';

const DEADLINE_SOURCE = join(ROOT, 'native', 'sqlite-deadline.c');
const DEADLINE_LIBRARY = join(ROOT, 'build', `sqlite-deadline${process.platform === 'darwin' ? '.dylib' : '.so'}`);
// the watchdog thread outlives the connection that loaded the library: never unload it
const NODELETE = process.platform === 'linux' ? ['-Wl,-z,nodelete'] : [];

const mtime = (file: string) => statSync(file).mtimeMs;

/** The extension's path, compiled first if needed. */
export function sqliteDeadlineLibrary(): string {
  if (existsSync(DEADLINE_LIBRARY) && mtime(DEADLINE_LIBRARY) >= mtime(DEADLINE_SOURCE)) return DEADLINE_LIBRARY;
  const headers = join(dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  try {
    replaceFile(DEADLINE_LIBRARY, (tmp) =>
      execFileSync(process.env.CC ?? 'cc', ['-O2', '-fPIC', '-shared', '-pthread', ...NODELETE, '-I', headers, DEADLINE_SOURCE, '-o', tmp], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
  } catch (err) {
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    throw new Error(`the embedded engine needs a C compiler (cc) to build its statement-deadline extension: ${detail}`);
  }
  return DEADLINE_LIBRARY;
}

/** The worker-thread script (a bundle: a worker that loaded the TypeScript loader would cost about 35 MiB). */
export const sqliteWorkerScript = (): string => workerScript('sqlite-worker');
