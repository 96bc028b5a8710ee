// The failed-login throttle (CONTRACT §0) under concurrency, on every engine and across two server
// processes on one PostgreSQL: an attempt is counted before its password is checked, so of 100
// simultaneous wrong passwords for one email from one IP exactly 10 are evaluated (argon2 runs 10
// times) and 90 get 429; a success removes its own attempt, so successes never count. Also: how
// clients are keyed (IPv6 by /64), attempts left pending by a dead process, keyed subject digests
// and the clean-up's index.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeEngines, registerAccount, createProject, uniqueEmail, expectError, type TestApp, type Reply } from '../support/app.ts';
import { createTestDatabase, testEngines, type TestDatabase } from '../support/postgres.ts';
import { startServer, type ServerProcess } from '../support/server-process.ts';
import { PENDING_BOUND_MS } from '../../src/services/login-throttle.ts';
import { subjectDigest } from '../../src/lib/tokens.ts';

const PASSWORD = 'the right password';
const WINDOW_S = 15 * 60;

/** Counts the password checks the services run (argon2 verifications, dummy ones included). */
function countChecks(t: TestApp): { readonly n: number; restore(): void } {
  const hasher = t.services.hasher;
  const original = hasher.verify;
  let n = 0;
  hasher.verify = async (stored, password, tenant) => {
    n++;
    return original.call(hasher, stored, password, tenant);
  };
  return {
    get n() {
      return n;
    },
    restore: () => void (hasher.verify = original),
  };
}

/** Holds the next `count` password checks until release() (later ones run at once); `started` counts them. */
function holdChecks(t: TestApp, count: number): { readonly started: number; release(): void; restore(): void } {
  const hasher = t.services.hasher;
  const original = hasher.verify;
  let started = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  hasher.verify = async (stored, password, tenant) => {
    if (++started <= count) await gate;
    return original.call(hasher, stored, password, tenant);
  };
  return {
    get started() {
      return started;
    },
    release,
    restore: () => void (hasher.verify = original),
  };
}

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

function tally(results: Reply[]): { 401: number; 429: number; other: number } {
  const out = { 401: 0, 429: 0, other: 0 };
  for (const r of results) {
    if (r.status === 401 && r.body.code === 'invalid_credentials') out[401]++;
    else if (r.status === 429 && r.body.code === 'rate_limited' && Number(r.headers['retry-after']) > 0) out[429]++;
    else out.other++;
  }
  return out;
}

/**
 * Like tally, for a burst larger than a project's queue in the PostgreSQL fair gate (the throttle's
 * statements run under the project's share, Engine.platformFor): those beyond it are refused 503
 * project_busy before they are counted, and are added to the 429s here.
 */
function tallyBurst(results: Reply[]): { 401: number; 429: number; other: number } {
  const busy = results.filter((r) => r.status === 503 && r.body.code === 'project_busy' && r.headers['retry-after'] === '1');
  const out = tally(results.filter((r) => !busy.includes(r)));
  return { ...out, 429: out[429] + busy.length };
}

/** A POST from the client address `ip` (the socket's: TRUST_PROXY is off here). */
async function postFrom(t: TestApp, url: string, body: unknown, ip: string): Promise<Reply> {
  const res = await t.app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' }, remoteAddress: ip });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null, headers: res.headers };
}

interface Door {
  what: string;
  /** a fresh subject: an email with the right password, and a login call (from 127.0.0.1 unless `ip`) */
  setup(t: TestApp): Promise<{ email: string; login(email: string, password: string, ip?: string): Promise<Reply> }>;
}

const doors: Door[] = [
  {
    what: 'platform accounts',
    async setup(t) {
      const { account } = await registerAccount(t, { password: PASSWORD });
      return { email: account.email, login: (email, password, ip = '127.0.0.1') => postFrom(t, '/auth/login', { email, password }, ip) };
    },
  },
  {
    what: 'end users',
    async setup(t) {
      const owner = await registerAccount(t);
      const project = await createProject(t, owner.token);
      const email = uniqueEmail('eu');
      assert.equal((await t.req('POST', `/${project.id}/auth/register`, { body: { email, password: PASSWORD } })).status, 201);
      return { email, login: (e, password, ip = '127.0.0.1') => postFrom(t, `/${project.id}/auth/login`, { email: e, password }, ip) };
    },
  },
];

