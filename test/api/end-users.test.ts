// End users (SPEC 4.6 register/login/logout, 4.7, 5; CONTRACT §0, §6) on every engine: the
// application-facing auth routes, token lifecycle and isolation, and the owner's administration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, uniqueEmail, expectError, type TestApp, type Reply } from '../support/app.ts';

const DAY = 24 * 60 * 60 * 1000;
const USER_FIELDS = ['created_at', 'email', 'email_verified', 'id', 'role'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PASSWORD = 'end user secret';

interface User {
  id: number;
  email: string;
  role: string | null;
  email_verified: boolean;
  created_at: string;
}

/** An owner with one project. */
async function ownerWithProject(t: TestApp) {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, 'App');
  return { ...owner, pid: project.id };
}

async function signUp(t: TestApp, pid: string, email = uniqueEmail('eu'), password = PASSWORD) {
  const res = await t.req('POST', `/${pid}/auth/register`, { body: { email, password } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { token: string; expires_at: string; user: User };
}

function whoAmI(t: TestApp, pid: string, token: string | undefined): Promise<Reply> {
  return t.req('GET', `/${pid}/auth/user`, { headers: token === undefined ? {} : { 'x-user-token': token } });
}

async function userCount(t: TestApp, pid: string): Promise<number> {
  const db = await t.engine.project(pid);
  const row = await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${db.t('_bp_users')}`);
  return Number(row!.n);
}

function expect401(res: Reply, what: string): void {
  try {
    expectError(res, 401);
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
}

await describeEngines('end users', (ctx) => {
  test('register: 201 with a 64-hex token, 30-day expiry and the user (email trimmed and lower-cased)', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const email = uniqueEmail('reg');
    const res = await t.req('POST', `/${pid}/auth/register`, { body: { email: `  ${email.toUpperCase()}  `, password: PASSWORD } });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), ['expires_at', 'token', 'user']);
    assert.match(res.body.token, /^[0-9a-f]{64}$/);
    assert.deepEqual(Object.keys(res.body.user).sort(), USER_FIELDS);
    assert.ok(Number.isInteger(res.body.user.id) && res.body.user.id > 0);
    assert.equal(res.body.user.email, email);
    assert.equal(res.body.user.role, null);
    assert.equal(res.body.user.email_verified, false);
    assert.match(res.body.user.created_at, ISO);
    assert.match(res.body.expires_at, ISO);
    const ttl = Date.parse(res.body.expires_at) - Date.parse(res.body.user.created_at);
    assert.ok(Math.abs(ttl - 30 * DAY) < 5000, `ttl ${ttl}`);
    const me = await whoAmI(t, pid, res.body.token);
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, res.body.user);
    // stored hashed: neither the token nor the password in the store
    const db = await t.engine.project(pid);
    const dump = JSON.stringify([await db.all(`SELECT * FROM ${db.t('_bp_users')}`), await db.all(`SELECT * FROM ${db.t('_bp_user_sessions')}`)]);
    assert.ok(!dump.includes(res.body.token) && !dump.includes(PASSWORD));
    // ids are integers, increasing
    const second = await signUp(t, pid);
    assert.ok(second.user.id > res.body.user.id);
  });

  test('passwords are counted in characters: 8 emoji pass, 600 emoji (under 1024 characters) pass, 4 emoji fail', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const eight = '\u{1F512}'.repeat(8);
    const many = '\u{1F512}'.repeat(600);
    expectError(await t.req('POST', `/${pid}/auth/register`, { body: { email: uniqueEmail(), password: '\u{1F512}'.repeat(4) } }), 422, 'validation_failed');
    const a = await t.req('POST', `/${pid}/auth/register`, { body: { email: uniqueEmail(), password: eight } });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email: a.body.user.email, password: eight } })).status, 200);
    const b = await t.req('POST', `/${pid}/auth/register`, { body: { email: uniqueEmail(), password: many } });
    assert.equal(b.status, 201, `a 600-character password is within 8..1024: ${JSON.stringify(b.body)}`);
  });

  test('concurrent registrations of one email: exactly one 201, the others 409', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const email = uniqueEmail('race');
    const results = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => t.req('POST', `/${pid}/auth/register`, { body: { email: i % 2 ? email.toUpperCase() : email, password: PASSWORD } })),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expectError(r, 409, 'email_taken');
    assert.equal(await userCount(t, pid), 1);
  });

  test('an id is never reused: deleting the newest user and registering again gives a new id', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    await signUp(t, pid);
    const newest = await signUp(t, pid);
    assert.equal((await t.req('DELETE', `/projects/${pid}/end-users/${newest.user.id}`, { token })).status, 204);
    const next = await signUp(t, pid);
    assert.ok(next.user.id > newest.user.id, `id ${next.user.id} after deleted ${newest.user.id}`);
  });

  test('an email that looks like injection but is valid is stored literally', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const email = "o'brien+x%_@example.com";
    const res = await signUp(t, pid, email);
    assert.equal(res.user.email, email);
    assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email, password: PASSWORD } })).status, 200);
    const list = await t.req('GET', `/projects/${pid}/end-users`, { token });
    assert.deepEqual(
      list.body.map((u: User) => u.email),
      [email],
    );
  });

  test('duplicate email in any case and spacing is 409 email_taken; the same email in another project is fine', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const email = uniqueEmail('dup');
    const first = await signUp(t, pid, email);
    for (const variant of [email, email.toUpperCase(), ` ${email} `]) {
      const err = expectError(await t.req('POST', `/${pid}/auth/register`, { body: { email: variant, password: 'another password' } }), 409, 'email_taken');
      assert.ok(err);
    }
    assert.equal(await userCount(t, pid), 1);
    // a refused registration spends no id, on PostgreSQL either: the next user's id is the same on both engines
    assert.equal((await signUp(t, pid, uniqueEmail('next'))).user.id, first.user.id + 1);
    const other = await createProject(t, token, 'Other');
    assert.equal((await signUp(t, other.id, email)).user.email, email);
  });

  const badRegister: [string, unknown, number, string | undefined][] = [
    ['missing password', { email: 'a@b.io' }, 422, 'validation_failed'],
    ['missing email', { password: PASSWORD }, 422, 'validation_failed'],
    ['short password', { email: 'a@b.io', password: 'seven77' }, 422, 'validation_failed'],
    ['password over 1024', { email: 'a@b.io', password: 'x'.repeat(1025) }, 422, 'validation_failed'],
    ['malformed email', { email: 'not-an-email', password: PASSWORD }, 422, 'validation_failed'],
    ['email without domain dot', { email: 'a@localhost', password: PASSWORD }, 422, 'validation_failed'],
    ['two @', { email: 'a@b@c.io', password: PASSWORD }, 422, 'validation_failed'],
    ['empty email', { email: '', password: PASSWORD }, 422, 'validation_failed'],
    ['blank email', { email: '   ', password: PASSWORD }, 422, 'validation_failed'],
    ['10,000-char email', { email: `${'a'.repeat(9990)}@example.io`, password: PASSWORD }, 422, 'validation_failed'],
    ['injection in email', { email: "x' OR '1'='1@example.io", password: PASSWORD }, 422, 'validation_failed'],
    ['statement in email', { email: "a'; DROP TABLE _bp_users; --@x.io", password: PASSWORD }, 422, 'validation_failed'],
    ['email a number', { email: 42, password: PASSWORD }, 422, 'validation_failed'],
    ['email an array', { email: ['a@b.io'], password: PASSWORD }, 422, 'validation_failed'],
    ['password a number', { email: 'a@b.io', password: 123456789 }, 422, 'validation_failed'],
    ['password null', { email: 'a@b.io', password: null }, 422, 'validation_failed'],
    ['unknown field', { email: 'a@b.io', password: PASSWORD, role: 'admin' }, 422, 'unknown_field'],
    ['email_verified smuggled', { email: 'a@b.io', password: PASSWORD, email_verified: true }, 422, 'unknown_field'],
    ['array body', [{ email: 'a@b.io', password: PASSWORD }], 422, 'validation_failed'],
    ['null body', null, 422, 'validation_failed'],
    ['no body', undefined, 422, undefined],
  ];
  for (const [what, body, status, code] of badRegister) {
    test(`register rejects ${what}; nothing created`, async () => {
      const t = ctx();
      const { pid } = await ownerWithProject(t);
      const res = await t.req('POST', `/${pid}/auth/register`, { body });
      assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status}`);
      const err = expectError(res, status, code);
      if (code === 'unknown_field') assert.ok(['role', 'email_verified'].includes(err.details.field));
      assert.equal(await userCount(t, pid), 0);
    });
  }

  test('register: invalid JSON 400, other content type 415; unknown or malformed project 404', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    expectError(await t.req('POST', `/${pid}/auth/register`, { rawBody: '{"email": "a@b.io",' }), 400, 'invalid_json');
    expectError(
      await t.req('POST', `/${pid}/auth/register`, { rawBody: JSON.stringify({ email: 'a@b.io', password: PASSWORD }), headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported_media_type',
    );
    for (const bad of ['aaaaaaaaaaaaaaaa', 'nope', 'health']) {
      expectError(await t.req('POST', `/${bad}/auth/register`, { body: { email: uniqueEmail(), password: PASSWORD } }), 404);
      expectError(await t.req('POST', `/${bad}/auth/login`, { body: { email: uniqueEmail(), password: PASSWORD } }), 404);
    }
    assert.equal(await userCount(t, pid), 0);
  });

  test('login: 200 with a new token; wrong password and unknown email are the same 401 invalid_credentials', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    const ok = await t.req('POST', `/${pid}/auth/login`, { body: { email: `  ${reg.user.email.toUpperCase()} `, password: PASSWORD } });
    assert.equal(ok.status, 200);
    assert.deepEqual(Object.keys(ok.body).sort(), ['expires_at', 'token', 'user']);
    assert.match(ok.body.token, /^[0-9a-f]{64}$/);
    assert.notEqual(ok.body.token, reg.token);
    assert.deepEqual(ok.body.user, reg.user);
    assert.equal((await whoAmI(t, pid, ok.body.token)).status, 200);
    assert.equal((await whoAmI(t, pid, reg.token)).status, 200, 'the first session lives on');

    const refused = await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: 'wrong password' } });
    assert.equal(refused.headers['www-authenticate'], 'Bearer', 'a 401 names its scheme');
    const wrongPw = expectError(refused, 401, 'invalid_credentials');
    const noUser = expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: uniqueEmail('ghost'), password: PASSWORD } }), 401, 'invalid_credentials');
    assert.deepEqual(wrongPw, noUser, 'no user enumeration');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD.toUpperCase() } }), 401, 'invalid_credentials');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: "' OR 1=1 --", password: "' OR '1'='1" } }), 401, 'invalid_credentials');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email } }), 422, 'validation_failed');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD, extra: 1 } }), 422, 'unknown_field');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: 12345678 } }), 422, 'validation_failed');
  });

  test('login is per project: a user of project A cannot log in to project B', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const other = await createProject(t, token, 'B');
    const reg = await signUp(t, pid);
    expectError(await t.req('POST', `/${other.id}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } }), 401, 'invalid_credentials');
  });

  test('failed logins are throttled after 10 per email and IP: 429 with Retry-After, even with the right password', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (let i = 0; i < 10; i++) {
      expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: i % 2 ? reg.user.email : reg.user.email.toUpperCase(), password: 'bad password' } }), 401);
    }
    const limited = await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } });
    expectError(limited, 429, 'rate_limited');
    const retry = Number(limited.headers['retry-after']);
    assert.ok(retry > 0 && retry <= 900, `Retry-After ${limited.headers['retry-after']}`);
    // another address is not affected; the session already held still works
    const other = await signUp(t, pid);
    assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email: other.user.email, password: PASSWORD } })).status, 200);
    assert.equal((await whoAmI(t, pid, reg.token)).status, 200);
    t.clock.advance(15 * 60 * 1000 + 1000);
    try {
      assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } })).status, 200);
    } finally {
      t.clock.advance(-(15 * 60 * 1000 + 1000));
    }
  });

  test('unknown emails are throttled too, and successful logins never count', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (let i = 0; i < 15; i++) assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } })).status, 200);
    const ghost = uniqueEmail('ghost');
    for (let i = 0; i < 10; i++) expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: ghost, password: PASSWORD } }), 401);
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: ghost, password: PASSWORD } }), 429, 'rate_limited');
  });

  test('GET /auth/user: missing, random, malformed and wrong-header tokens are 401', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (const bad of [undefined, '', 'f'.repeat(64), reg.token.toUpperCase(), `${reg.token}0`, reg.token.slice(1), "' OR 1=1 --"]) {
      expect401(await whoAmI(t, pid, bad), `token ${bad}`);
    }
    expect401(await t.req('GET', `/${pid}/auth/user`, { headers: { authorization: `Bearer ${reg.token}` } }), 'end-user token in Authorization');
    assert.deepEqual((await whoAmI(t, pid, ` ${reg.token} `)).body, reg.user, 'surrounding spaces are ignored');
  });

  test('end-user tokens expire after 30 days', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    t.clock.advance(30 * DAY - 60_000);
    try {
      assert.equal((await whoAmI(t, pid, reg.token)).status, 200);
      t.clock.advance(120_000);
      expect401(await whoAmI(t, pid, reg.token), 'expired');
      expect401(await t.req('POST', `/${pid}/auth/logout`, { headers: { 'x-user-token': reg.token } }), 'logout with an expired token');
      // logging in again gives a fresh session
      const again = await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } });
      assert.equal(again.status, 200);
      assert.equal((await whoAmI(t, pid, again.body.token)).status, 200);
    } finally {
      t.clock.advance(-(30 * DAY + 60_000));
    }
  });

  test('logout: 204, the token is dead at once; other sessions live on; logout without a token is 401', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    const other = (await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } })).body.token as string;
    const res = await t.req('POST', `/${pid}/auth/logout`, { headers: { 'x-user-token': reg.token } });
    assert.equal(res.status, 204);
    assert.equal(res.body, '');
    expect401(await whoAmI(t, pid, reg.token), 'after logout');
    expect401(await t.req('POST', `/${pid}/auth/logout`, { headers: { 'x-user-token': reg.token } }), 'second logout');
    expect401(await t.req('POST', `/${pid}/auth/logout`), 'logout without token');
    assert.equal((await whoAmI(t, pid, other)).status, 200);
  });

  test('tokens are per project: a token of project A is 401 on project B', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const b = await createProject(t, token, 'B');
    const regA = await signUp(t, pid);
    await signUp(t, b.id, regA.user.email); // same address, same id in B
    expect401(await whoAmI(t, b.id, regA.token), 'A token on B');
    expect401(await t.req('POST', `/${b.id}/auth/logout`, { headers: { 'x-user-token': regA.token } }), 'A token logs out on B');
    expectError(await whoAmI(t, 'aaaaaaaaaaaaaaaa', regA.token), 404, 'not_found');
    assert.equal((await whoAmI(t, pid, regA.token)).status, 200, 'still alive on A');
  });

  test('end-user tokens are never platform tokens and platform tokens are never end-user tokens', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (const [method, url] of [
      ['GET', '/auth/me'],
      ['GET', '/projects'],
      ['GET', `/projects/${pid}`],
      ['GET', `/projects/${pid}/end-users`],
    ]) {
      const res = await t.req(method!, url!, { token: reg.token });
      expect401(res, `end-user token on ${url}`);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    expect401(await whoAmI(t, pid, token), 'platform token as X-User-Token');
    expect401(await t.req('POST', `/${pid}/auth/logout`, { headers: { 'x-user-token': token } }), 'platform token logs out');
    assert.equal((await t.req('GET', '/auth/me', { token })).status, 200, 'the platform token is untouched');
  });

  // ---- administration by the owner ----

  test('list: users registered in the same millisecond are still newest first (by id)', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const users: User[] = [];
    for (let i = 0; i < 4; i++) users.push((await signUp(t, pid)).user);
    assert.deepEqual(
      ((await t.req('GET', `/projects/${pid}/end-users`, { token })).body as User[]).map((u) => u.id),
      users.map((u) => u.id).reverse(),
    );
  });

  test('list: newest first; paging with limit and offset; admin fields only', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users`, { token })).body, []);
    const users: User[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        users.push((await signUp(t, pid)).user);
        t.clock.advance(1000);
      }
    } finally {
      t.clock.advance(-3000);
    }
    const newestFirst = [...users].reverse();
    const list = await t.req('GET', `/projects/${pid}/end-users`, { token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, newestFirst);
    for (const u of list.body) assert.deepEqual(Object.keys(u).sort(), USER_FIELDS);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users?limit=1`, { token })).body, [newestFirst[0]]);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users?limit=1&offset=1`, { token })).body, [newestFirst[1]]);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users?offset=2`, { token })).body, [newestFirst[2]]);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users?offset=3`, { token })).body, []);
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users?limit=100&offset=0`, { token })).body, newestFirst);
  });

  test('list: the email filter is a case-insensitive contains-match with % and _ taken literally', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const tag = Date.now().toString(36);
    const emails = [`alice.${tag}@example.com`, `bob.${tag}@example.org`, `per%cent.${tag}@example.com`, `under_score.${tag}@example.com`, `underxscore.${tag}@example.com`];
    for (const e of emails) await signUp(t, pid, e);
    const filter = async (q: string) => {
      const res = await t.req('GET', `/projects/${pid}/end-users?email=${encodeURIComponent(q)}`, { token });
      assert.equal(res.status, 200, `${q}: ${JSON.stringify(res.body)}`);
      return (res.body as User[]).map((u) => u.email).sort();
    };
    assert.deepEqual(await filter('ALICE'), [emails[0]]);
    assert.deepEqual(await filter('example.org'), [emails[1]]);
    assert.deepEqual(await filter('%'), [emails[2]], '% is literal');
    assert.deepEqual(await filter('_'), [emails[3]], '_ is literal');
    assert.deepEqual(await filter('under_'), [emails[3]]);
    assert.deepEqual(await filter('r%c'), [emails[2]]);
    assert.deepEqual(await filter('a%e'), [], 'no wildcard match');
    assert.deepEqual(await filter('\\'), []);
    assert.deepEqual(await filter("' OR '1'='1"), []);
    assert.deepEqual(await filter('nobody-here'), []);
    assert.deepEqual(await filter(''), [...emails].sort(), 'an empty filter is no filter');
    assert.deepEqual(await filter(tag), [...emails].sort());
  });

  const badQueries: [string, string][] = [
    ['negative limit', 'limit=-1'],
    ['text limit', 'limit=abc'],
    ['fractional limit', 'limit=1.5'],
    ['negative offset', 'offset=-1'],
    ['text offset', 'offset=abc'],
    ['unknown parameter', 'role=admin'],
    ['repeated limit', 'limit=1&limit=2'],
    ['email over 320', `email=${'a'.repeat(321)}`],
    ['NUL in email', 'email=a%00b'],
    ['lone NUL as email', 'email=%00'],
  ];
  for (const [what, qs] of badQueries) {
    test(`list rejects ${what} with 422`, async () => {
      const t = ctx();
      const { pid, token } = await ownerWithProject(t);
      await signUp(t, pid);
      const err = expectError(await t.req('GET', `/projects/${pid}/end-users?${qs}`, { token }), 422);
      if (what === 'unknown parameter') assert.deepEqual([err.code, err.details.field], ['unknown_field', 'role']);
    });
  }

  test('role: PATCH sets and clears it; the change is visible at once to existing tokens', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    const other = await signUp(t, pid);
    const res = await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: 'admin' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ...reg.user, role: 'admin' });
    assert.equal((await whoAmI(t, pid, reg.token)).body.role, 'admin', 'an existing token sees the new role');
    assert.equal((await whoAmI(t, pid, other.token)).body.role, null, 'other users untouched');
    assert.equal((await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } })).body.user.role, 'admin');
    const free = await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: "édi'tor; DROP TABLE x" } });
    assert.equal(free.status, 200);
    assert.equal(free.body.role, "édi'tor; DROP TABLE x", 'free text, stored literally');
    const max = await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: 'r'.repeat(100) } });
    assert.equal(max.status, 200);
    assert.equal(max.body.role, 'r'.repeat(100));
    const cleared = await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: null } });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.role, null);
    assert.equal((await whoAmI(t, pid, reg.token)).body.role, null);
    const listed = (await t.req('GET', `/projects/${pid}/end-users`, { token })).body as User[];
    assert.deepEqual(listed.find((u) => u.id === reg.user.id), { ...reg.user, role: null });
  });

  const badRoles: [string, unknown][] = [
    ['a number', { role: 5 }],
    ['a boolean', { role: true }],
    ['an array', { role: ['admin'] }],
    ['missing role', {}],
    ['unknown field', { role: 'admin', email: 'x@y.io' }],
    ['101-char role', { role: 'r'.repeat(101) }],
    ['empty role', { role: '' }],
    ['control characters', { role: 'ad\nmin' }],
    ['array body', [{ role: 'admin' }]],
    ['no body', undefined],
  ];
  for (const [what, body] of badRoles) {
    test(`PATCH role rejects ${what} with 422; the role is unchanged`, async () => {
      const t = ctx();
      const { pid, token } = await ownerWithProject(t);
      const reg = await signUp(t, pid);
      assert.equal((await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: 'keep' } })).status, 200);
      const err = expectError(await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body }), 422);
      if (what === 'unknown field') assert.deepEqual([err.code, err.details.field], ['unknown_field', 'email']);
      assert.deepEqual((await whoAmI(t, pid, reg.token)).body, { ...reg.user, role: 'keep' });
    });
  }

  test('PATCH and DELETE: unknown and non-numeric user ids are 404', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (const id of ['999999', '0', '-1', '01', '1.0', '1e3', 'abc', '9007199254740993', '99999999999999999999', "1%20OR%201=1", `${reg.user.id}abc`]) {
      expectError(await t.req('PATCH', `/projects/${pid}/end-users/${id}`, { token, body: { role: 'admin' } }), 404, 'not_found');
      expectError(await t.req('DELETE', `/projects/${pid}/end-users/${id}`, { token }), 404, 'not_found');
    }
    assert.deepEqual((await whoAmI(t, pid, reg.token)).body, reg.user, 'nothing changed');
  });

  test('DELETE: 204; the user’s tokens die at once, login fails, and the email is free again', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    const second = (await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } })).body.token as string;
    const keep = await signUp(t, pid);
    const res = await t.req('DELETE', `/projects/${pid}/end-users/${reg.user.id}`, { token });
    assert.equal(res.status, 204);
    assert.equal(res.body, '');
    expect401(await whoAmI(t, pid, reg.token), 'first session');
    expect401(await whoAmI(t, pid, second), 'second session');
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } }), 401, 'invalid_credentials');
    expectError(await t.req('DELETE', `/projects/${pid}/end-users/${reg.user.id}`, { token }), 404, 'not_found');
    expectError(await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token, body: { role: 'x' } }), 404, 'not_found');
    assert.deepEqual((await t.req('GET', `/projects/${pid}/end-users`, { token })).body, [keep.user]);
    assert.equal((await whoAmI(t, pid, keep.token)).status, 200);
    const db = await t.engine.project(pid);
    const left = await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${db.t('_bp_user_sessions')} WHERE user_id = ?`, [reg.user.id]);
    assert.equal(Number(left!.n), 0, 'no session rows left');
    const again = await signUp(t, pid, reg.user.email);
    assert.notEqual(again.user.id, reg.user.id);
  });

  test("another owner's project is 404 on the three admin routes; nothing changes there", async () => {
    const t = ctx();
    const me = await ownerWithProject(t);
    const them = await ownerWithProject(t);
    const theirUser = await signUp(t, them.pid);
    expectError(await t.req('GET', `/projects/${them.pid}/end-users`, { token: me.token }), 404, 'not_found');
    expectError(await t.req('PATCH', `/projects/${them.pid}/end-users/${theirUser.user.id}`, { token: me.token, body: { role: 'admin' } }), 404, 'not_found');
    expectError(await t.req('DELETE', `/projects/${them.pid}/end-users/${theirUser.user.id}`, { token: me.token }), 404, 'not_found');
    for (const pid of ['aaaaaaaaaaaaaaaa', 'nope']) {
      expectError(await t.req('GET', `/projects/${pid}/end-users`, { token: me.token }), 404, 'not_found');
      expectError(await t.req('PATCH', `/projects/${pid}/end-users/1`, { token: me.token, body: { role: 'admin' } }), 404, 'not_found');
      expectError(await t.req('DELETE', `/projects/${pid}/end-users/1`, { token: me.token }), 404, 'not_found');
    }
    assert.deepEqual((await whoAmI(t, them.pid, theirUser.token)).body, theirUser.user, 'their user untouched and logged in');
  });

  test('a user id of another project is 404 under mine', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const b = await createProject(t, token, 'B');
    const mine = await signUp(t, pid);
    const theirs: { token: string; user: User }[] = [];
    for (let i = 0; i < 3; i++) theirs.push(await signUp(t, b.id));
    const foreign = theirs.find((x) => x.user.id !== mine.user.id && x.user.id > mine.user.id)!;
    expectError(await t.req('PATCH', `/projects/${pid}/end-users/${foreign.user.id}`, { token, body: { role: 'admin' } }), 404, 'not_found');
    expectError(await t.req('DELETE', `/projects/${pid}/end-users/${foreign.user.id}`, { token }), 404, 'not_found');
    assert.deepEqual((await whoAmI(t, b.id, foreign.token)).body, foreign.user, 'the other project’s user is untouched');
    assert.deepEqual((await whoAmI(t, pid, mine.token)).body, mine.user);
  });

  test('admin routes need a valid platform token: missing and random tokens are 401', async () => {
    const t = ctx();
    const { pid } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    for (const bad of [undefined, 'f'.repeat(64)]) {
      expect401(await t.req('GET', `/projects/${pid}/end-users`, { token: bad }), 'list');
      expect401(await t.req('PATCH', `/projects/${pid}/end-users/${reg.user.id}`, { token: bad, body: { role: 'admin' } }), 'patch');
      expect401(await t.req('DELETE', `/projects/${pid}/end-users/${reg.user.id}`, { token: bad }), 'delete');
    }
    assert.deepEqual((await whoAmI(t, pid, reg.token)).body, reg.user);
  });

  test('deleting the project ends its users’ sessions', async () => {
    const t = ctx();
    const { pid, token } = await ownerWithProject(t);
    const reg = await signUp(t, pid);
    assert.equal((await t.req('DELETE', `/projects/${pid}`, { token })).status, 204);
    const res = await whoAmI(t, pid, reg.token);
    assert.ok(res.status === 401 || res.status === 404, `got ${res.status}`);
    expectError(await t.req('POST', `/${pid}/auth/login`, { body: { email: reg.user.email, password: PASSWORD } }), 404);
  });
});
