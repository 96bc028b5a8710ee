// Opening project files on the embedded engine: an up-to-date file opens without a write (its
// schema version is the `user_version` in its header), an older one is migrated and stamped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEngine, type SqliteEngineOptions } from '../../src/storage/sqlite/sqlite-engine.ts';
import { quoteIdent } from '../../src/storage/engine.ts';
import { projectMigrations } from '../../src/storage/schema.ts';

const PROJECT = 'openproject';
const SCHEMA_VERSION = projectMigrations(quoteIdent, { ts: '', bool: '', bigint: '', serial: '' }).length;

/** A data directory holding one project, created and closed (its WAL checkpointed into the file). */
async function withProject(fn: (dir: string, file: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bp-open-'));
  try {
    const engine = await SqliteEngine.open({ dataDir: dir });
    await engine.createProjectStore(PROJECT);
    await engine.close();
    await fn(dir, join(dir, 'projects', `${PROJECT}.db`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function withEngine<T>(opts: SqliteEngineOptions, fn: (engine: SqliteEngine) => Promise<T>): Promise<T> {
  const engine = await SqliteEngine.open(opts);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/** Runs `fn` on a plain connection to `file`, closed after. */
function onFile<T>(file: string, fn: (db: Database.Database) => T): T {
  const db = new Database(file);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

const digest = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const walBytes = (file: string) => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);

test('[sqlite] opening an up-to-date project file takes no write lock and writes nothing', async () => {
  await withProject(async (dir, file) => {
    const before = digest(file);
    // another connection holds the project's write lock (a long write in progress)
    const writer = new Database(file);
    writer.exec('BEGIN IMMEDIATE');
    try {
      await withEngine({ dataDir: dir }, async (engine) => {
        const t0 = performance.now();
        const db = await engine.project(PROJECT);
        assert.ok(await db.get(`SELECT version FROM ${db.t('_bp_meta')}`));
        // a write transaction would wait for the lock (up to 5 s) and then fail
        assert.ok(performance.now() - t0 < 1000, `the open took ${performance.now() - t0} ms`);
        assert.equal(walBytes(file), 0);
      });
    } finally {
      writer.exec('ROLLBACK');
      writer.close();
    }
    assert.equal(digest(file), before);
  });
});

test('[sqlite] a project file at an older schema version is migrated when opened, and stamped', async () => {
  await withProject(async (dir, file) => {
    // the file as the release before the last migration left it
    onFile(file, (db) => {
      db.exec(`DROP TABLE "_bp_meta"; DELETE FROM "_bp_migrations" WHERE name = '0007_schema_version'`);
      db.pragma(`user_version = ${SCHEMA_VERSION - 1}`);
    });
    await withEngine({ dataDir: dir }, async (engine) => {
      const db = await engine.project(PROJECT);
      assert.deepEqual(await db.get(`SELECT version FROM ${db.t('_bp_meta')}`), { version: 1 });
    });
    assert.equal(onFile(file, (db) => db.pragma('user_version', { simple: true })), SCHEMA_VERSION);
  });
});

test('[sqlite] a project file from before the stamp (user_version 0) is stamped without running a migration again', async () => {
  await withProject(async (dir, file) => {
    const applied = () => onFile(file, (db) => db.prepare('SELECT name, applied_at FROM "_bp_migrations" ORDER BY name').all());
    const records = applied();
    assert.equal(records.length, SCHEMA_VERSION);
    onFile(file, (db) => db.pragma('user_version = 0'));
    await withEngine({ dataDir: dir }, (engine) => engine.project(PROJECT));
    assert.equal(onFile(file, (db) => db.pragma('user_version', { simple: true })), SCHEMA_VERSION);
    assert.deepEqual(applied(), records);
  });
});
