// What the install step (postinstall) and npm start (prestart) build: dist/ and the embedded
// engine's native extension, each only when missing or stale. Run through scripts/build.mjs, which
// needs no TypeScript tooling.
import { buildDist } from '../src/bundles.ts';
import { sqliteDeadlineLibrary } from '../src/storage/sqlite/sqlite-build.ts';

const built = buildDist();
const extension = sqliteDeadlineLibrary();
if (!process.argv.includes('--quiet')) console.log(`dist/: ${built ? 'built' : 'up to date'}; statement-deadline extension: ${extension}`);
