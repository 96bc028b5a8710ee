// A PostgreSQL connection that dies under a request (pg_terminate_backend here; a server restart, a
// failover or a network reset alike) fails only the requests that used it, with 503
// database_unavailable, and the service goes on and recovers by itself. A real server process, so
// that a crash would be seen. Only the backends of this test's own database are terminated.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';
import { startServer, type ServerProcess } from '../support/server-process.ts';

const { engines, skipReason } = await testEngines();
const PASSWORD = 'pw-Secr3t'; // in DATABASE_URL (trust auth never asks for it): it must not reach the logs
const BOUND_MS = 15000;
// a test that hangs (the failure this file guards against) fails instead
const TEST_TIMEOUT_MS = 90000;

interface Res {
  status: number;
  body: any;
  headers: Headers;
}

if (engines.includes('postgres')) {
  describe('[postgres] dropped connections under load', () => {
    let db: TestDatabase;
    let server: ServerProcess;
    let admin: pg.Client;
    let observer: pg.Client;
    let ownPids: number[];
    let pid: string;
    let key: string;

    async function call(method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<Res> {
      const headers: Record<string, string> = {};
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(server.base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: AbortSignal.timeout(BOUND_MS) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
    }
    const write = (body: string) => call('POST', `/${pid}/rest/notes`, { token: key, body: { body } });
    const read = () => call('GET', `/${pid}/rest/notes?select=body&limit=5`, { token: key });

    function expectUnavailable(res: Res, reasons = ['connection_lost']): void {
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'details', 'hint', 'message']);
      assert.equal(res.body.code, 'database_unavailable');
      assert.ok(reasons.includes(res.body.details.reason), res.body.details.reason);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    }

    function expectAlive(): void {
      assert.equal(server.proc.exitCode, null, `the service exited:\n${server.output().slice(-3000)}`);
      assert.equal(server.proc.signalCode, null);
    }

    /** Terminates every backend of this test's database except the test's own two. */
    async function terminateServiceBackends(): Promise<number> {
      const r = await observer.query(
        'SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> ALL($2::int[])) AS t',
        [db.name, ownPids],
      );
      return r.rows[0].n;
    }

    async function waitForBlocked(n: number): Promise<void> {
      const deadline = Date.now() + BOUND_MS;
      for (;;) {
        // the requests' statements; not the node's measure of the project's storage (PROJECT_MAX_BYTES), which waits on the lock too
        const r = await observer.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> ALL($2::int[]) AND query NOT LIKE '%pg_total_relation_size%'",
          [db.name, ownPids],
        );
        if (r.rows[0].n >= n) return;
        assert.ok(Date.now() < deadline, `only ${r.rows[0].n} of ${n} requests reached the lock`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    async function expectRecovery(): Promise<void> {
      const deadline = Date.now() + BOUND_MS;
      while ((await call('GET', '/health')).status !== 200) {
        assert.ok(Date.now() < deadline, '/health did not recover');
        await new Promise((r) => setTimeout(r, 100));
      }
      const w = await write('after');
      assert.equal(w.status, 201, JSON.stringify(w.body));
      assert.equal((await read()).status, 200);
    }

    before(async () => {
      db = await createTestDatabase();
      const url = new URL(db.url);
      url.password = PASSWORD;
      // six requests of one project wait on one lock together: its share must hold them all
      server = await startServer({ DATABASE_URL: url.toString(), PG_POOL_SIZE: '10', PROJECT_CONCURRENCY: '8' });
      const owner = (await call('POST', '/auth/register', { body: { name: 'o', email: 'loss@example.com', password: 'password 123' } })).body.token;
      pid = (await call('POST', '/projects', { token: owner, body: { name: 'p' } })).body.id;
      assert.equal((await call('POST', `/projects/${pid}/tables`, { token: owner, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).status, 201);
      key = (await call('POST', `/projects/${pid}/keys`, { token: owner, body: { name: 'k', permissions: ['select', 'insert'] } })).body.key;
      admin = new pg.Client({ connectionString: db.url });
      observer = new pg.Client({ connectionString: db.url });
      await Promise.all([admin.connect(), observer.connect()]);
      ownPids = await Promise.all([admin, observer].map(async (c) => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number));
    });

    after(async () => {
      // a request that failed because the service died shows no cause of its own: show the service's last words
      if (server && (server.proc.exitCode !== null || server.proc.signalCode !== null))
        process.stderr.write(`\nthe service exited (${server.proc.exitCode ?? server.proc.signalCode}):\n${server.output().slice(-4000)}\n`);
      await admin?.end().catch(() => undefined);
      await observer?.end().catch(() => undefined);
      await server?.stop();
      await db?.drop();
    });

    test('five rounds: backends terminated under writes (inside transactions) and reads fail those requests only', { timeout: TEST_TIMEOUT_MS }, async () => {
      for (let round = 0; round < 5; round++) {
        // the lock holds every request inside its statement (the writes inside their transactions)
        // until the backends are terminated
        await admin.query('BEGIN');
        await admin.query(`LOCK TABLE "p_${pid}"."notes" IN ACCESS EXCLUSIVE MODE`);
        const pending = [write(`r${round} a`), write(`r${round} b`), write(`r${round} c`), read(), read(), read()];
        await waitForBlocked(pending.length);
        assert.ok((await terminateServiceBackends()) >= pending.length);
        const results = await Promise.all(pending);
        await admin.query('ROLLBACK');
        for (const res of results) expectUnavailable(res);
        expectAlive();
        await expectRecovery();
        // the requests' ids are in the lines that logged them (written in batches, at most 200 ms late)
        await new Promise((r) => setTimeout(r, 500));
        const logged = server.output();
        for (const res of results) assert.ok(logged.includes(`"reqId":"${res.headers.get('x-request-id')}"`), 'the failure is logged with its request id');
      }
      const rows = (await call('GET', `/${pid}/rest/notes?select=body&body=like.r*`, { token: key })).body;
      assert.deepEqual(rows, [], 'no write cut off inside its transaction was committed');
    });

    test('repeated terminations under continuous load: only successes or 503 database_unavailable; the service survives', { timeout: TEST_TIMEOUT_MS }, async (t) => {
      const statuses = new Map<string, number>();
      let running = true;
      const worker = async (n: number) => {
        for (let i = 0; running; i++) {
          const res = await (i % 2 === 0 ? write(`load ${n}.${i}`) : read());
          // a connection being set up when its backend is terminated never served the request
          if (res.status >= 300) expectUnavailable(res, ['connection_lost', 'unreachable']);
          const label = res.status >= 300 ? `${res.status} ${res.body.code}` : String(res.status);
          statuses.set(label, (statuses.get(label) ?? 0) + 1);
        }
      };
      const workers = [0, 1, 2, 3, 4, 5].map(worker);
      let terminated = 0;
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 150));
        terminated += await terminateServiceBackends();
      }
      running = false;
      await Promise.all(workers);
      assert.ok(terminated > 0);
      assert.ok((statuses.get('201') ?? 0) > 0 && (statuses.get('200') ?? 0) > 0, JSON.stringify([...statuses]));
      t.diagnostic(`responses: ${JSON.stringify(Object.fromEntries(statuses))}, backends terminated: ${terminated}`);
      expectAlive();
      await expectRecovery();
      assert.ok(!server.output().includes(PASSWORD), 'the DATABASE_URL password reached the logs');
    });
  });
} else {
  test('dropped connections under load [postgres]', { skip: skipReason }, () => undefined);
}
