// Gives the C allocator's free pages back to the system (native/memory-trim.c: malloc_trim), and
// the pages of file mappings the process no longer uses, after an idle spell's garbage collections
// and once after start-up (app.ts). Optional: where the module cannot be built (no C
// compiler) or has nothing to call (not glibc), nothing is trimmed.
import { createRequire } from 'node:module';
import { nativeLibrary } from './native-build.ts';

// Node-API's functions are resolved when Node loads the module; Apple's linker refuses undefined
// symbols unless told to leave them (as node-gyp does)
const LINK = process.platform === 'darwin' ? ['-undefined', 'dynamic_lookup'] : [];

/** The module's path, compiled first if needed (throws the compiler's message). */
export const memoryTrimLibrary = (): string => nativeLibrary('memory-trim.c', 'memory-trim.node', LINK);

interface MemoryTrim {
  trim(): boolean;
  dropFilePages(): number;
}

let module: MemoryTrim | null | undefined;

function memoryTrim(): MemoryTrim | null {
  if (module === undefined) {
    try {
      module = createRequire(import.meta.url)(memoryTrimLibrary()) as MemoryTrim;
    } catch {
      module = null;
    }
  }
  return module;
}

/** True when memory was given back; false when none was free, or trimming is not available here. */
export function trimMalloc(): boolean {
  return memoryTrim()?.trim() ?? false;
}

/**
 * Drops the process's pages of read-only file mappings that hold nothing of its own (the node
 * binary, shared libraries; native/memory-trim.c): about 15 MiB that start-up touched and serving
 * never uses again, left in the system's page cache. Bytes of the mappings dropped (0: none, or
 * not Linux).
 */
export function dropFilePages(): number {
  return memoryTrim()?.dropFilePages() ?? 0;
}

/** What an idle spell, and the end of start-up, give back: the C heaps' free pages and the file pages. */
export function releaseIdleMemory(): void {
  trimMalloc();
  dropFilePages();
}
