// What the install step (postinstall) and npm start (prestart) build: dist/, the owner console
// (dist/console/) and the embedded engine's native extension, each only when missing or stale. Run
// through scripts/build.mjs, which needs no TypeScript tooling.
import { buildDist } from '../src/bundles.ts';
import { sqliteDeadlineLibrary } from '../src/storage/sqlite/sqlite-build.ts';
import { buildConsole } from './build-console.ts';

const built = buildDist();
const extension = sqliteDeadlineLibrary();
const console_ = await buildConsole(process.argv.includes('--console'));
if (!process.argv.includes('--quiet')) console.log(`dist/: ${built ? 'built' : 'up to date'}; console: ${console_}; statement-deadline extension: ${extension}`);
