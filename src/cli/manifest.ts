// The manifest of a backup directory (manifest.json, written last: a directory without one is not a
// finished backup) and the file-level helpers that `backup` and `restore` share.
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, fsyncSync, openSync, readFileSync, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';

export const MANIFEST = 'manifest.json';
export const FORMAT = 1;

export interface ManifestFile {
  /** relative to the backup directory and to DATA_DIR alike */
  path: string;
  bytes: number;
  sha256: string;
}

export interface Manifest {
  format: number;
  /** the version of Baseplate that took the backup */
  version: string;
  engine: 'sqlite';
  /** when the backup began: every write acknowledged before then is in it */
  started_at: string;
  finished_at: string;
  files: ManifestFile[];
  /** projects whose deletion was under way while the backup ran: left out, as deleted */
  left_out: string[];
}

// the only paths a manifest may name: nothing outside the directory, nothing else in DATA_DIR
const PATHS = /^(platform\.db|master\.key|projects\/[a-z0-9]+\.db)$/;

export class BackupError extends Error {}

/** What a command needs besides the configuration: the running version, and a line for the operator (stderr). */
export interface CommandContext {
  version: string;
  say(line: string): void;
}

/** The manifest of `dir`, checked for shape: what restore trusts before it reads any file. */
export function readManifest(dir: string, file: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new BackupError(`${dir} is not a finished backup: it has no ${MANIFEST}`);
    throw new BackupError(`${file} cannot be read: ${code ?? (err as Error).message}`);
  }
  const m = raw as Partial<Manifest>;
  if (m?.format !== FORMAT) throw new BackupError(`${file} has format ${JSON.stringify(m?.format)}; this version of Baseplate reads format ${FORMAT}`);
  if (m.engine !== 'sqlite' || !Array.isArray(m.files) || !Array.isArray(m.left_out)) throw new BackupError(`${file} is malformed`);
  for (const f of m.files) {
    if (typeof f?.path !== 'string' || !PATHS.test(f.path) || !Number.isSafeInteger(f.bytes) || !/^[0-9a-f]{64}$/.test(f.sha256))
      throw new BackupError(`${file} names a file it may not: ${JSON.stringify(f?.path)}`);
  }
  if (!m.files.some((f) => f.path === 'platform.db')) throw new BackupError(`${file} lists no platform.db`);
  return m as Manifest;
}

/**
 * Copies `from` to `to` (a new file, `mode`), synced to disk; answers the size and SHA-256 of the
 * bytes copied, so that a checksum is always of what was read, never of a second read.
 */
export async function copyFile(from: string, to: string, mode: number): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(createReadStream(from), tap, createWriteStream(to, { flags: 'wx', mode }));
  syncFile(to);
  return { bytes, sha256: hash.digest('hex') };
}

/** Size and SHA-256 of a file. */
export async function digest(file: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return { bytes: statSync(file).size, sha256: hash.digest('hex') };
}

export function syncFile(file: string): void {
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Persists a directory's entries (renames into it); not possible everywhere (Windows): best effort. */
export function syncDir(dir: string): void {
  try {
    syncFile(dir);
  } catch {
    // the files themselves are synced
  }
}
