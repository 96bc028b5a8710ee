// `mkdir -p`. Node 20's own (`mkdirSync(dir, { recursive: true })`) never returns where mkdir fails
// with ENOENT under a parent that exists, as anywhere under /proc: `DATA_DIR=/proc/x` or
// `baseplate backup /proc/x` spun at full CPU. Here each missing directory is made once, and the
// first that cannot be made fails with its own error.
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeDirs(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing) {
    try {
      mkdirSync(d, { mode });
    } catch (err) {
      // made meanwhile by another process (a second node starting on the same DATA_DIR)
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
