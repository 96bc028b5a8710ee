#!/usr/bin/env node
// The baseplate command (npx baseplate --help). In a checkout, dist/ is rebuilt first when stale, as
// npm start does; an installed image ships dist/ alone (no scripts/), and runs it as it is.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const build = fileURLToPath(new URL('../scripts/build.mjs', import.meta.url));
if (existsSync(build)) {
  const built = spawnSync(process.execPath, [build, '--quiet'], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
await import('../dist/cli.js');
