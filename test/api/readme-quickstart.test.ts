// The README's quick start runs as written (issue [H]): its shell block, taken from the README,
// run by bash with curl against the service as `npm start` runs it (node dist/main.js) on a fresh
// temp data directory, and on a fresh PostgreSQL database; only BASE is set, which the block reads.
// The final select must return the row the end user inserted, and the anonymous one nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../src/bundles.ts';
import { startServer } from '../support/server-process.ts';
import { createTestDatabase, testEngines } from '../support/postgres.ts';

/** The first ```sh block after the "## Quick start" heading. */
function quickStart(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Quick start\n'));
  const m = /\n```sh\n([^]*?)\n```\n/.exec(section);
  assert.ok(readme.includes('\n## Quick start\n') && m, 'the README has a Quick start section with a sh block');
  return m[1]!;
}

function bash(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn('bash', ['-euo', 'pipefail', '-c', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const { engines, skipReason } = await testEngines();
for (const kind of engines) {
  test(`the README quick start runs top to bottom and the final select returns the inserted row [${kind}]`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bp-quickstart-'));
    const db = kind === 'postgres' ? await createTestDatabase() : null;
    const server = await startServer(db ? { DATABASE_URL: db.url } : { DATA_DIR: dataDir });
    try {
      const run = await bash(quickStart(), { BASE: server.base });
      assert.equal(run.code, 0, `the block exits 0\nstdout:\n${run.stdout}\nstderr:\n${run.stderr}`);
      const answers = run.stdout.trim().split('\n').map((line) => JSON.parse(line));
      assert.equal(answers.length, 10, 'each of the ten calls printed one JSON answer');
      for (const [i, a] of answers.entries()) assert.ok(!(a && typeof a === 'object' && 'code' in a && 'hint' in a), `call ${i + 1} is no error: ${JSON.stringify(a)}`);
      assert.deepEqual(answers[8], [], 'the anonymous select sees nothing');
      assert.deepEqual(answers[9], [{ id: 1, title: 'Write the quick start', done: false }], 'the final select returns the inserted row');
    } finally {
      await server.stop();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
if (skipReason) test('the README quick start [postgres]', { skip: skipReason }, () => undefined);
