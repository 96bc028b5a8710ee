// What the embedded engine builds for itself on first start (npm ci's postinstall does it ahead):
// - the statement-deadline extension (native/sqlite-deadline.c), which needs a C compiler, as
//   better-sqlite3 and isolated-vm already do;
// - the worker-thread script as one plain JavaScript bundle: a worker that loaded the TypeScript
//   loader would cost about 35 MiB, a bundled one about 3 MiB.
// Each is rebuilt when missing or older than its sources, and written under build/ by renaming a
// whole file into place, so concurrent starts never see half a file.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD = join(ROOT, 'build');
const DEADLINE_SOURCE = join(ROOT, 'native', 'sqlite-deadline.c');
const DEADLINE_LIBRARY = join(BUILD, `sqlite-deadline${process.platform === 'darwin' ? '.dylib' : '.so'}`);
const WORKER_SOURCE = join(ROOT, 'src', 'storage', 'sqlite', 'sqlite-worker.ts');
const WORKER_BUNDLE = join(BUILD, 'sqlite-worker.mjs');
const WORKER_INPUTS = join(BUILD, 'sqlite-worker.inputs.json');
// the watchdog thread outlives the connection that loaded the library: never unload it
const NODELETE = process.platform === 'linux' ? ['-Wl,-z,nodelete'] : [];

const mtime = (file: string) => statSync(file).mtimeMs;

function replace(file: string, write: (tmp: string) => void): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    write(tmp);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** The extension's path, compiled first if needed. */
export function sqliteDeadlineLibrary(): string {
  if (existsSync(DEADLINE_LIBRARY) && mtime(DEADLINE_LIBRARY) >= mtime(DEADLINE_SOURCE)) return DEADLINE_LIBRARY;
  const headers = join(dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')), 'deps', 'sqlite3');
  try {
    replace(DEADLINE_LIBRARY, (tmp) =>
      execFileSync(process.env.CC ?? 'cc', ['-O2', '-fPIC', '-shared', '-pthread', ...NODELETE, '-I', headers, DEADLINE_SOURCE, '-o', tmp], { stdio: ['ignore', 'ignore', 'pipe'] }),
    );
  } catch (err) {
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() || String(err);
    throw new Error(`the embedded engine needs a C compiler (cc) to build its statement-deadline extension: ${detail}`);
  }
  return DEADLINE_LIBRARY;
}

function workerBundleFresh(): boolean {
  try {
    const built = mtime(WORKER_BUNDLE);
    const inputs = JSON.parse(readFileSync(WORKER_INPUTS, 'utf8')) as string[];
    return inputs.every((f) => mtime(join(ROOT, f)) <= built);
  } catch {
    return false; // missing, unreadable, or an input is gone
  }
}

/** The worker script's path, bundled first if needed (better-sqlite3 stays a package import). */
export function sqliteWorkerScript(): string {
  if (workerBundleFresh()) return WORKER_BUNDLE;
  const out = buildSync({
    entryPoints: [WORKER_SOURCE],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['better-sqlite3'],
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  replace(WORKER_BUNDLE, (tmp) => writeFileSync(tmp, out.outputFiles[0]!.contents));
  replace(WORKER_INPUTS, (tmp) => writeFileSync(tmp, JSON.stringify(Object.keys(out.metafile.inputs))));
  return WORKER_BUNDLE;
}
