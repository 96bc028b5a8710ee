// The service as npm start runs it: node dist/main.js, built by the install step. No TypeScript
// loader anywhere at run time: not in the service, not in its sandbox processes; an engine's
// driver is loaded only by a service that uses that engine, and isolated-vm only by the sandboxes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, testEngines } from '../support/postgres.ts';
import { startServer, callServer } from '../support/server-process.ts';

const { engines, skipReason } = await testEngines();

const call = callServer;

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // the parent pid is the 4th field, after the command name in parentheses
        return Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === pid;
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
}

/** The module files a process has loaded, as far as /proc tells: the native ones are mapped. */
const mapped = (pid: number) => readFileSync(`/proc/${pid}/maps`, 'utf8');

for (const kind of engines) {
  test(`[${kind}] node dist/main.js serves, runs a function in a sandbox started from dist/, and never loads tsx`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bp-dist-'));
    const db = kind === 'postgres' ? await createTestDatabase() : null;
    const server = await startServer(db ? { DATABASE_URL: db.url } : { DATA_DIR: dataDir });
    try {
      const pid = server.proc.pid!;
      assert.match(cmdline(pid).join(' '), /dist\/main\.js$/);
      const reg = await call(server.base, 'POST', '/auth/register', { body: { name: 'n', email: `dist-${kind}@example.com`, password: 'password1' } });
      const owner = reg.body.token as string;
      const project = (await call(server.base, 'POST', '/projects', { token: owner, body: { name: 'p' } })).body;
      const deployed = await call(server.base, 'PUT', `/projects/${project.id}/functions/hello`, { token: owner, body: { code: 'export default () => ({ status: 200, body: { hi: 1 } });' } });
      assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
      const key = (await call(server.base, 'POST', `/projects/${project.id}/keys`, { token: owner, body: { name: 'k', permissions: ['function'] } })).body.key;
      const invoked = await call(server.base, 'POST', `/${project.id}/functions/hello`, { headers: { authorization: `Bearer ${key}` } });
      assert.deepEqual([invoked.status, invoked.body], [200, { hi: 1 }]);
      const sandboxes = childrenOf(pid).map((c) => cmdline(c).join(' ')).filter((c) => c.includes('function-worker'));
      assert.ok(sandboxes.length >= 1, 'a sandbox process runs');
      for (const c of [...sandboxes, cmdline(pid).join(' ')]) assert.ok(!c.includes('tsx'), `started with tsx: ${c}`);
      assert.ok(sandboxes.every((c) => /dist\/function-worker\.js$/.test(c)), sandboxes.join('\n'));
      // pg is pure JavaScript, invisible in the maps; better-sqlite3 is native and shows there
      const sqliteLoaded = mapped(pid).includes('better_sqlite3.node');
      assert.equal(sqliteLoaded, kind === 'sqlite', 'the SQLite driver is loaded only by the embedded engine');
      // isolated-vm lives in the sandbox processes only: the service keeps Node's start-up snapshot,
      // which a process that loads it must give up (--no-node-snapshot)
      assert.ok(!mapped(pid).includes('isolated_vm.node'), 'the service process does not load isolated-vm');
      assert.ok(!cmdline(pid).includes('--no-node-snapshot'), 'the service starts with the snapshot, as npm start runs it');
      assert.ok(sandboxes.every((c) => c.includes('--no-node-snapshot')), sandboxes.join('\n'));
    } finally {
      await server.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
if (skipReason) test('shipped build [postgres]', { skip: skipReason }, () => undefined);
