// PostgreSQL outages seen through a TCP proxy of our own (the shared server is never touched):
// refused connections, connections reset mid-query, a listener that never answers, and a partition
// that heals. Every request fails within a bounded time with 503 database_unavailable (flat, with
// Retry-After), /health answers 503 within a bounded time, and the service recovers by itself.
import { test, before, after, afterEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config.ts';
import { engineOptions, openEngine } from '../../src/storage/open-engine.ts';
import { buildServices } from '../../src/services/index.ts';
import { buildApp } from '../../src/app.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import type { Engine } from '../../src/storage/engine.ts';
import { TEST_ENV, TestClock, expectError, type Reply } from '../support/app.ts';
import { createTestDatabase, testEngines, PG_ADMIN_URL, type TestDatabase } from '../support/postgres.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

const { engines, skipReason } = await testEngines();

// Small timeouts so that each scenario takes seconds; the bounds asserted are generous multiples.
// The statement timeout leaves a blocked request a few seconds in which the test cuts it off.
const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 3000;
const QUERY_TIMEOUT_MS = 4000;
const BOUND_MS = 15000;
// a test that hangs (the failure this file guards against) fails instead
const TEST_TIMEOUT_MS = 90000;

if (engines.includes('postgres')) {
  describe('[postgres] database outages through a TCP proxy', () => {
    let db: TestDatabase;
    let proxy: TcpProxy;
    let engine: Engine;
    let app: FastifyInstance;
    /** holds locks (inside its transaction pg_stat_activity would not change: a separate observer polls it) */
    let admin: pg.Client;
    let observer: pg.Client;
    let pid: string;
    let key: string;

    async function req(method: string, url: string, opts: { token?: string; body?: unknown } = {}): Promise<Reply & { ms: number }> {
      const started = Date.now();
      const headers: Record<string, string> = {};
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const res = await app.inject({ method: method as never, url, headers, payload: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
      const body = res.body.length > 0 ? JSON.parse(res.body) : undefined;
      return { status: res.statusCode, body, headers: res.headers, ms: Date.now() - started };
    }
    const readRows = () => req('GET', `/${pid}/rest/notes?select=body`, { token: key });
    const writeRow = (body: string) => req('POST', `/${pid}/rest/notes`, { token: key, body: { body } });

    function expectUnavailable(res: Reply & { ms: number }, reason?: string): void {
      const err = expectError(res, 503, 'database_unavailable');
      if (reason) assert.equal(err.details.reason, reason);
      assert.match(err.hint, /retry/i);
      assert.equal(res.headers['retry-after'], '5');
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      assert.ok(res.ms < BOUND_MS, `answered after ${res.ms} ms`);
      assert.ok(!JSON.stringify(res.body).includes('ECONN') && !JSON.stringify(res.body).includes('SELECT'), 'no driver detail in the response');
    }

    async function health(): Promise<{ status: number; ms: number }> {
      const res = await req('GET', '/health');
      return { status: res.status, ms: res.ms };
    }

    /** The service recovers by itself: soon (at most a few failed attempts) reads and writes work again. */
    async function expectRecovery(): Promise<void> {
      const deadline = Date.now() + BOUND_MS;
      while ((await health()).status !== 200) {
        assert.ok(Date.now() < deadline, '/health did not recover');
        await new Promise((r) => setTimeout(r, 100));
      }
      const write = await writeRow('after recovery');
      assert.equal(write.status, 201, JSON.stringify(write.body));
      assert.equal((await readRows()).status, 200);
    }

    /** Service backends of the test database waiting on a lock (the admin connection holds it). */
    /** Until at least (or at most) `n` statements of this database wait on a lock. */
    async function waitForBlocked(n: number, bound: 'at least' | 'at most' = 'at least'): Promise<void> {
      const deadline = Date.now() + BOUND_MS;
      for (;;) {
        const r = await observer.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'",
          [db.name],
        );
        if (bound === 'at least' ? r.rows[0].n >= n : r.rows[0].n <= n) return;
        assert.ok(Date.now() < deadline, `${r.rows[0].n} statements wait on the lock, not ${bound} ${n}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    before(async () => {
      db = await createTestDatabase();
      const target = new URL(PG_ADMIN_URL);
      proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
      const config = loadConfig({
        ...TEST_ENV,
        DATABASE_URL: proxy.urlFor(db.url),
        STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        PG_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
        PG_POOL_SIZE: '6',
        PROJECT_CONCURRENCY: '3', // the three requests of the reset scenario wait on one lock together
      });
      engine = await openEngine(engineOptions(config));
      const services = buildServices(engine, config, new TestClock(), { log: { warn: () => undefined }, secrets: new SecretBox(randomBytes(32)) });
      app = await buildApp({ config, engine, services });
      const owner = (await req('POST', '/auth/register', { body: { name: 'o', email: 'outage@example.com', password: 'password 123' } })).body.token;
      pid = (await req('POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
      assert.equal((await req('POST', `/projects/${pid}/tables`, { token: owner, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).status, 201);
      key = (await req('POST', `/projects/${pid}/keys`, { token: owner, body: { name: 'k', permissions: ['select', 'insert'] } })).body.key;
      // direct, not through the proxy
      admin = new pg.Client({ connectionString: db.url });
      observer = new pg.Client({ connectionString: db.url });
      await Promise.all([admin.connect(), observer.connect()]);
    });

    // each scenario starts from a healthy network, whatever the previous one left
    afterEach(async () => {
      await admin.query('ROLLBACK').catch(() => undefined);
      proxy.killAfterHandshake(false);
      await proxy.forward();
    });

    after(async () => {
      await admin?.end().catch(() => undefined);
      await observer?.end().catch(() => undefined);
      await app?.close();
      await engine?.close().catch(() => undefined);
      await proxy?.close();
      await db?.drop();
    });

    test('refused connections: 503 database_unavailable at once, /health 503, recovery when the server is back', { timeout: TEST_TIMEOUT_MS }, async () => {
      assert.equal((await writeRow('before')).status, 201);
      await proxy.refuse();
      proxy.resetAll(); // the pooled connections die with the server
      await new Promise((r) => setTimeout(r, 100));
      expectUnavailable(await readRows(), 'unreachable');
      expectUnavailable(await writeRow('refused'), 'unreachable');
      const h = await health();
      assert.equal(h.status, 503);
      assert.ok(h.ms < BOUND_MS);
      await proxy.forward();
      await expectRecovery();
    });

    test('connections reset mid-query (a read and two writes waiting on a lock): 503, nothing written, then recovery', { timeout: TEST_TIMEOUT_MS }, async () => {
      await admin.query('BEGIN');
      await admin.query(`LOCK TABLE "p_${pid}"."notes" IN ACCESS EXCLUSIVE MODE`);
      const sentAt = performance.now();
      const pending = [readRows(), writeRow('blocked 1'), writeRow('blocked 2')];
      await waitForBlocked(3);
      proxy.resetAll();
      for (const res of await Promise.all(pending)) expectUnavailable(res, 'connection_lost');
      // a write of one statement has no transaction to lose: the server notices that its client is
      // gone and cancels it (client_connection_check_interval, every second), well before the
      // statement timeout would, so the lock's release cannot let it commit
      await waitForBlocked(0, 'at most');
      assert.ok(performance.now() - sentAt < STATEMENT_TIMEOUT_MS, 'the server let go of the statements before their timeout');
      await admin.query('ROLLBACK');
      await expectRecovery();
      const rows = (await readRows()).body.map((r: { body: string }) => r.body);
      assert.ok(!rows.includes('blocked 1') && !rows.includes('blocked 2'), 'a transaction cut off is not committed');
    });

    test('connections that die right after their handshake (before a request holds them): 503, the process goes on', { timeout: TEST_TIMEOUT_MS }, async () => {
      proxy.resetAll(); // no pooled connection left: every request needs a new one
      await new Promise((r) => setTimeout(r, 100));
      proxy.killAfterHandshake(true);
      const results = await Promise.all([readRows(), writeRow('killed'), readRows()]);
      for (const res of results) expectUnavailable(res, 'connection_lost');
      proxy.killAfterHandshake(false);
      await expectRecovery();
    });

    test('a listener that accepts and never answers: 503 within the connect timeout, /health too', { timeout: TEST_TIMEOUT_MS }, async (t) => {
      proxy.resetAll(); // no pooled connection left: every request needs a new one
      await new Promise((r) => setTimeout(r, 100));
      proxy.silence();
      const [read, write, h] = await Promise.all([readRows(), writeRow('silent'), health()]);
      t.diagnostic(`answered after: read ${read.ms} ms, write ${write.ms} ms, /health ${h.ms} ms`);
      expectUnavailable(read, 'unreachable');
      expectUnavailable(write, 'unreachable');
      assert.equal(h.status, 503);
      assert.ok(h.ms < BOUND_MS, `/health took ${h.ms} ms`);
      await proxy.forward();
      await expectRecovery();
    });

    test('a partition (open connections go silent too): bounded 503s, then recovery when it heals', { timeout: TEST_TIMEOUT_MS }, async (t) => {
      // warm the pool: idle connections that the partition will cut
      await Promise.all([readRows(), readRows(), writeRow('warm')]);
      proxy.silence();
      const [read, write, h] = await Promise.all([readRows(), writeRow('partitioned'), health()]);
      t.diagnostic(`answered after: read ${read.ms} ms, write ${write.ms} ms, /health ${h.ms} ms`);
      expectUnavailable(read);
      expectUnavailable(write);
      assert.equal(h.status, 503);
      assert.ok(h.ms < BOUND_MS, `/health took ${h.ms} ms`);
      // later requests during the partition are bounded too
      expectUnavailable(await readRows());
      await proxy.forward();
      await expectRecovery();
    });

    test('a transaction cut off by a partition does not keep its locks on the server', { timeout: TEST_TIMEOUT_MS }, async () => {
      await admin.query('BEGIN');
      await admin.query(`LOCK TABLE "p_${pid}"."notes" IN ACCESS EXCLUSIVE MODE`);
      const pending = writeRow('cut off');
      await waitForBlocked(1);
      proxy.silence();
      // the INSERT now runs; its answer, and the COMMIT, never cross the partition: the backend
      // sits idle in its transaction, holding the new row's locks
      await admin.query('ROLLBACK');
      expectUnavailable(await pending);
      const deadline = Date.now() + BOUND_MS;
      for (;;) {
        const r = await observer.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state LIKE 'idle in transaction%'", [db.name]);
        if (r.rows[0].n === 0) break;
        assert.ok(Date.now() < deadline, 'the server still keeps the cut-off transaction open');
        await new Promise((r) => setTimeout(r, 100));
      }
      // the table takes an exclusive lock at once: nothing holds it any more
      await observer.query("SET lock_timeout = '1s'");
      await observer.query('BEGIN');
      await observer.query(`LOCK TABLE "p_${pid}"."notes" IN ACCESS EXCLUSIVE MODE`);
      await observer.query('ROLLBACK');
      await proxy.forward();
      await expectRecovery();
    });
  });
} else {
  test('database outages through a TCP proxy [postgres]', { skip: skipReason }, () => undefined);
}
