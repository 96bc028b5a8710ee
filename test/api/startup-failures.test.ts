// Start-up failures of the real service (src/main.ts): a missing database, a closed port, a
// listener that never answers, a bad setting. Each ends the process within a bounded time with a
// non-zero exit and one clear line, without a stack trace or the DATABASE_URL password.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testEngines, PG_ADMIN_URL } from '../support/postgres.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { runUntilExit } from '../support/server-process.ts';
import { fileLimit, FDS_PER_PROJECT } from '../../src/storage/sqlite/sqlite-open-limit.ts';

const { engines, skipReason } = await testEngines();
const PASSWORD = 'pw-Secr3t';
// generous: the process compiles TypeScript on start, on a shared machine
const BOUND_MS = 30000;

/** A postgres:// URL with a password (trust auth never asks for it) to `port` and `database`. */
function urlTo(port: number, database: string): string {
  const u = new URL(PG_ADMIN_URL);
  u.password = PASSWORD;
  u.hostname = '127.0.0.1';
  u.port = String(port);
  u.pathname = `/${database}`;
  return u.toString();
}

async function expectOneLineFailure(env: Record<string, string>, pattern: RegExp): Promise<void> {
  const res = await runUntilExit({ LOG_LEVEL: 'info', ...env }, BOUND_MS);
  assert.equal(res.killed, false, `still running after ${BOUND_MS} ms: ${res.stdout}${res.stderr}`);
  assert.notEqual(res.code, 0);
  assert.notEqual(res.code, null);
  const output = `${res.stdout}${res.stderr}`;
  assert.ok(!output.includes(PASSWORD), 'the password leaked');
  const lines = output.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, `expected one line, got:\n${output}`);
  const line = JSON.parse(lines[0]!);
  assert.equal(line.level, 'fatal');
  assert.match(line.msg, pattern);
  assert.doesNotMatch(line.msg, /\n|\s+at \S+ \(/);
}

// every setting is checked before the first side effect: the master key file, the database files
const BAD_SETTINGS: Array<[string, Record<string, string>, RegExp]> = [
  ['an unknown LOG_LEVEL', { LOG_LEVEL: 'verbose' }, /^invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got 'verbose'/],
  ['a short METRICS_TOKEN', { METRICS_TOKEN: 'short' }, /^invalid configuration: METRICS_TOKEN must be 16 to 1024 printable characters/],
  ['METRICS neither true nor false', { METRICS: 'yes' }, /^invalid configuration: METRICS must be true or false, got 'yes'/],
  ['a CORS_ORIGINS entry that is no origin', { CORS_ORIGINS: 'https://console.example.com/app' }, /^invalid configuration: CORS_ORIGINS must be .* got 'https:\/\/console\.example\.com\/app'/],
  ['a SHUTDOWN_TIMEOUT_MS that is no number', { SHUTDOWN_TIMEOUT_MS: 'soon' }, /^invalid configuration: SHUTDOWN_TIMEOUT_MS must be a whole number/],
  ['an SMTP_CA_FILE that does not exist', { SMTP_CA_FILE: '/nonexistent/ca.pem' }, /^invalid configuration: SMTP_CA_FILE: .*no such file/],
  ['an SQLITE_OPEN_PROJECTS beyond the file descriptors', { SQLITE_OPEN_PROJECTS: '1000000' }, /^invalid configuration: SQLITE_OPEN_PROJECTS=1000000 may need/],
];

// the test process's limit is the server's (Node raises both to the hard limit)
const files = fileLimit();
const tooManyOpen = files === null || (files * 0.75) / FDS_PER_PROJECT >= 1000000 ? `the file-descriptor limit (${files ?? 'unlimited'}) fits any SQLITE_OPEN_PROJECTS` : false;

for (const [what, env, pattern] of BAD_SETTINGS) {
  const skip = env.SQLITE_OPEN_PROJECTS ? tooManyOpen : false;
  test(`[sqlite] ${what}: one line naming it, exit 1, and nothing written (no master key, no database)`, { skip }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bp-startup-'));
    try {
      await expectOneLineFailure({ DATA_DIR: dataDir, MASTER_KEY: '', ...env }, pattern);
      assert.deepEqual(readdirSync(dataDir), []);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

if (engines.includes('postgres')) {
  const pgPort = Number(new URL(PG_ADMIN_URL).port || 5432);

  test('[postgres] a DATABASE_URL naming a missing database: one line, exit 1', async () => {
    const name = `bp_test_missing_${randomBytes(4).toString('hex')}`;
    await expectOneLineFailure({ DATABASE_URL: urlTo(pgPort, name) }, new RegExp(`^cannot open the database \\(PostgreSQL at 127\\.0\\.0\\.1:${pgPort}/${name}\\): .*${name}.* does not exist`));
  });

  test('[postgres] a closed port: one line, exit 1', async () => {
    const probe = net.createServer();
    const port = await new Promise<number>((r) => probe.listen(0, '127.0.0.1', () => r((probe.address() as net.AddressInfo).port)));
    await new Promise((r) => probe.close(r));
    await expectOneLineFailure({ DATABASE_URL: urlTo(port, 'postgres') }, /^cannot open the database \(PostgreSQL at 127\.0\.0\.1:\d+\/postgres\): .*ECONNREFUSED/);
  });

  test('[postgres] a listener that never answers: one line within the connect timeout, exit 1', async () => {
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: pgPort });
    proxy.silence();
    try {
      await expectOneLineFailure({ DATABASE_URL: urlTo(proxy.port, 'postgres'), PG_CONNECT_TIMEOUT_MS: '1000' }, /^cannot open the database \(PostgreSQL at 127\.0\.0\.1:\d+\/postgres\): .*timeout/i);
      assert.ok(proxy.accepted >= 1, 'the service did connect to the silent listener');
    } finally {
      await proxy.close();
    }
  });

  test('[postgres] an invalid PostgreSQL setting: one line, exit 1', async () => {
    await expectOneLineFailure({ DATABASE_URL: urlTo(pgPort, 'postgres'), STATEMENT_TIMEOUT_MS: '5000', PG_QUERY_TIMEOUT_MS: '4000' }, /^invalid configuration: PG_QUERY_TIMEOUT_MS .* greater than STATEMENT_TIMEOUT_MS/);
  });
} else {
  test('start-up failures [postgres]', { skip: skipReason }, () => undefined);
}
