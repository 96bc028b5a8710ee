// The statement-deadline extension (native/sqlite-deadline.c), which the embedded engine builds for
// itself when missing or older than its source (the install step builds it ahead). It needs a C
// compiler, as better-sqlite3 and isolated-vm already do.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { workerScript } from '../../bundles.ts';
import { nativeLibrary } from '../../lib/native-build.ts';

// the watchdog thread outlives the connection that loaded the library: never unload it
const NODELETE = process.platform === 'linux' ? ['-Wl,-z,nodelete'] : [];

/** The extension's path, compiled first if needed. */
export function sqliteDeadlineLibrary(): string {
  const headers = join(dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  try {
    return nativeLibrary('sqlite-deadline.c', `sqlite-deadline${process.platform === 'darwin' ? '.dylib' : '.so'}`, ['-pthread', ...NODELETE, '-I', headers]);
  } catch (err) {
    throw new Error(`the embedded engine needs a C compiler (cc) to build its statement-deadline extension: ${(err as Error).message}`);
  }
}

/** The worker-thread script (a bundle: a worker that loaded the TypeScript loader would cost about 35 MiB). */
export const sqliteWorkerScript = (): string => workerScript('sqlite-worker');
