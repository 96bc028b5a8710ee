// Operations: secrets never reach the logs, and /health tells when the database is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registerAccount, startTestApp, uniqueEmail } from '../support/app.ts';
import { testEngines } from '../support/postgres.ts';
import { startServer } from '../support/server-process.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { engines, skipReason } = await testEngines();

for (const kind of engines) {
  test(`[${kind}] tokens, keys and passwords never appear in the logs, even at trace level`, async () => {
    const lines: string[] = [];
    const t = await startTestApp(kind, { LOG_LEVEL: 'trace' }, { write: (l) => void lines.push(l) });
    try {
      const password = 'very secret password';
      const email = uniqueEmail('logs');
      const reg = await t.req('POST', '/auth/register', { body: { name: 'L', email, password } });
      const token = reg.body.token as string;
      await t.req('POST', '/auth/login', { body: { email, password: 'wrong password 123' } });
      const project = (await t.req('POST', '/projects', { token, body: { name: 'p' } })).body;
      await t.req('POST', `/projects/${project.id}/tables`, { token, body: { name: 'n', columns: [{ name: 'b', type: 'text' }] } });
      const key = (await t.req('POST', `/projects/${project.id}/keys`, { token, body: { name: 'k', permissions: ['select'] } })).body.key as string;
      const user = (await t.req('POST', `/${project.id}/auth/register`, { body: { email: uniqueEmail('eu'), password } })).body.token as string;
      await t.req('GET', `/${project.id}/rest/n`, { headers: { authorization: `Bearer ${key}`, 'x-user-token': user } });
      await t.req('GET', `/${project.id}/rest/n`, { headers: { authorization: `Bearer ${key.slice(0, 63)}0` } });
      await t.req('PATCH', '/auth/me', { token, body: { password: 'another secret pass', current_password: password } });
      const all = lines.join('');
      assert.ok(all.length > 0, 'something was logged');
      for (const secret of [token, key, user, password, 'another secret pass', 'wrong password 123']) {
        assert.ok(!all.includes(secret), `a secret leaked into the logs: ${secret.slice(0, 6)}…`);
      }
    } finally {
      await t.close();
    }
  });

  test(`[${kind}] one log line per request: method, path without the query, status, time, request id and, for an error, its code`, async () => {
    const lines: string[] = [];
    const t = await startTestApp(kind, { LOG_LEVEL: 'info' }, { write: (l) => void lines.push(l) });
    try {
      await t.req('GET', '/health?secret-filter=eq.42');
      await t.req('GET', '/projects');
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const ok = entries.filter((e) => e.path === '/health');
      assert.equal(ok.length, 1, 'exactly one line for the request');
      assert.equal(ok[0].method, 'GET');
      assert.equal(ok[0].status, 200);
      assert.equal(typeof ok[0].ms, 'number');
      assert.equal(typeof ok[0].reqId, 'string');
      assert.ok(!lines.join('').includes('secret-filter'), 'the query string is not logged');
      const refused = entries.filter((e) => e.path === '/projects');
      assert.equal(refused.length, 1);
      assert.equal(refused[0].status, 401);
      assert.equal(refused[0].code, 'missing_token');
    } finally {
      await t.close();
    }
  });

  test(`[${kind}] a refused (4xx) or failed (5xx) request's line carries its error code and the request id its answer carried`, async () => {
    const lines: string[] = [];
    const t = await startTestApp(kind, { LOG_LEVEL: 'info' }, { write: (l) => void lines.push(l) });
    const { token } = await registerAccount(t);
    const refused = await t.req('POST', '/projects', { token, body: { name: '' } });
    // refused by the router itself, before any hook
    const malformed = await t.req('GET', '/projects/%zz');
    // the database gone under a running app: every platform query fails
    await t.engine.close();
    const failed = await t.req('GET', '/projects', { token });
    await t.app.close();
    await t.close().catch(() => undefined);
    assert.equal(refused.status, 422);
    assert.equal(malformed.status, 400);
    assert.ok(failed.status >= 500, `${failed.status} ${JSON.stringify(failed.body)}`);
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const [res, level] of [[refused, 'info'], [malformed, 'info'], [failed, 'error']] as const) {
      const line = entries.find((e) => e.reqId === res.headers['x-request-id'] && e.status === res.status);
      assert.ok(line, `no line for ${res.status} ${res.headers['x-request-id']}:\n${lines.join('')}`);
      assert.equal(line.level, level);
      assert.equal(line.code, res.body.code);
      assert.equal(typeof line.code, 'string');
    }
  });

  test(`[${kind}] GET /health answers 503 once the database is unreachable`, async () => {
    const t = await startTestApp(kind);
    assert.equal((await t.req('GET', '/health')).status, 200);
    await t.engine.close();
    const res = await t.req('GET', '/health');
    assert.equal(res.status, 503);
    assert.deepEqual(res.body, { status: 'unavailable' });
    // the engine is already closed; close the rest without it
    await t.app.close();
    await t.close().catch(() => undefined);
  });
}
if (skipReason) test('operations [postgres]', { skip: skipReason }, () => undefined);

