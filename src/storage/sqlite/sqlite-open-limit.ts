// How many project files the embedded engine keeps open (SQLITE_OPEN_PROJECTS). A file beyond the
// limit is closed and costs a reopen on its next request, so the limit should cover the projects
// in use; what bounds it is the process's file descriptors: an open project holds 3 on the main
// thread (the database, its WAL, its shared-memory index), the worker threads' connections,
// together never more than the main thread's, 2 more each (the index is shared within the process),
// and one more once its WAL was checkpointed (native/sqlite-deadline.c: SQLite keeps the
// checkpointing connection's database descriptor until the file's last connection closes).
import { readFileSync } from 'node:fs';

export const DEFAULT_OPEN_PROJECTS = 1024;
export const FDS_PER_PROJECT = 6;
// the rest is for everything else: client sockets, function sandboxes, the platform file, logs
const PROJECT_SHARE = 0.75;

/** Files of the main thread that keep their page cache (sqlite-open-files.ts), and its bound in KiB. */
export const MAIN_THREAD_WARM = 16;
export const MAIN_THREAD_CACHE_KIB = 1024;
/**
 * Files each worker thread keeps open, and keeps warm. Workers run the statements that proved
 * expensive (or that the main thread had no time for), so a reopen is small beside them; and every
 * worker opens the files of its own, which would multiply the open files and their memory.
 */
export const WORKER_OPEN_FILES = 64;
export const WORKER_WARM = 4;
export const WORKER_CACHE_KIB = 512;

/** The process's limit on open files (Node raises it to the hard limit at start), or null: unknown. */
export function fileLimit(): number | null {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : null; // "unlimited" has no number
  } catch {
    return null; // not Linux
  }
}

/**
 * The open-file limit for a requested one (undefined: the default) and the process's file limit:
 * the default is lowered to what the descriptors allow, a requested limit beyond them refused.
 */
export function openProjectLimit(requested: number | undefined, files: number | null): number {
  if (files === null) return requested ?? DEFAULT_OPEN_PROJECTS;
  const fits = Math.max(1, Math.floor((files * PROJECT_SHARE) / FDS_PER_PROJECT));
  if (requested === undefined) return Math.min(DEFAULT_OPEN_PROJECTS, fits);
  if (requested > fits)
    throw new Error(
      `SQLITE_OPEN_PROJECTS=${requested} may need ${requested * FDS_PER_PROJECT} file descriptors (${FDS_PER_PROJECT} per open project), ` +
        `more than ${PROJECT_SHARE * 100}% of this process's limit of ${files} (ulimit -n): set it to ${fits} at most, or raise the limit`,
    );
  return requested;
}

/** Files each worker keeps open: the open-file limit shared out among them, at most WORKER_OPEN_FILES. */
export function workerOpenFiles(maxOpen: number, workers: number): number {
  return Math.min(WORKER_OPEN_FILES, Math.ceil(maxOpen / workers));
}
