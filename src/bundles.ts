// The service as plain JavaScript. `npm ci` (postinstall) and `npm start` (prestart) run
// scripts/build.mjs, which writes dist/: main.js, cli.js (the baseplate command) and the two worker
// scripts, each one esbuild bundle of our sources and most packages (COMMON). Production runs node dist/main.js: no
// TypeScript loader at run time (it cost about 40 MiB and a second of start-up) and none in the
// sandbox processes or worker threads.
// Run from source (tests, through tsx), a worker script is bundled on demand into build/ instead,
// whenever one of its inputs is newer than the bundle, so a test never runs a stale worker.
// This file sits one level below the root, as every bundle does (dist/*.js, build/*.mjs): the root
// is '../' from here, whichever of them this code was bundled into.
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { makeDirs } from './lib/make-dirs.ts';
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
  makeDirs(dirname(file));
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

/**
 * Packages left as imports, resolved in node_modules at run time: native addons, those that read
 * files beside their own code (the documentation's pages and their package.json), the optional
 * native pg driver, and the build and test tools. pg itself is loaded with createRequire
 * (storage/postgres/pg-driver.ts), which a bundler does not follow: it stays in node_modules too.
 * A bundled package finds no `__dirname`: pino's transports (worker threads started from files
 * beside pino) would fail in dist/, which is why the logger writes through pino.destination only.
 */
const EXTERNAL = ['better-sqlite3', '@node-rs/argon2', 'isolated-vm', '@fastify/swagger', '@fastify/swagger-ui', 'pg-native', 'esbuild', 'playwright-core'];

/**
 * The other packages are bundled with our sources: a start then reads a few files instead of about
 * 800 in node_modules and resolves no package paths (measured, 0.95-1.2 s to the first /health 200
 * against 0.72-0.81 s). Whitespace and comments are left out, which keeps the source V8 holds in
 * memory for every script small (bundled as written, idle memory grew by 5-7 MiB; so, by about 1);
 * names are kept (but where two collide), so stack traces still name functions, and dist/ has
 * source maps for `node --enable-source-maps` (read only then). The packages bundled are CommonJS
 * inside an ES module, whose `require` of Node's own modules needs one defined (the banner).
 */
const COMMON: Esbuild.BuildOptions = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  banner: { js: "import { createRequire as __bpRequire } from 'node:module'; const require = __bpRequire(import.meta.url);" },
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'silent',
  charset: 'ascii',
};

/**
 * The bundle's text in ASCII only. V8 keeps every script's source in memory, two bytes a character
 * as soon as one character is beyond Latin-1: one `§` in a comment doubled main.js's 370 KB there.
 * esbuild (charset 'ascii') escapes strings, templates and regular expressions, so what is left is
 * in comments, where an escape changes nothing.
 */
const asciiOnly = (text: string) => text.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);

/**
 * Files an install rewrites: with the packages bundled, an install that adds a file to a package
 * (not an input yet) or restores older ones must make the bundles stale too.
 */
const INSTALL_STAMPS = ['package-lock.json', 'node_modules/.package-lock.json'];

function recordInputs(out: string, metafile: Esbuild.Metafile): void {
  const inputs = [...Object.keys(metafile.inputs), ...INSTALL_STAMPS.filter((f) => existsSync(join(ROOT, f)))];
  replaceFile(`${out}.inputs.json`, (tmp) => writeFileSync(tmp, JSON.stringify(inputs)));
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
    sourcemap: 'linked',
    sourcesContent: false,
    define: { BASEPLATE_DIST: 'true' },
    write: false,
  });
  // file by file, each renamed into place: concurrent builds (tests, two starts) never expose half a file
  for (const file of result.outputFiles!) replaceFile(file.path, (tmp) => writeFileSync(tmp, asciiOnly(file.text)));
  // written last: a build interrupted before this line is stale and redone next time
  recordInputs(main, result.metafile!);
  return true;
}
