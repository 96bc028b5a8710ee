// Who calls the data plane is read from the project's store before anything proves the caller may
// (storage/engine.ts callers()). On PostgreSQL those statements wait for a slot of the project's
// share of the pool, as its data statements do, so a flood of requests against one project, with
// valid credentials or not, cannot take the connections another project needs. Nothing here
// measures time: A's share is held by transactions the test controls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeEngines, expectError, type Reply } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import type { Engine } from '../../src/storage/engine.ts';
import { CLAIMED_PROJECTS } from '../../src/services/projects.ts';

/** Holds every slot of a project's share (PG_POOL_SIZE 8 in tests: 6 slots, 3 per project) until release(). */
async function holdShare(engine: Engine, pid: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const data = await engine.data(pid, 0);
  const share = 3;
  // what the set-up left running first (PostgreSQL's background measure of a project's storage takes a slot of its own)
  for (let i = 0; i < 1000 && engine.stats().gate.inUse > 0; i++) await new Promise((r) => setTimeout(r, 5));
  const holders = Array.from({ length: share }, () => data.tx(async (tx) => {
    await tx.get('SELECT 1 AS one');
    await held;
  }));
  for (let i = 0; i < 1000 && engine.stats().gate.inUse < share; i++) await new Promise((r) => setTimeout(r, 5));
  const holding = engine.stats().gate.inUse;
  const done = async () => {
    release();
    await Promise.allSettled(holders);
  };
  if (holding !== share) {
    await done();
    assert.fail(`held ${holding} slots of ${share}`);
  }
  return { release: done };
}

await describeEngines('the data-plane caller is resolved under the project share', (ctx, kind) => {
  test('with its share held, a project resolves no caller, valid or not, nor an end user token, while another answers; then both answer as before', { skip: kind !== 'postgres' && 'the embedded engine resolves callers on the main thread, holding no worker' }, async () => {
    const A = await dataPlane(ctx());
    const B = await dataPlane(ctx());
    await A.createTable('notes', [{ name: 'title', type: 'text' }]);
    await B.createTable('notes', [{ name: 'title', type: 'text' }]);
    const { engine } = ctx();
    const hold = await holdShare(engine, A.pid);
    const settled: string[] = [];
    let answers: Promise<Reply>[] = [];
    try {
      answers = [
        A.rest('GET', 'notes', { key: randomBytes(32).toString('hex') }),
        A.rest('GET', 'notes'),
        // an end user's own route needs no key: only the project's id and a token
        ctx().req('GET', `/${A.pid}/auth/user`, { headers: { 'x-user-token': randomBytes(32).toString('hex') } }),
      ].map((p, i) => p.finally(() => settled.push(`request ${i}`)));
      for (let i = 0; i < 5; i++) assert.equal((await B.rest('GET', 'notes')).status, 200);
      assert.deepEqual(settled, [], "A's requests wait for its share");
      assert.equal(engine.stats().gate.queued, 3, 'each waits for a slot of the gate');
    } finally {
      await hold.release(); // (also when an assertion failed: the held transactions would outlive the test)
    }
    const [bogus, valid, session] = await Promise.all(answers);
    expectError(bogus!, 401, 'invalid_api_key');
    assert.equal(valid!.status, 200);
    expectError(session!, 401, 'invalid_user_token');
  });

  test("with its share held, a project's public auth routes (login, sign-up, magic link, password reset) wait while another project's login answers", { skip: kind !== 'postgres' && 'the embedded engine runs these statements on the main thread, holding no worker' }, async () => {
    const A = await dataPlane(ctx());
    const B = await dataPlane(ctx());
    const a = await A.endUser();
    const b = await B.endUser();
    const { engine } = ctx();
    const post = (pid: string, path: string, body: unknown) => ctx().req('POST', `/${pid}/auth/${path}`, { body });
    const hold = await holdShare(engine, A.pid);
    const settled: string[] = [];
    let answers: Promise<Reply>[] = [];
    try {
      answers = [
        post(A.pid, 'login', { email: a.email, password: 'end user password' }),
        post(A.pid, 'login', { email: 'nobody@example.com', password: 'a wrong password' }),
        post(A.pid, 'register', { email: 'new@example.com', password: 'a long password' }),
        post(A.pid, 'magic-link', { email: a.email }),
        post(A.pid, 'password/forgot', { email: a.email }),
      ].map((p, i) => p.finally(() => settled.push(`request ${i}`)));
      const login = await post(B.pid, 'login', { email: b.email, password: 'end user password' });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(settled, [], "A's requests wait for its share");
    } finally {
      await hold.release(); // (also when an assertion failed: the held transactions would outlive the test)
    }
    const [login, wrong, register, magic, recover] = await Promise.all(answers);
    assert.equal(login!.status, 200, JSON.stringify(login!.body));
    expectError(wrong!, 401, 'invalid_credentials');
    assert.equal(register!.status, 201, JSON.stringify(register!.body));
    assert.equal(magic!.status, 200, JSON.stringify(magic!.body));
    assert.equal(recover!.status, 200, JSON.stringify(recover!.body));
  });

  test('a flood of token-shaped keys against one project is answered 401 or 503 project_busy, and another project keeps answering', async () => {
    const A = await dataPlane(ctx());
    const B = await dataPlane(ctx());
    await B.createTable('notes', [{ name: 'title', type: 'text' }]);
    const flood = Array.from({ length: 200 }, () => A.rest('GET', 'notes', { key: randomBytes(32).toString('hex') }));
    for (let i = 0; i < 5; i++) assert.equal((await B.rest('GET', 'notes')).status, 200);
    const answers = await Promise.all(flood);
    for (const res of answers) assert.ok(res.status === 401 || res.body.code === 'project_busy', `${res.status} ${JSON.stringify(res.body)}`);
    assert.ok(answers.some((r) => r.status === 401));
  });
});

