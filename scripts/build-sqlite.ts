// npm ci's postinstall: builds what the embedded engine would otherwise build on first start.
import { sqliteDeadlineLibrary, sqliteWorkerScript } from '../src/storage/sqlite/sqlite-build.ts';

console.log(`built ${sqliteDeadlineLibrary()} and ${sqliteWorkerScript()}`);
