// The baseplate command as an operator runs it (bin/baseplate.mjs, the package's bin): help and
// usage errors, version, serve and migrate on both engines. Backups: backup.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ROOT } from '../../src/bundles.ts';
import { createTestDatabase, testEngines, type EngineName } from '../support/postgres.ts';
import { CLI, callServer, runUntilExit, startServer } from '../support/server-process.ts';

const { engines, skipReason } = await testEngines();
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const COMMANDS = ['serve', 'migrate', 'backup', 'restore', 'version'];

const cli = (args: string[], env: Record<string, string> = {}) => runUntilExit(env, 60000, [CLI, ...args]);

test('baseplate --help lists every command; each command has its own --help; nothing runs', async () => {
  const res = await cli(['--help']);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^Usage: baseplate <command>/);
  for (const c of COMMANDS) assert.match(res.stdout, new RegExp(`^  ${c}\\b`, 'm'));
  for (const c of COMMANDS) {
    const one = await cli([c, '--help'], { DATA_DIR: '/nonexistent/never-created' });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^Usage: baseplate ${c}\\b`));
    assert.equal(one.stderr, '');
  }
  assert.equal(existsSync('/nonexistent/never-created'), false);
});

test('usage errors exit 2 with the usage on stderr: no command, unknown command, unknown flag, missing or extra argument', async () => {
  const cases: [string[], RegExp, RegExp][] = [
    [[], /a command is needed/, /Usage: baseplate <command>/],
    [['frobnicate'], /unknown command 'frobnicate'/, /Usage: baseplate <command>/],
    [['serve', '--port=1'], /Unknown option '--port'/, /Usage: baseplate serve/],
    [['migrate', 'extra'], /migrate takes no arguments/, /Usage: baseplate migrate/],
    [['backup'], /backup takes <dir>/, /Usage: baseplate backup <dir>/],
    [['backup', 'a', 'b'], /backup takes <dir>/, /Usage: baseplate backup <dir>/],
    [['backup', 'a', '--force'], /Unknown option '--force'/, /Usage: baseplate backup <dir>/],
    [['restore', '--force'], /restore takes <dir>/, /Usage: baseplate restore <dir> \[--force\]/],
  ];
  for (const [args, message, usage] of cases) {
    const res = await cli(args);
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
    assert.equal(res.stdout, '');
    assert.match(res.stderr, message);
    assert.match(res.stderr, usage);
  }
});

test('baseplate version prints the package version, through npx as documented', async () => {
  const res = await cli(['version']);
  assert.deepEqual([res.code, res.stdout], [0, `${VERSION}\n`]);
  const { stdout } = await promisify(execFile)('npx', ['--no-install', 'baseplate', 'version'], { cwd: ROOT });
  assert.equal(stdout, `${VERSION}\n`);
});

test('[sqlite] an invalid setting: exit 1, one line naming it, and nothing written', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'bp-cli-'));
  const dataDir = join(parent, 'data');
  try {
    for (const command of ['migrate', 'serve']) {
      const res = await cli([command], { DATA_DIR: dataDir, PORT: 'abc' });
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stdout + res.stderr, /PORT must be a whole number, got 'abc'/);
      assert.equal((res.stdout + res.stderr).trim().split('\n').length, 1);
    }
    const badKey = await cli(['migrate'], { DATA_DIR: dataDir, MASTER_KEY: 'short' });
    assert.equal(badKey.code, 1);
    assert.match(badKey.stderr, /^baseplate migrate: MASTER_KEY must be 32 bytes/);
    assert.equal(existsSync(dataDir), false);
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

if (engines.includes('postgres')) {
  test('[postgres] migrate against an unreachable database: exit 1, one line, no password', async () => {
    const res = await cli(['migrate'], { DATABASE_URL: 'postgres://u:pw-Secr3t@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '1000' });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^baseplate migrate: cannot open the database \(PostgreSQL at 127\.0\.0\.1:1\/none\): .*ECONNREFUSED.*\n$/);
    assert.ok(!(res.stdout + res.stderr).includes('pw-Secr3t'));
  });
}

/** A data directory or database for one engine; env names it. */
async function store(kind: EngineName): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  if (kind === 'postgres') {
    const db = await createTestDatabase();
    return { env: { DATABASE_URL: db.url }, cleanup: () => db.drop() };
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'bp-cli-'));
  return { env: { DATA_DIR: dataDir }, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
}

/** Undoes the project migration 0007 (its table and its record) by hand: migrate must apply it again. */
async function undoLastProjectMigration(kind: EngineName, env: Record<string, string>, projectId: string): Promise<void> {
  if (kind === 'sqlite') {
    const db = new Database(join(env.DATA_DIR!, 'projects', `${projectId}.db`));
    db.exec(`DROP TABLE _bp_meta; DELETE FROM _bp_migrations WHERE name = '0007_schema_version'; PRAGMA user_version = 0;`);
    db.close();
    return;
  }
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  await client.query(`DROP TABLE "p_${projectId}"._bp_meta; DELETE FROM "p_${projectId}"._bp_migrations WHERE name = '0007_schema_version'`);
  await client.end();
}

async function projectHasMeta(kind: EngineName, env: Record<string, string>, projectId: string): Promise<boolean> {
  if (kind === 'sqlite') {
    const db = new Database(join(env.DATA_DIR!, 'projects', `${projectId}.db`), { readonly: true });
    const found = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = '_bp_meta'`).get();
    db.close();
    return found !== undefined;
  }
  const client = new pg.Client({ connectionString: env.DATABASE_URL });
  await client.connect();
  const { rows } = await client.query(`SELECT to_regclass('"p_${projectId}"._bp_meta') AS t`);
  await client.end();
  return rows[0].t !== null;
}

