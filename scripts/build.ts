// What the install step (postinstall) and npm start (prestart) build: dist/, the owner console
// (dist/console/), the embedded engine's native extension and the memory-trim module, each only
// when missing or stale. Run through scripts/build.mjs, which needs no TypeScript tooling.
import { buildDist } from '../src/bundles.ts';
import { sqliteDeadlineLibrary } from '../src/storage/sqlite/sqlite-build.ts';
import { memoryTrimLibrary } from '../src/lib/malloc-trim.ts';
import { buildConsole } from './build-console.ts';

const built = buildDist();
const extension = sqliteDeadlineLibrary();
// optional (lib/malloc-trim.ts): an install where it cannot be built goes on without it
let trim: string;
try {
  trim = memoryTrimLibrary();
} catch (err) {
  trim = `unavailable (${(err as Error).message.split('\n')[0]})`;
}
const console_ = await buildConsole(process.argv.includes('--console'));
if (!process.argv.includes('--quiet')) console.log(`dist/: ${built ? 'built' : 'up to date'}; console: ${console_}; statement-deadline extension: ${extension}; memory trim: ${trim}`);
