// The README's PostgreSQL backup commands (pg_dump, pg_restore), run as written there: a live
// server under writes is dumped, the dump restored into a new database, and a server on it (same
// MASTER_KEY) serves every row acknowledged before the dump began, opens the sealed email secrets,
// and inserts new rows after the restored ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/bundles.ts';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';
import { startApiCapture } from '../support/mail-capture.ts';
import { callServer, startServer, type ServerProcess } from '../support/server-process.ts';
import { assertRestored, project, register, startWriting } from '../support/live-writes.ts';

const { engines, skipReason } = await testEngines();

/** The shell block that follows the pg-backup-commands marker in the README. */
function documentedCommands(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- pg-backup-commands[^>]*-->\n```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'the README has the pg-backup-commands block');
  return block[1]!;
}

function missingTools(): string | null {
  for (const tool of ['pg_dump', 'pg_restore']) if (spawnSync(tool, ['--version']).status !== 0) return `${tool} is not on PATH`;
  return null;
}

const why = skipReason ?? missingTools();
if (why && !skipReason) process.stderr.write(`\n!!! WARNING: ${why}: the PostgreSQL backup test is SKIPPED !!!\n\n`);

test('[postgres] the documented pg_dump / pg_restore of a live server under writes: a server on the restored database serves every acknowledged row', { skip: why ?? false }, async () => {
  const api = await startApiCapture();
  const work = mkdtempSync(join(tmpdir(), 'bp-pgdump-'));
  const dbs: TestDatabase[] = [];
  const servers: ServerProcess[] = [];
  try {
    const [source, target] = [await createTestDatabase(), await createTestDatabase()];
    dbs.push(source, target);
    const env = { MASTER_KEY: randomBytes(32).toString('hex'), EMAILAPI_BASE_URL: api.baseUrl };
    const live = await startServer({ ...env, DATABASE_URL: source.url });
    servers.push(live);
    const owner = await register(live.base, 'pgdump-owner@example.com');
    const projects = [await project(live.base, owner, 'a'), await project(live.base, owner, 'b')];
    const writes = await startWriting(live.base, projects);
    const promised = writes.acked.map((a) => [...a]);
    // asynchronously: the writers of this process go on while the commands run
    const run = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', documentedCommands()], {
      cwd: work,
      env: { PATH: process.env.PATH, DATABASE_URL: source.url, RESTORE_DATABASE_URL: target.url },
      timeout: 300000,
    }).then(() => null, (err: Error & { stderr?: string }) => err.stderr ?? err.message);
    await writes.stop();
    assert.equal(run, null, `the documented commands failed: ${run}`);
    assert.ok(writes.acked.every((a, i) => a.length > promised[i]!.length), 'writes went on while pg_dump ran');
    await live.stop();

    const restored = await startServer({ ...env, DATABASE_URL: target.url });
    servers.push(restored);
    await assertRestored(restored.base, owner, projects, promised, api);
    // the identity sequences came along: a new row gets an id after every restored one
    const p = projects[0]!;
    const ids = (await callServer(restored.base, 'GET', `/${p.id}/rest/notes?select=id`, { key: p.key })).body.map((r: { id: number }) => r.id);
    const inserted = await callServer(restored.base, 'POST', `/${p.id}/rest/notes`, { key: p.key, body: { n: -1 }, headers: { prefer: 'return=representation' } });
    assert.equal(inserted.status, 201, JSON.stringify(inserted.body));
    assert.ok(inserted.body[0].id > Math.max(...ids));
  } finally {
    for (const s of servers) await s.stop();
    for (const db of dbs) await db.drop();
    await api.close();
    rmSync(work, { recursive: true, force: true });
  }
});
