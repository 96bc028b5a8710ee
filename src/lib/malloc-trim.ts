// Gives the C allocator's free pages back to the system (native/memory-trim.c: malloc_trim), after
// an idle spell's garbage collections (app.ts). Optional: where the module cannot be built (no C
// compiler) or has nothing to call (not glibc), nothing is trimmed.
import { createRequire } from 'node:module';
import { nativeLibrary } from './native-build.ts';

// Node-API's functions are resolved when Node loads the module; Apple's linker refuses undefined
// symbols unless told to leave them (as node-gyp does)
const LINK = process.platform === 'darwin' ? ['-undefined', 'dynamic_lookup'] : [];

/** The module's path, compiled first if needed (throws the compiler's message). */
export const memoryTrimLibrary = (): string => nativeLibrary('memory-trim.c', 'memory-trim.node', LINK);

let trim: (() => boolean) | null | undefined;

/** True when memory was given back; false when none was free, or trimming is not available here. */
export function trimMalloc(): boolean {
  if (trim === undefined) {
    try {
      trim = (createRequire(import.meta.url)(memoryTrimLibrary()) as { trim(): boolean }).trim;
    } catch {
      trim = null;
    }
  }
  return trim?.() ?? false;
}
