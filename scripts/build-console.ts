// Builds the owner console (console/, Vite) into dist/console/ when its sources changed since the
// last build: run by the install step and by npm start (scripts/build.ts), and by the browser tests.
// Vite is a development dependency of the console workspace: an install without it (npm ci
// --omit=dev) keeps a console built earlier, or goes without one, and says so.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SOURCE = join(ROOT, 'console');
const OUT = join(ROOT, 'dist', 'console');
const STAMP = join(OUT, '.built');

function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return readdirSync(path).reduce((m, name) => (name === 'node_modules' ? m : Math.max(m, newest(join(path, name)))), st.mtimeMs);
}

function fresh(): boolean {
  return existsSync(STAMP) && existsSync(join(OUT, 'index.html')) && newest(SOURCE) <= statSync(STAMP).mtimeMs;
}

export type ConsoleBuild = 'built' | 'up to date' | 'skipped (vite is not installed)';

const LOCK = join(ROOT, 'dist', 'console.lock');
const LOCK_STALE_MS = 120_000;

/** One build at a time across processes (test files build in parallel): a directory as the lock. */
async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // held: wait, unless its holder died long ago
      if (Date.now() - statSync(LOCK, { throwIfNoEntry: false })!.mtimeMs > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * Builds dist/console/ when stale; `force` builds it anyway. The build is written beside it and
 * swapped in, so a server starting meanwhile reads the old console or the new one, never a mixture.
 */
export async function buildConsole(force = false): Promise<ConsoleBuild> {
  if (!force && fresh()) return 'up to date';
  let vite: typeof import('vite');
  try {
    vite = await import('vite');
  } catch {
    return 'skipped (vite is not installed)';
  }
  return withLock(async () => {
    if (!force && fresh()) return 'up to date'; // another process built it while this one waited
    const next = `${OUT}.${process.pid}.next`;
    const old = `${OUT}.${process.pid}.old`;
    try {
      await vite.build({ root: SOURCE, configFile: join(SOURCE, 'vite.config.ts'), logLevel: 'warn', mode: 'production', build: { outDir: next, emptyOutDir: true } });
      writeFileSync(join(next, '.built'), `${new Date().toISOString()}\n`);
      if (existsSync(OUT)) renameSync(OUT, old);
      renameSync(next, OUT);
    } finally {
      rmSync(next, { recursive: true, force: true });
      rmSync(old, { recursive: true, force: true });
    }
    return 'built' as const;
  });
}

export const CONSOLE_DIR = OUT;