for (const kind of engines) {
  test(`[${kind}] serve runs the service (as npm start) until SIGTERM; migrate then migrates the platform and every project store`, async () => {
    const { env, cleanup } = await store(kind);
    try {
      const server = await startServer(env, 30000, [CLI, 'serve']);
      let projectId: string;
      try {
        assert.deepEqual(await callServer(server.base, 'GET', '/health'), { status: 200, body: { status: 'ok' } });
        const owner = (await callServer(server.base, 'POST', '/auth/register', { body: { name: 'n', email: `cli-${kind}@example.com`, password: 'password1' } })).body.token;
        projectId = (await callServer(server.base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
      } finally {
        await server.stop();
      }
      assert.equal(server.proc.exitCode, 0, server.output());
      await undoLastProjectMigration(kind, env, projectId);
      assert.equal(await projectHasMeta(kind, env, projectId), false);
      const res = await cli(['migrate'], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^migrated (the embedded engine in|PostgreSQL at) .*: the platform and 1 project store\(s\) are up to date\n$/);
      assert.equal(await projectHasMeta(kind, env, projectId), true);
      // again: nothing to do, same answer
      assert.equal((await cli(['migrate'], env)).code, 0);
    } finally {
      await cleanup();
    }
  });
}

test('[sqlite] migrate names a listed project whose file is missing and skips it (a deletion that did not finish), and migrates a fresh DATA_DIR', async () => {
  const { env, cleanup } = await store('sqlite');
  try {
    const fresh = await cli(['migrate'], env);
    assert.equal(fresh.code, 0);
    assert.match(fresh.stdout, /\(a new, empty data directory: it had no platform\.db\)/, 'a mistyped DATA_DIR is noticed');
    assert.ok(existsSync(join(env.DATA_DIR!, 'platform.db')));
    assert.equal(existsSync(join(env.DATA_DIR!, 'master.key')), false, 'migrate generates no master key');
    const server = await startServer(env);
    const owner = (await callServer(server.base, 'POST', '/auth/register', { body: { name: 'n', email: 'cli-missing@example.com', password: 'password1' } })).body.token;
    const projectId = (await callServer(server.base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
    await server.stop();
    unlinkSync(join(env.DATA_DIR!, 'projects', `${projectId}.db`));
    const res = await cli(['migrate'], env);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`0 project store\\(s\\) are up to date; skipped 1 listed project\\(s\\) without a store .*: ${projectId}\\n$`));
  } finally {
    await cleanup();
  }
});

test('[sqlite] the service keeps its files to itself: data directories 0700, databases and master.key 0600', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'bp-modes-'));
  const dataDir = join(parent, 'data');
  try {
    const server = await startServer({ DATA_DIR: dataDir, MASTER_KEY: '' });
    const owner = (await callServer(server.base, 'POST', '/auth/register', { body: { name: 'n', email: 'modes@example.com', password: 'password1' } })).body.token;
    const projectId = (await callServer(server.base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
    const mode = (p: string) => statSync(join(dataDir, p)).mode & 0o777;
    for (const dir of ['.', 'projects']) assert.equal(mode(dir), 0o700, dir);
    for (const file of ['platform.db', 'platform.db-wal', `projects/${projectId}.db`, 'master.key']) if (existsSync(join(dataDir, file))) assert.equal(mode(file), 0o600, file);
    await server.stop();
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});

if (skipReason) test('baseplate command [postgres]', { skip: skipReason }, () => undefined);
