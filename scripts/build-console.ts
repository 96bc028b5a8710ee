// Builds the owner console (console/, Vite) into dist/console/ when its sources changed since the
// last build: run by the install step and by npm start (scripts/build.ts), and by the browser tests.
// Vite is a development dependency of the console workspace: an install without it (npm ci
// --omit=dev) keeps a console built earlier, or goes without one, and says so.
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
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

/** Builds dist/console/ when stale; `force` builds it anyway. */
export async function buildConsole(force = false): Promise<ConsoleBuild> {
  if (!force && fresh()) return 'up to date';
  let vite: typeof import('vite');
  try {
    vite = await import('vite');
  } catch {
    return 'skipped (vite is not installed)';
  }
  await vite.build({ root: SOURCE, configFile: join(SOURCE, 'vite.config.ts'), logLevel: 'warn', mode: 'production' });
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  return 'built';
}

export const CONSOLE_DIR = OUT;
export const consolePath = (file: string) => relative(ROOT, join(OUT, file));
