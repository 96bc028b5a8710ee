// The service as plain JavaScript. `npm ci` (postinstall) and `npm start` (prestart) run
// scripts/build.mjs, which writes dist/: main.js, cli.js (the baseplate command) and the two worker
// scripts, each one esbuild bundle of our sources with the packages left as imports. Production runs node dist/main.js: no
// TypeScript loader at run time (it cost about 40 MiB and a second of start-up) and none in the
// sandbox processes or worker threads.
// Run from source (tests, through tsx), a worker script is bundled on demand into build/ instead,
// whenever one of its inputs is newer than the bundle, so a test never runs a stale worker.
// This file sits one level below the root, as every bundle does (dist/*.js, build/*.mjs): the root
// is '../' from here, whichever of them this code was bundled into.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Esbuild from 'esbuild';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DIST = join(ROOT, 'dist');
const BUILD = join(ROOT, 'build');

// set by the dist build: a bundle in dist/ finds its workers beside it and never builds
declare const BASEPLATE_DIST: boolean | undefined;
const inDist = typeof BASEPLATE_DIST !== 'undefined';

const ENTRIES = {
  main: 'src/main.ts',
  cli: 'src/cli/cli.ts',
  'sqlite-worker': 'src/storage/sqlite/sqlite-worker.ts',
  'function-worker': 'src/functions/worker-main.ts',
} as const;
export type WorkerName = Exclude<keyof typeof ENTRIES, 'main' | 'cli'>;

const mtime = (file: string) => statSync(file).mtimeMs;

/** Writes `file` whole or not at all: concurrent starts never see half a file. */
export function replaceFile(file: string, write: (tmp: string) => void): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    write(tmp);
    renameSync(tmp, file);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Whether `out` is newer than every source file its last build read (listed in `out`.inputs.json). */
function fresh(out: string): boolean {
  try {
    const built = mtime(out);
    const inputs = JSON.parse(readFileSync(`${out}.inputs.json`, 'utf8')) as string[];
    return inputs.every((f) => mtime(join(ROOT, f)) <= built);
  } catch {
    return false; // missing, unreadable, or an input is gone
  }
}

function esbuild(): typeof Esbuild {
  // loaded only when something is built: a production start never loads it
  return createRequire(import.meta.url)('esbuild') as typeof Esbuild;
}

const COMMON: Esbuild.BuildOptions = { absWorkingDir: ROOT, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', metafile: true, logLevel: 'silent', charset: 'ascii' };

/**
 * The bundle's text in ASCII only. V8 keeps every script's source in memory, two bytes a character
 * as soon as one character is beyond Latin-1: one `§` in a comment doubled main.js's 370 KB there.
 * esbuild (charset 'ascii') escapes strings, templates and regular expressions, so what is left is
 * in comments, where an escape changes nothing.
 */
const asciiOnly = (text: string) => text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);

function recordInputs(out: string, metafile: Esbuild.Metafile): void {
  replaceFile(`${out}.inputs.json`, (tmp) => writeFileSync(tmp, JSON.stringify(Object.keys(metafile.inputs))));
}

/** The script a worker thread or sandbox process runs. */
export function workerScript(name: WorkerName): string {
  if (inDist) return join(DIST, `${name}.js`);
  const out = join(BUILD, `${name}.mjs`);
  if (fresh(out)) return out;
  const result = esbuild().buildSync({ ...COMMON, entryPoints: [ENTRIES[name]], write: false });
  replaceFile(out, (tmp) => writeFileSync(tmp, asciiOnly(result.outputFiles[0]!.text)));
  recordInputs(out, result.metafile!);
  return out;
}

/**
 * Builds dist/ when missing or stale; answers whether it did. The entries share chunks, and
 * what only some deployments use (the PostgreSQL driver, the mailer) is a chunk loaded on first use.
 * Chunks are named by their content and old ones are left in place: a server still running the
 * previous build may yet load one of its own.
 */
export function buildDist(): boolean {
  const main = join(DIST, 'main.js');
  if (fresh(main)) return false;
  const result = esbuild().buildSync({
    ...COMMON,
    entryPoints: ENTRIES,
    outdir: DIST,
    entryNames: '[name]',
    chunkNames: '[name]-[hash]', // beside the entries: every file is one level below the root
    splitting: true,
    define: { BASEPLATE_DIST: 'true' },
    write: false,
  });
  // file by file, each renamed into place: concurrent builds (tests, two starts) never expose half a file
  for (const file of result.outputFiles!) replaceFile(file.path, (tmp) => writeFileSync(tmp, asciiOnly(file.text)));
  // written last: a build interrupted before this line is stale and redone next time
  recordInputs(main, result.metafile!);
  return true;
}
