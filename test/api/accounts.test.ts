// Platform accounts (SPEC 4.1, CONTRACT §1) on every engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, uniqueEmail, expectError, createProject, type Reply } from '../support/app.ts';

const DAY = 24 * 60 * 60 * 1000;

await describeEngines('platform accounts', (ctx) => {
  test('register returns a 64-hex token once, expiry in 30 days, and the account', async () => {
    const t = ctx();
    const email = uniqueEmail();
    const res = await t.req('POST', '/auth/register', { body: { name: 'Ada', email: `  ${email.toUpperCase()} `, password: 'password1' } });
    assert.equal(res.status, 201);
    assert.match(res.body.token, /^[0-9a-f]{64}$/);
    assert.deepEqual(Object.keys(res.body).sort(), ['account', 'expires_at', 'token']);
    assert.deepEqual(Object.keys(res.body.account).sort(), ['created_at', 'email', 'id', 'name']);
    assert.equal(res.body.account.email, email, 'email trimmed and lower-cased');
    const ttl = Date.parse(res.body.expires_at) - Date.parse(res.body.account.created_at);
    assert.ok(Math.abs(ttl - 30 * DAY) < 5000, `ttl ${ttl}`);
    assert.match(res.body.account.id, /^[a-z2-7]{16}$/);
    assert.ok(typeof res.headers['x-request-id'] === 'string');
  });

  test('tokens are stored only as hashes', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const rows = await t.engine.platform.all<{ token_hash: string }>(`SELECT token_hash FROM ${t.engine.platform.t('platform_sessions')}`);
    assert.ok(rows.length > 0);
    assert.ok(rows.every((r) => r.token_hash !== token && r.token_hash.length === 64));
    const acc = await t.engine.platform.all<{ password_hash: string }>(`SELECT password_hash FROM ${t.engine.platform.t('accounts')}`);
    assert.ok(acc.every((r) => r.password_hash.startsWith('$argon2id$')));
  });

  test('duplicate email (any case) is 409 email_taken', async () => {
    const t = ctx();
    const { account } = await registerAccount(t);
    expectError(await t.req('POST', '/auth/register', { body: { name: 'B', email: account.email.toUpperCase(), password: 'password1' } }), 409, 'email_taken');
  });

  const badRegister: [string, unknown, number, string][] = [
    ['missing name', { email: 'a@b.io', password: 'password1' }, 422, 'validation_failed'],
    ['missing email', { name: 'a', password: 'password1' }, 422, 'validation_failed'],
    ['missing password', { name: 'a', email: 'a@b.io' }, 422, 'validation_failed'],
    ['short password', { name: 'a', email: 'a@b.io', password: 'short77' }, 422, 'validation_failed'],
    ['password over 1024', { name: 'a', email: 'a@b.io', password: 'x'.repeat(1025) }, 422, 'validation_failed'],
    ['wrong type name', { name: 5, email: 'a@b.io', password: 'password1' }, 422, 'validation_failed'],
    ['wrong type password', { name: 'a', email: 'a@b.io', password: 12345678 }, 422, 'validation_failed'],
    ['malformed email', { name: 'a', email: 'not-an-email', password: 'password1' }, 422, 'validation_failed'],
    ['injection in email', { name: 'a', email: "a'; DROP TABLE accounts; --@x.io", password: 'password1' }, 422, 'validation_failed'],
    ['empty name', { name: '', email: 'a@b.io', password: 'password1' }, 422, 'validation_failed'],
    ['blank name', { name: '   ', email: 'a@b.io', password: 'password1' }, 422, 'validation_failed'],
    ['10,000-char name', { name: 'n'.repeat(10000), email: 'a@b.io', password: 'password1' }, 422, 'validation_failed'],
    ['unknown field', { name: 'a', email: 'a@b.io', password: 'password1', admin: true }, 422, 'unknown_field'],
    ['array body', [{ name: 'a' }], 422, 'validation_failed'],
    ['null body', null, 422, 'validation_failed'],
  ];
  for (const [name, body, status, code] of badRegister) {
    test(`register rejects ${name}`, async () => {
      const t = ctx();
      const before = await t.engine.platform.get<{ n: number }>(`SELECT count(*) AS n FROM ${t.engine.platform.t('accounts')}`);
      const res = await t.req('POST', '/auth/register', { body });
      const err = expectError(res, status, code);
      if (code === 'unknown_field') assert.equal(err.details.field, 'admin');
      const afterCount = await t.engine.platform.get<{ n: number }>(`SELECT count(*) AS n FROM ${t.engine.platform.t('accounts')}`);
      assert.equal(Number(afterCount!.n), Number(before!.n), 'nothing created');
    });
  }

  test('field-level validation names the field and the limit', async () => {
    const t = ctx();
    const err = expectError(await t.req('POST', '/auth/register', { body: { name: 'a', email: 'a@b.io', password: 'short' } }), 422);
    assert.deepEqual(err.details, { field: 'password', reason: 'too_short', min: 8 });
    assert.equal(err.message, "The field 'password' must have at least 8 characters.");
  });

  test('malformed JSON is 400 invalid_json; wrong content type 415; oversize 413', async () => {
    const t = ctx();
    expectError(await t.req('POST', '/auth/register', { rawBody: '{"name": "a",' }), 400, 'invalid_json');
    expectError(await t.req('POST', '/auth/register', { rawBody: '{"name":"a"}', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectError(
      await t.req('POST', '/auth/register', { body: { name: 'a', email: 'a@b.io', password: 'x'.repeat(2 * 1024 * 1024) } }),
      413,
      'payload_too_large',
    );
  });

  test('login: right credentials give a new token; wrong email and wrong password give the same 401', async () => {
    const t = ctx();
    const { account, password } = await registerAccount(t);
    const ok = await t.req('POST', '/auth/login', { body: { email: account.email.toUpperCase(), password } });
    assert.equal(ok.status, 200);
    assert.match(ok.body.token, /^[0-9a-f]{64}$/);
    assert.equal(ok.body.account.id, account.id);
    const refused = await t.req('POST', '/auth/login', { body: { email: account.email, password: 'wrong password' } });
    assert.equal(refused.headers['www-authenticate'], 'Bearer', 'a 401 names its scheme');
    const wrongPw = expectError(refused, 401, 'invalid_credentials');
    const noUser = expectError(await t.req('POST', '/auth/login', { body: { email: uniqueEmail('ghost'), password } }), 401, 'invalid_credentials');
    assert.deepEqual(wrongPw, noUser, 'no account enumeration');
    expectError(await t.req('POST', '/auth/login', { body: { email: account.email } }), 422, 'validation_failed');
    expectError(await t.req('POST', '/auth/login', { body: { email: account.email, password, extra: 1 } }), 422, 'unknown_field');
  });

  test('failed logins are throttled after 10 per email and IP within 15 minutes', async () => {
    const t = ctx();
    const { account, password } = await registerAccount(t);
    for (let i = 0; i < 10; i++) expectError(await t.req('POST', '/auth/login', { body: { email: account.email, password: 'bad password' } }), 401);
    const limited = expectError(await t.req('POST', '/auth/login', { body: { email: account.email, password } }), 429, 'rate_limited');
    assert.ok(limited);
    const res = await t.req('POST', '/auth/login', { body: { email: account.email, password } });
    assert.ok(Number(res.headers['retry-after']) > 0 && Number(res.headers['retry-after']) <= 900);
    t.clock.advance(15 * 60 * 1000 + 1000);
    assert.equal((await t.req('POST', '/auth/login', { body: { email: account.email, password } })).status, 200);
    t.clock.advance(-(15 * 60 * 1000 + 1000));
  });

  test('me: requires a valid token; missing, random, malformed tokens are 401 with WWW-Authenticate', async () => {
    const t = ctx();
    const { token, account } = await registerAccount(t);
    const me = await t.req('GET', '/auth/me', { token });
    assert.equal(me.status, 200);
    assert.deepEqual(me.body, account);
    for (const bad of [undefined, 'a'.repeat(64), 'not-a-token', token.toUpperCase(), `${token}0`, "' OR 1=1 --"]) {
      const res = await t.req('GET', '/auth/me', { token: bad });
      expectError(res, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    expectError(await t.req('GET', '/auth/me', { headers: { authorization: `Basic ${token}` } }), 401);
  });

  test('logout ends the token at once; other sessions live on', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const other = (await t.req('POST', '/auth/login', { body: { email: account.email, password } })).body.token;
    assert.equal((await t.req('POST', '/auth/logout', { token })).status, 204);
    expectError(await t.req('GET', '/auth/me', { token }), 401);
    expectError(await t.req('POST', '/auth/logout', { token }), 401);
    assert.equal((await t.req('GET', '/auth/me', { token: other })).status, 200);
  });

  test('tokens expire after 30 days, checked on every request', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    t.clock.advance(30 * DAY - 60_000);
    assert.equal((await t.req('GET', '/auth/me', { token })).status, 200);
    t.clock.advance(120_000);
    expectError(await t.req('GET', '/auth/me', { token }), 401);
    t.clock.advance(-(30 * DAY + 60_000));
  });

  test('update name; email and password changes need current_password', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const renamed = await t.req('PATCH', '/auth/me', { token, body: { name: 'New Name' } });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'New Name');
    const newEmail = uniqueEmail('moved');
    expectError(await t.req('PATCH', '/auth/me', { token, body: { email: newEmail } }), 422);
    expectError(await t.req('PATCH', '/auth/me', { token, body: { email: newEmail, current_password: 'wrong-one' } }), 403, 'invalid_credentials');
    const moved = await t.req('PATCH', '/auth/me', { token, body: { email: newEmail.toUpperCase(), current_password: password } });
    assert.equal(moved.status, 200);
    assert.equal(moved.body.email, newEmail);
    const taken = await registerAccount(t);
    expectError(await t.req('PATCH', '/auth/me', { token, body: { email: taken.account.email, current_password: password } }), 409, 'email_taken');
    expectError(await t.req('PATCH', '/auth/me', { token, body: { name: 'x', role: 'admin' } }), 422, 'unknown_field');
    expectError(await t.req('PATCH', '/auth/me', { token, body: { name: 42 } }), 422, 'validation_failed');
    expectError(await t.req('PATCH', '/auth/me', { token, body: { password: 'short', current_password: password } }), 422);
    const me = await t.req('GET', '/auth/me', { token });
    assert.equal(me.body.name, 'New Name', 'failed updates changed nothing');
    assert.equal(me.body.id, account.id);
  });

  test('current_password is throttled like a login: after 10 wrong ones per account and IP, 429 with Retry-After', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const patch = (body: unknown, ip = '127.0.0.1') =>
      t.app.inject({ method: 'PATCH', url: '/auth/me', payload: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, remoteAddress: ip });
    // a right one never counts
    assert.equal((await patch({ password, current_password: password })).statusCode, 200);
    for (let i = 0; i < 10; i++) assert.equal((await patch({ password: 'a brand new password', current_password: `guess number ${i}` })).statusCode, 403);
    const limited = await patch({ password: 'a brand new password', current_password: password });
    assert.equal(limited.statusCode, 429);
    assert.equal(JSON.parse(limited.body).code, 'rate_limited');
    const retry = Number(limited.headers['retry-after']);
    assert.ok(retry > 0 && retry <= 15 * 60, `Retry-After ${retry}`);
    // its own scope: logins of the account are not affected, nor are other clients
    assert.equal((await t.req('POST', '/auth/login', { body: { email: account.email, password } })).status, 200);
    assert.equal((await patch({ name: 'renamed without a password' })).statusCode, 200);
    assert.equal((await patch({ password: 'a brand new password', current_password: password }, '198.51.100.9')).statusCode, 200);
  });

  test('password change ends every other session at once and keeps the current one', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const other = (await t.req('POST', '/auth/login', { body: { email: account.email, password } })).body.token;
    const res = await t.req('PATCH', '/auth/me', { token, body: { password: 'a brand new password', current_password: password } });
    assert.equal(res.status, 200);
    expectError(await t.req('GET', '/auth/me', { token: other }), 401);
    assert.equal((await t.req('GET', '/auth/me', { token })).status, 200);
    expectError(await t.req('POST', '/auth/login', { body: { email: account.email, password } }), 401);
    assert.equal((await t.req('POST', '/auth/login', { body: { email: account.email, password: 'a brand new password' } })).status, 200);
  });

  test('a login whose password check is under way when the password changes gets no session', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const hasher = t.services.hasher;
    const original = hasher.verify;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let reached!: () => void;
    const checking = new Promise<void>((r) => (reached = r));
    // the next check of the old password waits until the change is done
    hasher.verify = async (stored, candidate, tenant) => {
      if (candidate === password) {
        hasher.verify = original;
        reached();
        await gate;
      }
      return original.call(hasher, stored, candidate, tenant);
    };
    let login: Promise<Reply>;
    try {
      login = t.req('POST', '/auth/login', { body: { email: account.email, password } });
      await checking;
      assert.equal((await t.req('PATCH', '/auth/me', { token, body: { password: 'a brand new password', current_password: password } })).status, 200);
    } finally {
      release();
      hasher.verify = original;
    }
    expectError(await login, 401, 'invalid_credentials');
    const sessions = await t.engine.platform.all(`SELECT token_hash FROM ${t.engine.platform.t('platform_sessions')} WHERE account_id = ?`, [account.id]);
    assert.equal(sessions.length, 1, 'only the session that changed the password');
  });

  test('delete removes the account, its sessions, projects and their stores', async () => {
    const t = ctx();
    const { token, account, password } = await registerAccount(t);
    const project = await createProject(t, token);
    const tbl = await t.req('POST', `/projects/${project.id}/tables`, { token, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } });
    assert.equal(tbl.status, 201);
    assert.equal((await t.req('DELETE', '/auth/me', { token })).status, 204);
    expectError(await t.req('GET', '/auth/me', { token }), 401);
    expectError(await t.req('POST', '/auth/login', { body: { email: account.email, password } }), 401);
    const left = await t.engine.platform.get<{ n: number }>(`SELECT count(*) AS n FROM ${t.engine.platform.t('projects')} WHERE owner_id = ?`, [account.id]);
    assert.equal(Number(left!.n), 0);
    await assert.rejects(async () => (await t.engine.project(project.id)).all(`SELECT * FROM ${'"_bp_tables"'}`));
    // the email is free again
    assert.equal((await t.req('POST', '/auth/register', { body: { name: 'again', email: account.email, password: 'password1' } })).status, 201);
  });
});
