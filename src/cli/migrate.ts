// `baseplate migrate`: brings the database up to date and exits, e.g. before starting a new release
// on several nodes (each would also migrate at start; the migrations take a lock per schema on
// PostgreSQL). The platform is migrated when the engine opens; project stores are otherwise
// migrated on first use, so they are opened here one by one.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { engineOptions, openEngine } from '../storage/open-engine.ts';
import { StorageFailure, StoreMissing, type Engine } from '../storage/engine.ts';
import { databaseTarget } from '../lib/database-target.ts';
import { parseMasterKey } from '../lib/secret-box.ts';

const cause = (err: unknown) => (err instanceof StorageFailure ? err.why : err instanceof Error ? err.message : String(err));

/**
 * Migrates every project the platform lists. One deleted meanwhile (by a running node) is skipped,
 * and so is one whose store is gone while its row is left: a deletion that did not finish (the
 * store goes first, services/projects.ts), which the owner deletes again; there is nothing of it to
 * migrate.
 */
async function migrateProjects(engine: Engine): Promise<{ migrated: number; storeless: string[] }> {
  const projects = engine.platform.t('projects');
  const ids = await engine.platform.all<{ id: string }>(`SELECT id FROM ${projects} ORDER BY id`);
  let migrated = 0;
  const storeless: string[] = [];
  for (const { id } of ids) {
    try {
      await engine.project(id);
      migrated++;
    } catch (err) {
      if (!(await engine.platform.get(`SELECT 1 AS listed FROM ${projects} WHERE id = ?`, [id]))) continue;
      if (err instanceof StoreMissing) storeless.push(id);
      else throw new Error(`project ${id}: ${cause(err)}`);
    }
  }
  return { migrated, storeless };
}

/** Runs the migrations; answers the line that reports them. */
export async function migrateDatabase(config: Config): Promise<string> {
  // not needed to migrate, but a key the service would refuse is refused here too
  if (config.masterKey !== undefined && config.masterKey.trim() !== '') parseMasterKey(config.masterKey);
  const target = databaseTarget(config.databaseUrl, config.dataDir);
  // a mistyped DATA_DIR would be migrated as a new, empty one: said, so that it is noticed
  const fresh = !config.databaseUrl && !existsSync(join(config.dataDir, 'platform.db'));
  let engine: Engine;
  try {
    engine = await openEngine(engineOptions(config));
  } catch (err) {
    throw new Error(`cannot open the database (${target}): ${cause(err)}`);
  }
  try {
    const { migrated, storeless } = await migrateProjects(engine);
    const skipped = storeless.length ? `; skipped ${storeless.length} listed project(s) without a store (a deletion that did not finish, or a lost file: delete them again): ${storeless.join(', ')}` : '';
    const created = fresh ? ` (a new, empty data directory: it had no platform.db)` : '';
    return `migrated ${target}${created}: the platform and ${migrated} project store(s) are up to date${skipped}`;
  } finally {
    await engine.close();
  }
}
