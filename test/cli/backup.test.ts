// baseplate backup / restore (embedded engine): a backup of a live server under writes holds every
// write acknowledged before it began, and a server started on the restored directory serves them
// (and still opens the sealed email secrets: master.key came back). Projects deleted or created
// while the backup runs, and the bad inputs: a missing or non-empty directory, a damaged file, a
// PostgreSQL deployment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { testEngines } from '../support/postgres.ts';
import { startApiCapture } from '../support/mail-capture.ts';
import { CLI, callServer, runUntilExit, startServer, type ServerProcess } from '../support/server-process.ts';
import { assertRestored, project, register, startWriting } from '../support/live-writes.ts';

const { engines } = await testEngines();

const cli = (args: string[], env: Record<string, string>) => runUntilExit({ MASTER_KEY: '', ...env }, 120000, [CLI, ...args]);

if (engines.includes('sqlite')) {
  test('[sqlite] backup of a live server under writes: every write acknowledged before it began is restored, served, and its email secrets open', async (t) => {
    const api = await startApiCapture();
    const parent = mkdtempSync(join(tmpdir(), 'bp-backup-'));
    const [live, backupDir, restored] = ['live', 'backup', 'restored'].map((d) => join(parent, d)) as [string, string, string];
    // no MASTER_KEY: the server generates master.key, which the backup must carry
    const env = { DATA_DIR: live, MASTER_KEY: '', EMAILAPI_BASE_URL: api.baseUrl };
    let server: ServerProcess | undefined = await startServer(env);
    let second: ServerProcess | undefined;
    try {
      const owner = await register(server.base, 'backup-owner@example.com');
      const projects = [await project(server.base, owner, 'a'), await project(server.base, owner, 'b'), await project(server.base, owner, 'c')];
      const writes = await startWriting(server.base, projects);
      const { acked } = writes;
      let running = true;
      // the promise: every write acknowledged before the backup begins
      const promised = acked.map((a) => [...a]);
      // projects come and go while the backup runs (either in it whole, or left out whole)
      const churn = (async () => {
        for (let i = 0; running; i++) {
          const created = (await callServer(server!.base, 'POST', '/projects', { token: owner, body: { name: `churn${i}` } })).body;
          await callServer(server!.base, 'DELETE', `/projects/${created.id}`, { token: owner });
        }
      })();
      const began = Date.now();
      const res = await cli(['backup', backupDir], { DATA_DIR: live });
      const tookMs = Date.now() - began;
      running = false;
      await Promise.all([writes.stop(), churn]);
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.match(res.stdout, new RegExp(`^backed up ${live} into ${backupDir}: platform\\.db, \\d+ project file\\(s\\), master\\.key`));
      assert.ok(acked.every((a, i) => a.length > promised[i]!.length), 'writes went on while the backup ran');
      t.diagnostic(`backup took ${tookMs} ms (the command, start to exit); rows acknowledged before it: ${promised.map((a) => a.length).join('/')}, by its end: ${acked.map((a) => a.length).join('/')}`);
      await server.stop();
      server = undefined;

      const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
      assert.deepEqual([manifest.format, manifest.engine], [1, 'sqlite']);
      for (const p of projects) assert.ok(manifest.files.some((f: { path: string }) => f.path === `projects/${p.id}.db`));
      assert.equal(statSync(join(backupDir, 'master.key')).mode & 0o777, 0o600);

      const restoredRun = await cli(['restore', backupDir], { DATA_DIR: restored });
      assert.equal(restoredRun.code, 0, restoredRun.stdout + restoredRun.stderr);
      assert.equal(statSync(join(restored, 'master.key')).mode & 0o777, 0o600);
      assert.deepEqual(readdirSync(restored).sort(), ['master.key', 'platform.db', 'projects']);

      second = await startServer({ ...env, DATA_DIR: restored });
      await assertRestored(second.base, owner, projects, promised, api);
      // every project the restored platform lists has its store
      for (const p of (await callServer(second.base, 'GET', '/projects', { token: owner })).body)
        assert.equal((await callServer(second.base, 'GET', `/projects/${p.id}/tables`, { token: owner })).status, 200, `project ${p.id} (${p.name})`);
    } finally {
      await server?.stop();
      await second?.stop();
      await api.close();
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test('[sqlite] a project deleted after the platform was copied is left out whole; one created then is not in the backup', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'bp-backup-'));
    const [live, backupDir, restored] = ['live', 'backup', 'restored'].map((d) => join(parent, d)) as [string, string, string];
    try {
      const server = await startServer({ DATA_DIR: live });
      const owner = await register(server.base, 'backup-race@example.com');
      const ids = [];
      for (const name of ['a', 'b', 'c']) ids.push((await project(server.base, owner, name)).id);
      await server.stop();
      const [first, victim] = ids.sort() as [string, string];
      // the first project's file, held exclusively: the backup copies the platform, then waits on it
      const lock = new Database(join(live, 'projects', `${first}.db`));
      lock.pragma('locking_mode = EXCLUSIVE');
      // (a write: in this mode a connection holds the exclusive lock from its first write on)
      lock.exec('UPDATE _bp_meta SET version = version');
      const running = cli(['backup', backupDir], { DATA_DIR: live });
      while (!existsSync(join(backupDir, 'projects'))) await new Promise((r) => setTimeout(r, 10));
      // as the server deletes a project: its files, then (not yet: the backup reads the file first)
      // its row; and creates one: its file, then its row
      const platform = new Database(join(live, 'platform.db'));
      for (const suffix of ['', '-wal', '-shm']) rmSync(join(live, 'projects', `${victim}.db${suffix}`), { force: true });
      writeFileSync(join(live, 'projects', 'zzzznew.db'), '');
      platform.prepare("INSERT INTO projects (id, owner_id, name, created_at, updated_at) SELECT 'zzzznew', owner_id, 'new', created_at, updated_at FROM projects LIMIT 1").run();
      platform.close();
      lock.close();
      const res = await running;
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.match(res.stderr, new RegExp(`project ${victim} was deleted while the backup ran, or its deletion did not finish \\(its file is gone\\): left out`));
      const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
      assert.deepEqual(manifest.left_out, [victim]);
      assert.deepEqual(readdirSync(join(backupDir, 'projects')).sort(), ids.filter((id) => id !== victim).map((id) => `${id}.db`).sort());
      assert.equal((await cli(['restore', backupDir], { DATA_DIR: restored })).code, 0);
      const copy = new Database(join(restored, 'platform.db'), { readonly: true });
      assert.deepEqual(copy.prepare('SELECT id FROM projects ORDER BY id').all().map((r: any) => r.id), ids.filter((id) => id !== victim).sort());
      copy.close();
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test('[sqlite] with MASTER_KEY set, the backup holds no key and says so, also beside a master.key the server does not use', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'bp-backup-'));
    const [live, backupDir] = ['live', 'backup'].map((d) => join(parent, d)) as [string, string];
    try {
      const key = 'ab'.repeat(32);
      const server = await startServer({ DATA_DIR: live, MASTER_KEY: key });
      await register(server.base, 'backup-key@example.com');
      await server.stop();
      writeFileSync(join(live, 'master.key'), 'cd'.repeat(32), { mode: 0o600 }); // left from a run without MASTER_KEY
      const res = await cli(['backup', backupDir], { DATA_DIR: live, MASTER_KEY: key });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stderr, /MASTER_KEY is set, so the backup holds no key \(not the master\.key in .*, which the server does not use\)/);
      assert.equal(existsSync(join(backupDir, 'master.key')), false);
      const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
      assert.ok(!manifest.files.some((f: { path: string }) => f.path === 'master.key'));
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });

  test('[sqlite] bad input: nothing to back up, a non-empty target, a missing backup, a non-empty DATA_DIR (then --force), damaged files', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'bp-backup-'));
    const [live, backupDir, restored] = ['live', 'backup', 'restored'].map((d) => join(parent, d)) as [string, string, string];
    const expectFailure = async (args: string[], dataDir: string, message: RegExp) => {
      const res = await cli(args, { DATA_DIR: dataDir });
      assert.equal(res.code, 1, `${args.join(' ')}: ${res.stdout}${res.stderr}`);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, message);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    };
    try {
      await expectFailure(['backup', backupDir], join(parent, 'nothing'), /^baseplate backup: no Baseplate data in .*nothing \(no platform\.db\)/);
      assert.equal(existsSync(backupDir), false);
      const server = await startServer({ DATA_DIR: live, MASTER_KEY: '' });
      const owner = await register(server.base, 'backup-bad@example.com');
      const p = await project(server.base, owner, 'a');
      await server.stop();
      mkdirSync(join(parent, 'full'));
      writeFileSync(join(parent, 'full', 'x'), 'x');
      await expectFailure(['backup', join(parent, 'full')], live, /^baseplate backup: .*full is not empty: a backup goes into a new or empty directory/);
      // a directory that cannot be made (Node 20's recursive mkdir spun forever under /proc)
      await expectFailure(['backup', '/proc/bp-backup-test/x'], live, /^baseplate backup: cannot create \/proc\/bp-backup-test\/x for the backup: ENOENT/);
      await expectFailure(['restore', join(parent, 'absent')], restored, /^baseplate restore: .*absent does not exist or is not a directory/);
      await expectFailure(['restore', join(parent, 'full')], restored, /^baseplate restore: .*full is not a finished backup: it has no manifest\.json/);
      assert.equal(existsSync(restored), false);

      assert.equal((await cli(['backup', backupDir], { DATA_DIR: live })).code, 0);
      mkdirSync(restored);
      writeFileSync(join(restored, 'platform.db'), 'not mine to overwrite');
      await expectFailure(['restore', backupDir], restored, /^baseplate restore: DATA_DIR .*restored is not empty: restore replaces nothing unless told to with --force/);
      assert.equal(readFileSync(join(restored, 'platform.db'), 'utf8'), 'not mine to overwrite');
      writeFileSync(join(restored, 'platform.db-wal'), 'a stale WAL must not survive');
      const forced = await cli(['restore', backupDir, '--force'], { DATA_DIR: restored });
      assert.equal(forced.code, 0, forced.stderr);
      assert.deepEqual(readdirSync(restored).sort(), ['master.key', 'platform.db', 'projects']);

      // --force over a DATA_DIR a server is running on: refused, the server's files untouched
      const running = await startServer({ DATA_DIR: restored, MASTER_KEY: '' });
      try {
        const files = () => readdirSync(restored).sort().map((f) => [f, statSync(join(restored, f)).ino]);
        const before = files();
        await expectFailure(['restore', backupDir, '--force'], restored, /^baseplate restore: DATA_DIR .*restored is in use: a server has its platform\.db open; stop it first \(nothing was changed\)/);
        assert.deepEqual(files(), before);
        assert.equal((await callServer(running.base, 'GET', `/projects/${p.id}`, { token: owner })).status, 200, 'the server still serves its data');
      } finally {
        await running.stop();
      }

      // a damaged byte: the checksum says so, and DATA_DIR stays as it was
      const file = join(backupDir, 'projects', `${p.id}.db`);
      const good = readFileSync(file);
      const bad = Buffer.from(good);
      bad[bad.length - 100] ^= 0xff;
      writeFileSync(file, bad);
      const target = join(parent, 'target');
      await expectFailure(['restore', backupDir], target, new RegExp(`^baseplate restore: projects/${p.id}\\.db does not match the manifest \\(.*checksum differs\\): the backup was changed or damaged`));
      assert.deepEqual(readdirSync(target), []);

      // a file damaged before its checksum was taken (the manifest agrees with it): integrity_check finds it
      writeFileSync(file, Buffer.concat([good.subarray(0, 4096), Buffer.alloc(good.length - 4096, 0x5a)]));
      const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
      const entry = manifest.files.find((f: { path: string }) => f.path === `projects/${p.id}.db`);
      entry.sha256 = (await import('node:crypto')).createHash('sha256').update(readFileSync(file)).digest('hex');
      writeFileSync(join(backupDir, 'manifest.json'), JSON.stringify(manifest));
      await expectFailure(['restore', backupDir], target, new RegExp(`^baseplate restore: projects/${p.id}\\.db failed PRAGMA integrity_check: `));
      assert.deepEqual(readdirSync(target), []);

      // a manifest naming a path outside the backup is refused before anything is read
      entry.path = '../../etc/passwd';
      writeFileSync(join(backupDir, 'manifest.json'), JSON.stringify(manifest));
      await expectFailure(['restore', backupDir], target, /^baseplate restore: .*manifest\.json names a file it may not: "\.\.\/\.\.\/etc\/passwd"/);

      // a damaged live file (two indexes of one table swapped: every page reads, the check fails): the backup refuses, and leaves nothing behind
      const damage = new Database(join(live, 'projects', `${p.id}.db`));
      const root = (name: string) => (damage.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(name) as { rootpage: number }).rootpage;
      const [byId, byName] = [root('sqlite_autoindex__bp_tables_1'), root('sqlite_autoindex__bp_tables_2')];
      damage.unsafeMode(true); // off: SQLite's defensive mode, which forbids writing the schema table
      damage.pragma('writable_schema = ON');
      damage.prepare('UPDATE sqlite_master SET rootpage = CASE rootpage WHEN ? THEN ? ELSE ? END WHERE rootpage IN (?, ?)').run(byId, byName, byId, byId, byName);
      damage.close();
      assert.notEqual(byId, byName);
      await expectFailure(['backup', join(parent, 'second')], live, new RegExp(`^baseplate backup: projects/${p.id}\\.db in DATA_DIR is damaged \\(PRAGMA integrity_check: .*\\); no backup was written\\n$`));
      assert.equal(existsSync(join(parent, 'second')), false);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
}

if (engines.includes('postgres')) {
  test('[postgres] backup and restore refuse a PostgreSQL deployment and point to pg_dump / pg_restore', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'bp-backup-'));
    try {
      const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres', DATA_DIR: join(parent, 'data') };
      const backup = await cli(['backup', join(parent, 'b')], env);
      assert.equal(backup.code, 1);
      assert.match(backup.stderr, /^baseplate backup: DATABASE_URL is set: .*use pg_dump \(README, "Backups"\)\n$/);
      const restore = await cli(['restore', parent], env);
      assert.equal(restore.code, 1);
      assert.match(restore.stderr, /^baseplate restore: DATABASE_URL is set: .*pg_restore \(README, "Backups"\)\n$/);
      assert.deepEqual(readdirSync(parent), []);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
}