await describeEngines('login throttle under concurrency', (ctx, kind) => {
  for (const door of doors) {
    test(`${door.what}: of 100 concurrent wrong passwords exactly 10 are checked (401), 90 get 429 with Retry-After`, async () => {
      const t = ctx();
      const { email, login } = await door.setup(t);
      const checks = countChecks(t);
      try {
        const results = await Promise.all(Array.from({ length: 100 }, (_, i) => login(email, `wrong password ${i}`)));
        assert.deepEqual(tallyBurst(results), { 401: 10, 429: 90, other: 0 });
        assert.equal(checks.n, 10, 'argon2 ran once per evaluated attempt');
      } finally {
        checks.restore();
      }
      // the right password is refused too now, without being checked
      const checksAfter = countChecks(t);
      try {
        expectError(await login(email, PASSWORD), 429, 'rate_limited');
        assert.equal(checksAfter.n, 0);
      } finally {
        checksAfter.restore();
      }
    });

    test(`${door.what}: unknown addresses are counted the same way`, async () => {
      const t = ctx();
      const { login } = await door.setup(t);
      const ghost = uniqueEmail('ghost');
      const checks = countChecks(t);
      try {
        const results = await Promise.all(Array.from({ length: 40 }, () => login(ghost, PASSWORD)));
        assert.deepEqual(tally(results), { 401: 10, 429: 30, other: 0 });
        assert.equal(checks.n, 10);
      } finally {
        checks.restore();
      }
    });

    test(`${door.what}: attempts still being checked hold their place (Retry-After 1 s); settled failures hold it for the window`, async () => {
      const t = ctx();
      const { email, login } = await door.setup(t);
      const held = holdChecks(t, 10);
      let wrong: Promise<Reply>[];
      try {
        wrong = Array.from({ length: 10 }, (_, i) => login(email, `wrong password ${i}`));
        await until(() => held.started >= 10);
        const busy = expectError(await login(email, PASSWORD), 429, 'rate_limited');
        assert.ok(busy);
      } finally {
        held.release();
        held.restore();
      }
      assert.deepEqual(tally(await Promise.all(wrong)), { 401: 10, 429: 0, other: 0 });
      const full = await login(email, PASSWORD);
      expectError(full, 429, 'rate_limited');
      const retry = Number(full.headers['retry-after']);
      assert.ok(retry > WINDOW_S - 60 && retry <= WINDOW_S, `Retry-After ${retry}`);
    });

    test(`${door.what}: a success removes its own attempt, also while others are checked at the same time`, async () => {
      const t = ctx();
      const { email, login } = await door.setup(t);
      for (let i = 0; i < 8; i++) expectError(await login(email, `wrong password ${i}`), 401);
      // one wrong and one right password at once: both are checked; only the wrong one stays counted
      const held = holdChecks(t, 2);
      let pair: Promise<Reply>[];
      try {
        pair = [login(email, 'wrong password 8'), login(email, PASSWORD)];
        await until(() => held.started >= 2);
        // 10 places taken (8 failures, 2 in progress): a third is told to come back in a second
        const busy = await login(email, 'wrong password 9');
        expectError(busy, 429, 'rate_limited');
        assert.equal(busy.headers['retry-after'], '1');
      } finally {
        held.release();
        held.restore();
      }
      const [failed, ok] = await Promise.all(pair);
      expectError(failed!, 401, 'invalid_credentials');
      assert.equal(ok!.status, 200);
      // 9 failures counted: exactly one more is checked
      expectError(await login(email, 'wrong password 10'), 401, 'invalid_credentials');
      expectError(await login(email, PASSWORD), 429, 'rate_limited');
    });

    test(`${door.what}: attempts left pending by a process that died count as failures for Retry-After once older than a minute`, async () => {
      const t = ctx();
      const { email, login } = await door.setup(t);
      // ten checks that never finish, as if their node had died during them
      const held = holdChecks(t, 10);
      let stuck: Promise<Reply>[];
      try {
        stuck = Array.from({ length: 10 }, (_, i) => login(email, `wrong password ${i}`));
        await until(() => held.started >= 10);
        const busy = await login(email, PASSWORD);
        expectError(busy, 429, 'rate_limited');
        assert.equal(busy.headers['retry-after'], '1', 'while they may still be checked');
        t.clock.advance(PENDING_BOUND_MS + 1000);
        const later = await login(email, PASSWORD);
        expectError(later, 429, 'rate_limited');
        const retry = Number(later.headers['retry-after']);
        assert.ok(retry > WINDOW_S - PENDING_BOUND_MS / 1000 - 60 && retry <= WINDOW_S - PENDING_BOUND_MS / 1000, `Retry-After ${retry}`);
      } finally {
        held.release();
        held.restore();
      }
      assert.deepEqual(tally(await Promise.all(stuck)), { 401: 10, 429: 0, other: 0 });
    });

    test(`${door.what}: IPv6 clients are counted by their /64, IPv4-mapped addresses as the IPv4 address`, async () => {
      const t = ctx();
      const v6 = await door.setup(t);
      for (let i = 0; i < 10; i++) expectError(await v6.login(v6.email, `wrong password ${i}`, '2001:db8:1:1::1'), 401, 'invalid_credentials');
      for (const ip of ['2001:db8:1:1::2', '2001:db8:1:1:dead:beef:0:1', '2001:DB8:1:1:0::9']) expectError(await v6.login(v6.email, PASSWORD, ip), 429, 'rate_limited');
      assert.equal((await v6.login(v6.email, PASSWORD, '2001:db8:1:2::1')).status, 200, 'another /64 is another client');
      const v4 = await door.setup(t);
      for (let i = 0; i < 10; i++) expectError(await v4.login(v4.email, `wrong password ${i}`, '198.51.100.7'), 401, 'invalid_credentials');
      expectError(await v4.login(v4.email, PASSWORD, '::ffff:198.51.100.7'), 429, 'rate_limited');
      assert.equal((await v4.login(v4.email, PASSWORD, '198.51.100.8')).status, 200);
    });

    test(`${door.what}: concurrent successes leave nothing counted`, async () => {
      const t = ctx();
      const { email, login } = await door.setup(t);
      const results = await Promise.all(Array.from({ length: 30 }, () => login(email, PASSWORD)));
      // at most 10 are checked at once; the others are told to retry in a second
      assert.ok(results.every((r) => r.status === 200 || (r.status === 429 && r.headers['retry-after'] === '1')), JSON.stringify(results.map((r) => r.status)));
      assert.ok(results.filter((r) => r.status === 200).length >= 10);
      for (let i = 0; i < 10; i++) expectError(await login(email, `wrong password ${i}`), 401, 'invalid_credentials');
      expectError(await login(email, PASSWORD), 429, 'rate_limited');
    });
  }

  test('the throttle stores digests keyed with the master key, never the email or the IP', async () => {
    const t = ctx();
    const { email, login } = await doors[0]!.setup(t);
    expectError(await login(email, 'wrong password'), 401);
    const db = t.engine.platform;
    const plain = createHash('sha256').update(`${email}\u0000127.0.0.1`).digest('hex');
    const keyed = subjectDigest(t.secrets.mac('rate-limit subjects'))(email, '127.0.0.1');
    for (const table of ['auth_failures', 'auth_throttle_locks']) {
      const rows = await db.all<Record<string, unknown>>(`SELECT * FROM ${db.t(table)}`);
      assert.ok(rows.length > 0, table);
      const text = JSON.stringify(rows);
      assert.ok(!text.includes(email) && !text.includes('127.0.0.1'), `${table}: ${text}`);
      // an unkeyed digest could be recomputed from a list of addresses by whoever reads the table
      assert.ok(!text.includes(plain), `${table}: unkeyed digest`);
      assert.ok(rows.some((r) => r.subject === keyed), `${table}: keyed digest`);
    }
  });

  test('the clean-up of old attempts and lock rows (by `at` alone) uses an index', async () => {
    const t = ctx();
    const db = t.engine.platform;
    for (const [table, index] of [
      ['auth_failures', 'auth_failures_at'],
      ['auth_throttle_locks', 'auth_throttle_locks_at'],
    ]) {
      const sql = `DELETE FROM ${db.t(table)} WHERE at <= ?`;
      const at = new Date().toISOString();
      // the tables are small here, so PostgreSQL is told to avoid sequential scans where it can
      const plan = await db.tx(async (tx) => {
        if (kind === 'postgres') await tx.run('SET LOCAL enable_seqscan = off');
        return tx.all<Record<string, unknown>>(`${kind === 'postgres' ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${sql}`, [at]);
      });
      assert.match(JSON.stringify(plan), new RegExp(index), `${table}: ${JSON.stringify(plan)}`);
    }
  });
});

