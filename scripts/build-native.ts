// npm ci's postinstall: compiles the embedded engine's statement-deadline extension into build/.
import { sqliteDeadlineLibrary } from '../src/storage/sqlite/sqlite-deadline.ts';

console.log(`built ${sqliteDeadlineLibrary()}`);
