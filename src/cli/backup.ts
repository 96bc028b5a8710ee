// `baseplate backup <dir>`: an online backup of the embedded engine's DATA_DIR, taken beside a
// running server. Each database file is copied as one consistent snapshot of itself
// (storage/sqlite/sqlite-backup.ts); the files are not one snapshot together. The platform file is
// copied first and names the projects whose files are copied next, so that:
// - every write acknowledged before the backup began is in it: the platform snapshot and every
//   project snapshot are taken after that moment;
// - a project created while the backup runs is left out whole (nothing acknowledged before the
//   backup began can be in it);
// - a project deleted while the backup runs is either in it whole (its file was copied before the
//   server removed it) or left out whole: the server removes the project's file before its row (so
//   that a drop that fails leaves a project to delete again, never a store other nodes would go on
//   serving), so a file that is gone is a deletion under way, or one that did not finish (the row
//   alone is left, which the owner deletes again): its row is removed from the copy. Every project
//   of a backup has its file.
// The project snapshots are taken one after the other, each at its own moment: writes made during
// the backup may be in one project's copy and not in the platform's (a session, a new account).
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { makeDirs } from '../lib/make-dirs.ts';
import { join, resolve } from 'node:path';
import type { Config } from '../config.ts';
import { forgetProjects, integrityProblems, listsProject, projectIds, snapshotFile } from '../storage/sqlite/sqlite-backup.ts';
import { projectFile } from '../storage/sqlite/sqlite-connection.ts';
import { BackupError, copyFile, digest, FORMAT, MANIFEST, syncDir, type CommandContext, type Manifest, type ManifestFile } from './manifest.ts';

/** An empty directory for the backup (created, mode 0700: it will hold the master key); answers whether it was created. */
function emptyTarget(dir: string): boolean {
  if (!existsSync(dir)) {
    try {
      makeDirs(dir, 0o700);
    } catch (err) {
      throw new BackupError(`cannot create ${dir} for the backup: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    return true;
  }
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    throw new BackupError(`cannot use ${dir} for the backup: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (entries.length > 0) throw new BackupError(`${dir} is not empty: a backup goes into a new or empty directory`);
  return false;
}

/** Copies one project's file; false when the project was deleted meanwhile (left out). */
async function copyProject(dataDir: string, dir: string, id: string): Promise<boolean> {
  const source = projectFile(join(dataDir, 'projects'), id);
  const dest = projectFile(join(dir, 'projects'), id);
  try {
    await snapshotFile(source, dest);
    return true;
  } catch (err) {
    rmSync(dest, { force: true });
    if (!existsSync(source) || !listsProject(join(dataDir, 'platform.db'), id)) return false;
    throw new BackupError(`cannot copy project ${id} (${source}): ${(err as Error).message}`);
  }
}

function checkIntegrity(dir: string, paths: string[]): void {
  for (const path of paths) {
    const problems = integrityProblems(join(dir, path));
    if (problems.length > 0)
      throw new BackupError(`${path} in DATA_DIR is damaged (PRAGMA integrity_check: ${problems.slice(0, 3).join('; ')})`);
  }
}

async function copyEverything(config: Config, dataDir: string, dir: string, { version, say }: CommandContext): Promise<Manifest> {
  const startedAt = new Date().toISOString();
  await snapshotFile(join(dataDir, 'platform.db'), join(dir, 'platform.db'));
  mkdirSync(join(dir, 'projects'), { mode: 0o700 });
  const copied: string[] = [];
  const leftOut: string[] = [];
  for (const id of projectIds(join(dir, 'platform.db'))) ((await copyProject(dataDir, dir, id)) ? copied : leftOut).push(id);
  if (leftOut.length > 0) forgetProjects(join(dir, 'platform.db'), leftOut);
  const databases = ['platform.db', ...copied.map((id) => `projects/${id}.db`)];
  checkIntegrity(dir, databases);
  const files: ManifestFile[] = [];
  for (const path of databases) files.push({ path, ...(await digest(join(dir, path))) });
  // the key the server runs with: MASTER_KEY when set (a master.key left beside it is not that key)
  if (!config.masterKey && existsSync(join(dataDir, 'master.key'))) files.push({ path: 'master.key', ...(await copyFile(join(dataDir, 'master.key'), join(dir, 'master.key'), 0o600)) });
  else
    say(
      `warning: ${config.masterKey ? `MASTER_KEY is set, so the backup holds no key${existsSync(join(dataDir, 'master.key')) ? ` (not the master.key in ${dataDir}, which the server does not use)` : ''}` : `${dataDir} has no master.key`}: keep the MASTER_KEY the server runs with together with this backup; without it the stored email secrets cannot be read`,
    );
  for (const id of leftOut) say(`project ${id} was deleted while the backup ran, or its deletion did not finish (its file is gone): left out`);
  return { format: FORMAT, version, engine: 'sqlite', started_at: startedAt, finished_at: new Date().toISOString(), files, left_out: leftOut };
}

/** Runs the backup; answers the line that reports it. */
export async function backup(config: Config, dir: string, ctx: CommandContext): Promise<string> {
  if (config.databaseUrl)
    throw new BackupError('DATABASE_URL is set: this deployment keeps its data in PostgreSQL, which `baseplate backup` does not copy; use pg_dump (README, "Backups")');
  const dataDir = resolve(config.dataDir);
  if (!existsSync(join(dataDir, 'platform.db'))) throw new BackupError(`no Baseplate data in ${dataDir} (no platform.db): set DATA_DIR to the server's data directory`);
  const target = resolve(dir);
  const created = emptyTarget(target);
  const began = Date.now();
  try {
    const manifest = await copyEverything(config, dataDir, target, ctx);
    // written last, whole: a directory without a manifest is an unfinished backup
    writeFileSync(join(target, `${MANIFEST}.tmp`), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    renameSync(join(target, `${MANIFEST}.tmp`), join(target, MANIFEST));
    syncDir(target);
    const bytes = manifest.files.reduce((n, f) => n + f.bytes, 0);
    const projects = manifest.files.filter((f) => f.path.startsWith('projects/')).length;
    return `backed up ${dataDir} into ${target}: platform.db, ${projects} project file(s)${manifest.files.some((f) => f.path === 'master.key') ? ', master.key' : ''} (${(bytes / 1048576).toFixed(1)} MiB, ${((Date.now() - began) / 1000).toFixed(1)} s)`;
  } catch (err) {
    // nothing half-written stays behind
    if (created) rmSync(target, { recursive: true, force: true });
    else for (const entry of readdirSync(target)) rmSync(join(target, entry), { recursive: true, force: true });
    throw new BackupError(`${(err as Error).message}; no backup was written`);
  }
}