// Two server processes on one PostgreSQL database: the count is shared, so the limit holds for the
// deployment, not per node.
const { engines, skipReason } = await testEngines();

async function call(base: string, path: string, body: unknown, token?: string): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const res = await fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: Object.fromEntries(res.headers) };
}

if (engines.includes('postgres')) {
  describe('login throttle across two server processes on one PostgreSQL', () => {
    let db: TestDatabase;
    const nodes: ServerProcess[] = [];

    before(async () => {
      db = await createTestDatabase();
      // (the processes of one test file share a master key, as the nodes of a deployment do)
      nodes.push(...(await Promise.all([startServer({ DATABASE_URL: db.url }), startServer({ DATABASE_URL: db.url })])));
    });

    after(async () => {
      for (const n of nodes) await n.stop();
      await db?.drop();
    });

    test('platform accounts and end users: of 100 concurrent wrong passwords spread over both nodes exactly 10 are checked', async () => {
      const [a, b] = [nodes[0]!, nodes[1]!];
      const owner = await call(a.base, '/auth/register', { name: 'n', email: 'throttle-nodes@example.com', password: PASSWORD });
      assert.equal(owner.status, 201);
      const project = await call(b.base, '/projects', { name: 'p' }, owner.body.token);
      assert.equal(project.status, 201);
      assert.equal((await call(a.base, `/${project.body.id}/auth/register`, { email: 'eu-nodes@example.com', password: PASSWORD })).status, 201);
      const cases: [string, string][] = [
        ['/auth/login', 'throttle-nodes@example.com'],
        [`/${project.body.id}/auth/login`, 'eu-nodes@example.com'],
      ];
      for (const [path, email] of cases) {
        const results = await Promise.all(Array.from({ length: 100 }, (_, i) => call(nodes[i % 2]!.base, path, { email, password: `wrong password ${i}` })));
        assert.deepEqual(tallyBurst(results), { 401: 10, 429: 90, other: 0 }, path);
        // the right password is refused on both nodes now
        for (const n of nodes) assert.equal((await call(n.base, path, { email, password: PASSWORD })).status, 429);
      }
    });
  });
} else {
  test('login throttle across two server processes on one PostgreSQL', { skip: skipReason }, () => undefined);
}
