// `baseplate restore <dir>`: a backup of `baseplate backup` back into DATA_DIR, with the server
// stopped. Everything is checked before DATA_DIR is touched: each file is copied into a staging
// directory inside DATA_DIR (same file system: the final moves are renames), its size and SHA-256
// compared with the manifest's, each database checked with PRAGMA integrity_check, and the platform
// file's projects matched with the project files. Only then are the files moved into place,
// platform.db last, master.key with mode 0600.
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { makeDirs } from '../lib/make-dirs.ts';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { integrityProblems, openElsewhere, projectIds } from '../storage/sqlite/sqlite-backup.ts';
import { BackupError, copyFile, MANIFEST, readManifest, syncDir, type CommandContext, type Manifest } from './manifest.ts';

/** The files of DATA_DIR a restore replaces (with --force), the WAL beside a database included. */
const REPLACED = ['platform.db', 'platform.db-wal', 'platform.db-shm', 'platform.db-journal', 'master.key', 'projects'];

function existingEntries(dataDir: string): string[] {
  if (!existsSync(dataDir)) return [];
  if (!statSync(dataDir).isDirectory()) throw new BackupError(`DATA_DIR ${dataDir} is not a directory`);
  return readdirSync(dataDir);
}

/** Copies every file of the backup into `staging` and checks it; throws at the first problem. */
async function stage(source: string, staging: string, manifest: Manifest): Promise<void> {
  for (const f of manifest.files) {
    const from = join(source, f.path);
    if (!existsSync(from)) throw new BackupError(`${f.path} is in the manifest but not in ${source}: the backup is incomplete`);
    makeDirs(dirname(join(staging, f.path)), 0o700);
    const got = await copyFile(from, join(staging, f.path), 0o600);
    if (got.bytes !== f.bytes || got.sha256 !== f.sha256)
      throw new BackupError(`${f.path} does not match the manifest (${got.bytes} bytes, expected ${f.bytes}; checksum ${got.sha256 === f.sha256 ? 'equal' : 'differs'}): the backup was changed or damaged`);
  }
  for (const f of manifest.files.filter((file) => file.path.endsWith('.db'))) {
    const problems = integrityProblems(join(staging, f.path));
    if (problems.length > 0) throw new BackupError(`${f.path} failed PRAGMA integrity_check: ${problems.slice(0, 3).join('; ')}`);
  }
  const files = new Set(manifest.files.map((f) => f.path));
  const missing = projectIds(join(staging, 'platform.db')).filter((id) => !files.has(`projects/${id}.db`));
  if (missing.length > 0) throw new BackupError(`platform.db lists ${missing.length} project(s) whose file is not in the backup (${missing.slice(0, 3).join(', ')}): the backup is incomplete`);
}

/** Moves the staged files into DATA_DIR: projects first, the platform file last. */
function install(staging: string, dataDir: string, force: boolean): void {
  if (force) for (const name of REPLACED) rmSync(join(dataDir, name), { recursive: true, force: true });
  if (existsSync(join(staging, 'projects'))) renameSync(join(staging, 'projects'), join(dataDir, 'projects'));
  if (existsSync(join(staging, 'master.key'))) renameSync(join(staging, 'master.key'), join(dataDir, 'master.key'));
  renameSync(join(staging, 'platform.db'), join(dataDir, 'platform.db'));
  syncDir(dataDir);
}

/** Runs the restore; answers the line that reports it. */
export async function restore(config: Config, dir: string, force: boolean, { say }: CommandContext): Promise<string> {
  if (config.databaseUrl)
    throw new BackupError('DATABASE_URL is set: this deployment keeps its data in PostgreSQL; restore a pg_dump archive with pg_restore (README, "Backups")');
  const source = resolve(dir);
  if (!existsSync(source) || !statSync(source).isDirectory()) throw new BackupError(`${source} does not exist or is not a directory`);
  const manifest = readManifest(source, join(source, MANIFEST));
  const dataDir = resolve(config.dataDir);
  if (existingEntries(dataDir).length > 0 && !force)
    throw new BackupError(`DATA_DIR ${dataDir} is not empty: restore replaces nothing unless told to with --force (stop the server first)`);
  // replacing the files under a running server would lose every write it acknowledges afterwards
  if (existsSync(join(dataDir, 'platform.db')) && openElsewhere(join(dataDir, 'platform.db')))
    throw new BackupError(`DATA_DIR ${dataDir} is in use: a server has its platform.db open; stop it first (nothing was changed)`);
  makeDirs(dataDir);
  const staging = mkdtempSync(join(dataDir, '.restore-'));
  try {
    await stage(source, staging, manifest);
    install(staging, dataDir, force);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const hasKey = manifest.files.some((f) => f.path === 'master.key');
  if (!hasKey) say('warning: this backup holds no master.key: start the server with the MASTER_KEY it ran with (stored email secrets need it)');
  const projects = manifest.files.filter((f) => f.path.startsWith('projects/')).length;
  return `restored the backup of ${manifest.started_at} (Baseplate ${manifest.version}) into ${dataDir}: platform.db, ${projects} project file(s)${hasKey ? ', master.key' : ''}`;
}