// The project an unauthenticated request names is looked up once per process, under one share for
// all such look-ups: a flood of made-up project ids waits on that share, while projects already
// found answer without it.
await describeEngines('the look-up of a project named by an unauthenticated request', (ctx, kind) => {
  test('with the share of such look-ups held, a made-up id waits while a project found before answers; then it is 404', { skip: kind !== 'postgres' && 'the embedded engine reads the platform store on the main thread' }, async () => {
    const t = ctx();
    const A = await dataPlane(t);
    const a = await A.endUser(); // its project is found, and remembered
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const claimed = t.engine.platformFor(CLAIMED_PROJECTS);
    const holders = Array.from({ length: 3 }, () => claimed.tx(async (tx) => {
      await tx.get('SELECT 1 AS one');
      await held;
    }));
    let madeUp: Promise<Reply> | undefined;
    let settled = false;
    try {
      for (let i = 0; i < 1000 && t.engine.stats().gate.inUse < 3; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(t.engine.stats().gate.inUse, 3);
      madeUp = t.req('POST', `/${'z'.repeat(16)}/auth/login`, { body: { email: a.email, password: 'end user password' } }).finally(() => (settled = true));
      const login = await t.req('POST', `/${A.pid}/auth/login`, { body: { email: a.email, password: 'end user password' } });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(settled, false, 'the made-up id waits for the share');
    } finally {
      release();
      await Promise.allSettled(holders);
    }
    expectError(await madeUp!, 404, 'not_found');
  });
});

// A login's attempt is counted under the project's share, and settled outside it: a login that
// succeeded while a flood filled the share must answer its session, and leave no attempt pending
// (a pending attempt counts as a failure for the throttle's 15 minutes).
await describeEngines(
  'a login that succeeds while its project share fills up',
  (ctx, kind) => {
    test('answers 200 with its session and leaves no pending attempt', { skip: kind !== 'postgres' && 'the embedded engine runs these statements on the main thread, holding no worker' }, async () => {
      const t = ctx();
      const A = await dataPlane(t);
      const a = await A.endUser();
      const users = t.services.endUsers;
      const original = users.startSession;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const holders: Promise<unknown>[] = [];
      // once the session is written, every slot of A's share is taken (the login's own slot as soon
      // as its transaction ends) and kept until the login has answered
      users.startSession = async (db, user) => {
        users.startSession = original;
        const session = await original.call(users, db, user);
        const data = await t.engine.data(A.pid, 0);
        for (let i = 0; i < 3; i++) holders.push(data.tx(async (tx) => {
          await tx.get('SELECT 1 AS one');
          await held;
        }));
        return session;
      };
      let login: Reply;
      try {
        login = await t.req('POST', `/${A.pid}/auth/login`, { body: { email: a.email, password: 'end user password' } });
      } finally {
        users.startSession = original;
        release();
        await Promise.allSettled(holders);
      }
      assert.equal(login.status, 200, JSON.stringify(login.body));
      assert.ok(login.body.token);
      const pending = await t.engine.platform.all(`SELECT id FROM ${t.engine.platform.t('auth_failures')} WHERE pending = ?`, [true]);
      assert.deepEqual(pending, [], 'the successful attempt was removed');
    });
  },
  { STATEMENT_TIMEOUT_MS: '1000' },
);