if (engines.includes('postgres')) {
  test('[postgres] a passthrough query past STATEMENT_TIMEOUT_MS is cancelled with 503 query_timeout', async () => {
    const t = await startTestApp('postgres');
    const { buildServices } = await import('../../src/services/index.ts');
    const { buildApp } = await import('../../src/app.ts');
    const { PostgresEngine } = await import('../../src/storage/postgres/postgres-engine.ts');
    const { QueryTimeout } = await import('../../src/storage/engine.ts');
    const { dataPlane } = await import('../support/data-plane.ts');
    const d = await dataPlane(t);
    const table = await d.createTable('big', [{ name: 'name', type: 'text' }]);
    const db = await t.engine.project(d.pid);
    await db.run(`INSERT INTO ${db.t('big')} (name) SELECT 'row ' || g FROM generate_series(1, 300000) AS g`);
    // the same database, served by a second node whose statement timeout is tiny
    const config = { ...t.config, statementTimeoutMs: 20 };
    const engine = await PostgresEngine.open(t.config.databaseUrl!, { poolSize: 2, statementTimeoutMs: 20 });
    const app = await buildApp({ config, engine, services: buildServices(engine, config, t.clock, { log: { warn: () => undefined }, secrets: t.secrets }) });
    try {
      await assert.rejects((await engine.project(d.pid)).get('SELECT pg_sleep(1)'), QueryTimeout);
      assert.equal((await d.policy(table.id, 'SELECT', "LOWER(CONCAT(name, name, name)) LIKE '%zzz%'")).status, 201);
      const res = await app.inject({ method: 'GET', url: `/${d.pid}/rest/big?select=id&limit=5`, headers: { authorization: `Bearer ${d.keys.all}` } });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'query_timeout');
      // the normal node, with the default timeout, answers the same query
      const ok = await d.rest('GET', 'big?select=id&limit=5');
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body, []);
    } finally {
      await app.close();
      await engine.close();
      await t.close();
    }
  });
}

test('[sqlite] Node\'s own warnings are lines of the service\'s logger, not stderr text', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-warning-'));
  // emits a process warning once the service has installed its handlers (the same synchronous step
  // installs its uncaughtException listener)
  const preload = join(dir, 'warn.mjs');
  writeFileSync(preload, "const t = setInterval(() => { if (process.listenerCount('uncaughtException') > 0) { clearInterval(t); process.emitWarning('a warning from a preloaded module', 'TestWarning'); } }, 5);\n");
  const server = await startServer({ DATA_DIR: join(dir, 'data'), NODE_OPTIONS: `--import ${preload}` });
  try {
    const deadline = Date.now() + 10000;
    while (!server.output().includes('a warning from a preloaded module') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const lines = server.output().split('\n').filter((l) => l.includes('a warning from a preloaded module'));
    assert.equal(lines.length, 1, server.output());
    assert.deepEqual((({ level, warning, msg }) => ({ level, warning, msg }))(JSON.parse(lines[0]!)), { level: 'warn', warning: 'TestWarning', msg: 'a warning from a preloaded module' });
    assert.ok(!server.output().includes('(node:'), server.output());
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
