// The service's small C libraries (native/), compiled with the machine's C compiler (`cc`, or $CC)
// when missing or older than their source: the install step builds them ahead (scripts/build.ts),
// and a run from source rebuilds one whose source changed.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, replaceFile } from '../bundles.ts';

const mtime = (file: string) => statSync(file).mtimeMs;

/**
 * build/`output`, compiled first from native/`source` with `args` if needed. Throws the compiler's
 * message when it fails.
 */
export function nativeLibrary(source: string, output: string, args: readonly string[]): string {
  const from = join(ROOT, 'native', source);
  const to = join(ROOT, 'build', output);
  if (existsSync(to) && mtime(to) >= mtime(from)) return to;
  try {
    replaceFile(to, (tmp) => execFileSync(process.env.CC ?? 'cc', ['-O2', '-fPIC', '-shared', ...args, from, '-o', tmp], { stdio: ['ignore', 'ignore', 'pipe'] }));
  } catch (err) {
    throw new Error((err as { stderr?: Buffer }).stderr?.toString().trim() || String(err));
  }
  return to;
}
