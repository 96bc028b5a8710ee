// Runs scripts/build.ts without a TypeScript loader (a production install may have none): esbuild,
// a dependency, bundles it into build/, one level below the root as src/bundles.ts expects.
import { buildSync } from 'esbuild';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
// one file per run: two installs at once never import each other's half-written file
const out = `${root}build/build-script.${process.pid}.mjs`;
buildSync({ entryPoints: ['scripts/build.ts'], absWorkingDir: root, bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outfile: out, logLevel: 'warning' });
try {
  await import(out);
} finally {
  rmSync(out, { force: true });
}
