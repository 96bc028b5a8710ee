// End-user email flows (SPEC 4.6, 7, 8; CONTRACT §6) on every engine, delivered through a real SMTP
// server: magic link, password reset, verification, email change, confirmation required, the
// redirect_url rules, single-use purpose tokens (also under concurrency), no account enumeration,
// the per-recipient and per-IP rate limits counted in the database, what an address's first
// verification ends (CONTRACT §10: the pre-registration takeover), also with requests in flight, and
// tokens issued in the background step (under the user's row lock: no deadlock, no stale address,
// one live token per purpose).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, uniqueEmail, type TestApp, type Reply } from '../support/app.ts';
import { captureMailers, startSmtpCapture, type SmtpCapture, type CapturedMail } from '../support/mail-capture.ts';
import { authOf } from '../../src/services/end-users.ts';
import { PurposeTokens } from '../../src/services/purpose-tokens.ts';
import { PgDb } from '../../src/storage/postgres/postgres-db.ts';
import { hashToken } from '../../src/lib/tokens.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { projectMigrations } from '../../src/storage/schema.ts';

let smtp: SmtpCapture;
before(async () => {
  smtp = await startSmtpCapture();
});
after(async () => {
  await smtp?.close();
});
const mailers = captureMailers(() => smtp);

const MIN = 60 * 1000;
const PASSWORD = 'end user password';
const ATTACKER_PASSWORD = 'chosen by an attacker';
const SITE = 'https://app.example.com';

interface Fixture {
  t: TestApp;
  pid: string;
  owner: string;
  post(path: string, body: unknown, opts?: { user?: string; ip?: string }): Promise<Reply>;
  register(email?: string): Promise<{ email: string; token: string | null; user: any }>;
  mailTo(address: string): Promise<CapturedMail[]>;
  lastLink(address: string): Promise<{ link: URL; token: string; mail: CapturedMail }>;
}

async function fixture(t: TestApp, opts: { confirm?: boolean; mail?: boolean; name?: string } = {}): Promise<Fixture> {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, opts.name ?? 'Flow App');
  const pid = project.id;
  const settings = await t.req('PUT', `/projects/${pid}/auth/settings`, { token: owner.token, body: { site_url: SITE, redirect_urls: ['https://mobile.example.com/auth'] } });
  assert.equal(settings.status, 200);
  if (opts.mail !== false) {
    const cfg = await t.req('PUT', `/projects/${pid}/auth/email-config`, {
      token: owner.token,
      body: { provider: 'smtp', from_address: 'auth@example.com', from_name: 'Flow App', smtp_host: 'localhost', smtp_port: 25, smtp_encryption: 'none', require_email_confirmation: opts.confirm ?? false },
    });
    assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
  }
  const post = (path: string, body: unknown, o: { user?: string; ip?: string } = {}) =>
    t.req('POST', `/${pid}/auth/${path}`, { body, headers: { 'x-forwarded-for': o.ip ?? '203.0.113.10', ...(o.user ? { 'x-user-token': o.user } : {}) } });
  const mailTo = async (address: string) => {
    await t.services.emailFlows.settle();
    return smtp.messages.filter((m) => m.to.includes(address));
  };
  return {
    t,
    pid,
    owner: owner.token,
    post,
    async register(email = uniqueEmail('flow')) {
      const res = await post('register', { email, password: PASSWORD });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return { email, token: res.body.token, user: res.body.user };
    },
    mailTo,
    async lastLink(address) {
      const mails = await mailTo(address);
      assert.ok(mails.length > 0, `no email to ${address}`);
      const mail = mails[mails.length - 1]!;
      const m = /href="([^"]+)"/.exec(mail.html);
      assert.ok(m, 'the email has a link');
      const link = new URL(m[1]!.replace(/&amp;/g, '&'));
      const token = link.searchParams.get('token')!;
      assert.match(token, /^[0-9a-f]{64}$/);
      assert.ok(mail.text.includes(token), 'the plain-text part carries the link too');
      return { link, token, mail };
    },
  };
}

function me(f: Fixture, token: string): Promise<Reply> {
  return f.t.req('GET', `/${f.pid}/auth/user`, { headers: { 'x-user-token': token } });
}

function tokenOf(mail: CapturedMail | undefined): string {
  assert.ok(mail, 'the email was sent');
  const m = /[?&]token=([0-9a-f]{64})/.exec(mail.text);
  assert.ok(m, 'the email has a token link');
  return m[1]!;
}

/**
 * Makes the first call of `obj[method]` for which `when` holds wait until release(); `reached`
 * resolves once it waits. Lets a test run a flow while another request is half-way through.
 */
function hold<O extends object>(obj: O, method: keyof O & string, when: (...args: any[]) => boolean) {
  const original = obj[method] as (...args: unknown[]) => Promise<unknown>;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let arrive!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  let held = false;
  (obj as Record<string, unknown>)[method] = async function (this: unknown, ...args: unknown[]) {
    if (!held && when(...args)) {
      held = true;
      arrive();
      await gate;
    }
    return original.apply(this, args);
  };
  return { reached, release, restore: () => void ((obj as Record<string, unknown>)[method] = original) };
}

/**
 * PostgreSQL: makes the first statement given to `run` that matches `pattern` wait, once it has run
 * (its row locks held, its transaction open), until release(); `reached` resolves then.
 */
function pauseAfter(pattern: RegExp) {
  const original = PgDb.prototype.run;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let arrive!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  let paused = false;
  PgDb.prototype.run = async function (this: PgDb, sql, params) {
    const result = await original.call(this, sql, params);
    if (!paused && pattern.test(sql)) {
      paused = true;
      arrive();
      await gate;
    }
    return result;
  };
  return { reached, release, restore: () => void (PgDb.prototype.run = original) };
}

/** The background issue's replacement of the older token, which row-locks it (PurposeTokens.issue). */
const REPLACE_TOKEN = /DELETE FROM \S+ WHERE user_id = \? AND purpose = \?/;

/** PostgreSQL: resolves once a statement in the test database waits for a lock, or `done` holds. */
async function untilLockWait(t: TestApp, done: () => Promise<boolean> = async () => false): Promise<void> {
  for (;;) {
    const r = await t.engine.platform.get<{ n: number | string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (Number(r?.n) > 0 || (await done())) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The stored email tokens of a user (by purpose, or all). */
async function tokenRows(f: Fixture, userId: number, purpose?: string): Promise<{ token_hash: string; purpose: string }[]> {
  const db = await f.t.engine.project(f.pid);
  return db.all(`SELECT token_hash, purpose FROM ${db.t('_bp_email_tokens')} WHERE user_id = ?${purpose ? ' AND purpose = ?' : ''}`, purpose ? [userId, purpose] : [userId]);
}

await describeEngines(
  'email flows',
  (ctx, kind) => {
    test('magic link: 200 { ok }, an email with the site-URL link; consume gives a session and marks the email verified', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      const res = await f.post('magic-link', { email: email.toUpperCase() });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { ok: true });
      const { link, token, mail } = await f.lastLink(email);
      assert.equal(`${link.origin}${link.pathname}`, `${SITE}/`);
      assert.equal(mail.subject, 'Your sign-in link for Flow App');
      assert.equal(mail.from, 'auth@example.com');
      const session = await f.post('magic-link/consume', { token });
      assert.equal(session.status, 200, JSON.stringify(session.body));
      assert.match(session.body.token, /^[0-9a-f]{64}$/);
      assert.equal(session.body.user.email, email);
      assert.equal(session.body.user.email_verified, true);
      const me = await f.t.req('GET', `/${f.pid}/auth/user`, { headers: { 'x-user-token': session.body.token } });
      assert.equal(me.status, 200);
      // single use
      expectError(await f.post('magic-link/consume', { token }), 400, 'invalid_token');
    });

    test('redirect_url: a matching URL is used (query kept); a non-matching one is 422 and sends nothing', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      assert.equal((await f.post('magic-link', { email, redirect_url: 'https://mobile.example.com/auth/done?from=app' })).status, 200);
      const { link } = await f.lastLink(email);
      assert.equal(link.origin + link.pathname, 'https://mobile.example.com/auth/done');
      assert.equal(link.searchParams.get('from'), 'app');
      const before = (await f.mailTo(email)).length;
      for (const bad of ['https://mobile.example.com/authx', 'https://evil.example.com/', 'http://app.example.com/', 'https://app.example.com.evil.com/', 'javascript:alert(1)', 'not a url']) {
        const err = expectError(await f.post('magic-link', { email, redirect_url: bad }), 422, 'invalid_redirect_url');
        assert.equal(err.details.field, 'redirect_url');
        expectError(await f.post('password/forgot', { email, redirect_url: bad }), 422, 'invalid_redirect_url');
      }
      assert.equal((await f.mailTo(email)).length, before);
    });

    test('without a site URL the link uses the service URL (APP_URL)', async () => {
      const t = ctx();
      const f = await fixture(t);
      await t.req('PUT', `/projects/${f.pid}/auth/settings`, { token: f.owner, body: { site_url: null } });
      const { email } = await f.register();
      await f.post('magic-link', { email });
      const { link } = await f.lastLink(email);
      assert.equal(link.origin + link.pathname, new URL(t.config.appUrl).href);
    });

    test('no enumeration: unregistered addresses get the same 200 body, no token is issued and nothing is sent', async () => {
      const f = await fixture(ctx());
      const { email, user } = await f.register();
      const ghost = uniqueEmail('ghost');
      for (const path of ['magic-link', 'password/forgot', 'verify/resend']) {
        const known = await f.post(path, { email });
        const unknown = await f.post(path, { email: ghost });
        assert.equal(known.status, 200);
        assert.equal(unknown.status, 200);
        assert.deepEqual(unknown.body, known.body);
        const comparable = (r: Reply) => Object.entries(r.headers).filter(([h]) => !['x-request-id', 'date'].includes(h)).sort();
        assert.deepEqual(comparable(unknown), comparable(known));
      }
      assert.equal((await f.mailTo(ghost)).length, 0);
      // exactly the known user's three tokens exist: none was issued for the unknown address
      const db = await f.t.engine.project(f.pid);
      const tokens = await db.all<{ user_id: number; purpose: string }>(`SELECT user_id, purpose FROM ${db.t('_bp_email_tokens')} ORDER BY purpose`);
      assert.deepEqual(tokens.map((r) => [Number(r.user_id), r.purpose]), [[user.id, 'email_verification'], [user.id, 'magic_link'], [user.id, 'password_reset']]);
    });

    test('password reset: new password works, old one and every session end; the token is single-use', async () => {
      const f = await fixture(ctx());
      const { email, token: session } = await f.register();
      assert.equal((await f.post('password/forgot', { email })).status, 200);
      const { token, mail } = await f.lastLink(email);
      assert.equal(mail.subject, 'Reset your password for Flow App');
      expectError(await f.post('password/reset', { token, password: 'short' }), 422);
      const res = await f.post('password/reset', { token, password: 'a brand new password' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body), ['user']);
      assert.equal(res.body.user.email, email);
      expectError(await f.t.req('GET', `/${f.pid}/auth/user`, { headers: { 'x-user-token': session! } }), 401);
      expectError(await f.post('login', { email, password: PASSWORD }), 401);
      const login = await f.post('login', { email, password: 'a brand new password' });
      assert.equal(login.status, 200);
      // SPEC 2: only verify/confirm and email-change/confirm (and a magic link) verify the address
      assert.equal(login.body.user.email_verified, false);
      expectError(await f.post('password/reset', { token, password: 'yet another password' }), 400, 'invalid_token');
    });

    test('a password reset voids the user\'s other pending email tokens (a stolen session cannot finish an email change)', async () => {
      const f = await fixture(ctx());
      const { email, token: session } = await f.register();
      const attacker = uniqueEmail('attacker');
      await f.post('email-change/request', { new_email: attacker }, { user: session! });
      const change = (await f.lastLink(attacker)).token;
      await f.post('magic-link', { email });
      const magic = (await f.lastLink(email)).token;
      await f.post('password/forgot', { email });
      const reset = (await f.lastLink(email)).token;
      assert.equal((await f.post('password/reset', { token: reset, password: 'a brand new password' })).status, 200);
      expectError(await f.post('email-change/confirm', { token: change }), 400, 'invalid_token');
      expectError(await f.post('magic-link/consume', { token: magic }), 400, 'invalid_token');
      assert.equal((await f.post('login', { email, password: 'a brand new password' })).body.user.email, email);
    });

    test('an email change voids the links sent to the old address', async () => {
      const f = await fixture(ctx());
      const { email, token: session } = await f.register();
      await f.post('password/forgot', { email });
      const reset = (await f.lastLink(email)).token;
      const next = uniqueEmail('next');
      await f.post('email-change/request', { new_email: next }, { user: session! });
      assert.equal((await f.post('email-change/confirm', { token: (await f.lastLink(next)).token })).status, 200);
      expectError(await f.post('password/reset', { token: reset, password: 'a brand new password' }), 400, 'invalid_token');
    });

    test('password/reset with a garbage token is refused before any password hashing', async () => {
      const f = await fixture(ctx());
      let hashed = 0;
      const original = f.t.services.hasher.hash.bind(f.t.services.hasher);
      f.t.services.hasher.hash = async (p: string, tenant: string) => {
        hashed++;
        return original(p, tenant);
      };
      try {
        for (const token of ['0'.repeat(64), 'zz', 'f'.repeat(64)]) expectError(await f.post('password/reset', { token, password: 'a brand new password' }), 400, 'invalid_token');
        assert.equal(hashed, 0);
      } finally {
        f.t.services.hasher.hash = original;
      }
    });

    test('a newer request replaces the older token of the same purpose', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      await f.post('password/forgot', { email });
      const first = (await f.lastLink(email)).token;
      await f.post('password/forgot', { email });
      const second = (await f.lastLink(email)).token;
      assert.notEqual(first, second);
      expectError(await f.post('password/reset', { token: first, password: 'a brand new password' }), 400, 'invalid_token');
      assert.equal((await f.post('password/reset', { token: second, password: 'a brand new password' })).status, 200);
    });

    test('purpose tokens: expired, other purpose, other project, malformed and random tokens are 400 invalid_token', async () => {
      const t = ctx();
      const f = await fixture(t);
      const g = await fixture(t);
      const { email } = await f.register();
      await f.post('magic-link', { email });
      const { token } = await f.lastLink(email);
      expectError(await f.post('verify/confirm', { token }), 400, 'invalid_token');
      expectError(await f.post('password/reset', { token, password: 'a brand new password' }), 400, 'invalid_token');
      expectError(await f.post('email-change/confirm', { token }), 400, 'invalid_token');
      expectError(await g.post('magic-link/consume', { token }), 400, 'invalid_token');
      for (const bad of ['', 'x', 'A'.repeat(64), '0'.repeat(64), `${token}0`, "' OR 1=1 --"]) {
        expectError(await f.post('magic-link/consume', { token: bad }), 400, 'invalid_token');
      }
      for (const body of [{}, { token: 5 }, { token: null }, { token, extra: 1 }, { token: 't'.repeat(129) }]) expectError(await f.post('magic-link/consume', body), 422);
      // a token is valid until its 15 minutes are over
      await f.post('magic-link', { email });
      const inside = (await f.lastLink(email)).token;
      t.clock.advance(15 * MIN - 5000);
      try {
        assert.equal((await f.post('magic-link/consume', { token: inside })).status, 200);
      } finally {
        t.clock.advance(-(15 * MIN - 5000));
      }
      await f.post('magic-link', { email });
      const fresh = (await f.lastLink(email)).token;
      t.clock.advance(15 * MIN + 1000);
      try {
        expectError(await f.post('magic-link/consume', { token: fresh }), 400, 'invalid_token');
      } finally {
        t.clock.advance(-(15 * MIN + 1000));
      }
    });

    test('token lifetimes: reset 30 minutes, verification 1 day, email change 30 minutes', async () => {
      const t = ctx();
      const f = await fixture(t);
      const { email, token: session } = await f.register();
      const cases: Array<[string, unknown, string, (tok: string) => unknown, number]> = [
        ['password/forgot', { email }, 'password/reset', (tok) => ({ token: tok, password: 'a brand new password' }), 30 * MIN],
        ['verify/resend', { email }, 'verify/confirm', (tok) => ({ token: tok }), 24 * 60 * MIN],
      ];
      for (const [req, body, use, useBody, ttl] of cases) {
        // a token just past its lifetime fails; a fresh one just inside it works
        await f.post(req, body);
        const late = (await f.lastLink(email)).token;
        t.clock.advance(ttl + 1000);
        try {
          expectError(await f.post(use, useBody(late)), 400, 'invalid_token');
        } finally {
          t.clock.advance(-(ttl + 1000));
        }
        await f.post(req, body);
        const ok = (await f.lastLink(email)).token;
        assert.notEqual(ok, late);
        t.clock.advance(ttl - 5000);
        try {
          assert.equal((await f.post(use, useBody(ok))).status, 200, use);
        } finally {
          t.clock.advance(-(ttl - 5000));
        }
      }
      // email change (the reset above ended the session: log in again)
      const login = await f.post('login', { email, password: 'a brand new password' });
      assert.equal(login.status, 200);
      const newEmail = uniqueEmail('changed');
      await f.post('email-change/request', { new_email: newEmail }, { user: login.body.token });
      const tok = (await f.lastLink(newEmail)).token;
      t.clock.advance(30 * MIN + 1000);
      try {
        expectError(await f.post('email-change/confirm', { token: tok }), 400, 'invalid_token');
      } finally {
        t.clock.advance(-(30 * MIN + 1000));
      }
      await f.post('email-change/request', { new_email: newEmail }, { user: login.body.token });
      const inside = (await f.lastLink(newEmail)).token;
      t.clock.advance(30 * MIN - 5000);
      try {
        assert.equal((await f.post('email-change/confirm', { token: inside })).status, 200);
      } finally {
        t.clock.advance(-(30 * MIN - 5000));
      }
      // the first session ended with the reset
      expectError(await f.t.req('GET', `/${f.pid}/auth/user`, { headers: { 'x-user-token': session! } }), 401);
    });

    test('verification: resend to an unverified address, confirm marks it verified; nothing is sent once verified', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      assert.equal((await f.post('verify/resend', { email })).status, 200);
      const { token, mail } = await f.lastLink(email);
      assert.equal(mail.subject, 'Confirm your email address for Flow App');
      const res = await f.post('verify/confirm', { token });
      assert.equal(res.status, 200);
      assert.equal(res.body.user.email_verified, true);
      const count = (await f.mailTo(email)).length;
      assert.deepEqual((await f.post('verify/resend', { email })).body, { ok: true });
      assert.equal((await f.mailTo(email)).length, count);
    });

    test('email change: the link goes to the new address only; confirm applies it and marks it verified', async () => {
      // a verified account, so that the change is not also the address's first verification (below)
      const f = await fixture(ctx(), { confirm: true });
      const { email } = await f.register();
      assert.equal((await f.post('verify/confirm', { token: (await f.lastLink(email)).token })).status, 200);
      const session = (await f.post('login', { email, password: PASSWORD })).body.token as string;
      const newEmail = uniqueEmail('new');
      expectError(await f.post('email-change/request', { new_email: newEmail }), 401);
      expectError(await f.post('email-change/request', { new_email: newEmail }, { user: 'd'.repeat(64) }), 401);
      const before = (await f.mailTo(email)).length;
      const res = await f.post('email-change/request', { new_email: newEmail }, { user: session });
      assert.deepEqual(res.body, { ok: true });
      const { token, mail } = await f.lastLink(newEmail);
      assert.equal(mail.subject, 'Confirm your new email address for Flow App');
      assert.match(mail.html, new RegExp(newEmail.replace(/\./g, '\\.')));
      assert.equal((await f.mailTo(email)).length, before, 'nothing goes to the old address');
      const done = await f.post('email-change/confirm', { token });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.user.email, newEmail);
      assert.equal(done.body.user.email_verified, true);
      assert.equal((await f.post('login', { email: newEmail, password: PASSWORD })).status, 200);
      expectError(await f.post('login', { email, password: PASSWORD }), 401);
      expectError(await f.post('email-change/confirm', { token }), 400, 'invalid_token');
    });

    test('email change to an address already taken: 200 and nothing sent; taken before confirm: 409 and the token stays usable', async () => {
      const f = await fixture(ctx());
      const a = await f.register();
      const b = await f.register();
      assert.deepEqual((await f.post('email-change/request', { new_email: b.email }, { user: a.token! })).body, { ok: true });
      const sentToB = (await f.mailTo(b.email)).length;
      assert.equal(sentToB, 0);
      const target = uniqueEmail('race');
      await f.post('email-change/request', { new_email: target }, { user: a.token! });
      const { token } = await f.lastLink(target);
      // someone registers the address before a confirms
      const c = await f.post('register', { email: target, password: PASSWORD });
      assert.equal(c.status, 201);
      expectError(await f.post('email-change/confirm', { token }), 409, 'email_taken');
      await f.t.req('DELETE', `/projects/${f.pid}/end-users/${c.body.user.id}`, { token: f.owner });
      assert.equal((await f.post('email-change/confirm', { token })).status, 200);
    });

    test('bad input on every request endpoint: 422, nothing counted or sent', async () => {
      const f = await fixture(ctx());
      const { token: session } = await f.register();
      const bodies: unknown[] = [{}, { email: 5 }, { email: 'not an email' }, { email: 'a@example.com', redirect_url: 7 }, { email: 'a@example.com', extra: true }, { email: 'x'.repeat(400) }, { email: "a@example.com' OR '1'='1" }];
      for (const path of ['magic-link', 'password/forgot', 'verify/resend']) for (const b of bodies) expectError(await f.post(path, b), 422);
      for (const b of [{}, { new_email: 'nope' }, { new_email: 5 }, { email: 'a@example.com' }]) expectError(await f.post('email-change/request', b, { user: session! }), 422);
      const db = await f.t.engine.project(f.pid);
      assert.equal((await db.all(`SELECT id FROM ${db.t('_bp_email_requests')}`)).length, 0);
      expectError(await f.t.req('POST', `/${f.pid}/auth/magic-link`, { rawBody: '{"email":' }), 400, 'invalid_json');
      expectError(await f.t.req('POST', '/aaaaaaaaaaaaaaaa/auth/magic-link', { body: { email: 'a@example.com' } }), 404);
    });

    test('rate limit: the 6th request for one recipient in an hour is 429 with Retry-After, registered or not; 429s do not count', async () => {
      const t = ctx();
      const f = await fixture(t);
      const ghost = uniqueEmail('limit');
      for (let i = 0; i < 5; i++) assert.equal((await f.post(i % 2 ? 'magic-link' : 'password/forgot', { email: ghost }, { ip: `198.51.100.${i}` })).status, 200);
      const res = await f.post('magic-link', { email: ghost.toUpperCase() }, { ip: '198.51.100.99' });
      expectError(res, 429);
      const retry = Number(res.headers['retry-after']);
      assert.ok(retry > 3500 && retry <= 3600, `Retry-After ${retry}`);
      expectError(await f.post('verify/resend', { email: ghost }, { ip: '198.51.100.98' }), 429);
      // another project counts separately
      const g = await fixture(t);
      assert.equal((await g.post('magic-link', { email: ghost })).status, 200);
      // an hour after the first request the window has room again; refused requests did not count
      t.clock.advance(60 * MIN + 1000);
      try {
        assert.equal((await f.post('magic-link', { email: ghost })).status, 200);
      } finally {
        t.clock.advance(-(60 * MIN + 1000));
      }
    });

    test('rate limit: 20 requests per client IP per hour across recipients', async () => {
      const f = await fixture(ctx());
      for (let i = 0; i < 20; i++) assert.equal((await f.post('magic-link', { email: uniqueEmail(`ip${i}`) }, { ip: '192.0.2.77' })).status, 200);
      const res = await f.post('password/forgot', { email: uniqueEmail('ip-over') }, { ip: '192.0.2.77' });
      expectError(res, 429);
      assert.ok(Number(res.headers['retry-after']) > 0);
      assert.equal((await f.post('magic-link', { email: uniqueEmail('other-ip') }, { ip: '192.0.2.78' })).status, 200);
      // an address the client writes in front of the proxy's does not change who it is
      expectError(await f.post('magic-link', { email: uniqueEmail('spoof') }, { ip: '6.6.6.6, 192.0.2.77' }), 429);
    });

    test('rate limit: IPv6 clients are counted by their /64', async () => {
      const f = await fixture(ctx());
      for (let i = 0; i < 20; i++) assert.equal((await f.post('magic-link', { email: uniqueEmail(`v6-${i}`) }, { ip: `2001:db8:7:7::${(i + 1).toString(16)}` })).status, 200);
      expectError(await f.post('magic-link', { email: uniqueEmail('v6-over') }, { ip: '2001:db8:7:7:ffff::1' }), 429);
      assert.equal((await f.post('magic-link', { email: uniqueEmail('v6-other') }, { ip: '2001:db8:7:8::1' })).status, 200);
    });

    test('rate limit holds under concurrency: of 12 simultaneous requests for one recipient at most 5 pass', async () => {
      const f = await fixture(ctx());
      const email = uniqueEmail('burst');
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => f.post('magic-link', { email }, { ip: `198.51.100.${100 + i}` })));
      const ok = results.filter((r) => r.status === 200).length;
      assert.equal(ok, 5, `${ok} passed`);
      assert.ok(results.every((r) => r.status === 200 || r.status === 429));
    });

    test('a token consumed concurrently succeeds exactly once', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      await f.post('magic-link', { email });
      const { token } = await f.lastLink(email);
      const results = await Promise.all(Array.from({ length: 8 }, () => f.post('magic-link/consume', { token })));
      assert.equal(results.filter((r) => r.status === 200).length, 1);
      assert.ok(results.every((r) => r.status === 200 || (r.status === 400 && r.body.code === 'invalid_token')));
    });

    test('no provider configured: the request succeeds and a token is issued; nothing is sent', async () => {
      const f = await fixture(ctx(), { mail: false });
      const { email } = await f.register();
      assert.deepEqual((await f.post('magic-link', { email })).body, { ok: true });
      assert.equal((await f.mailTo(email)).length, 0);
      const db = await f.t.engine.project(f.pid);
      assert.equal((await db.all(`SELECT user_id FROM ${db.t('_bp_email_tokens')} WHERE purpose = 'magic_link'`)).length, 1);
    });

    test('custom templates are used, with escaped values', async () => {
      const t = ctx();
      const f = await fixture(t, { name: 'Tom & <Jerry>' });
      await t.req('PUT', `/projects/${f.pid}/auth/templates/magic_link`, { token: f.owner, body: { subject: 'Enter {{project_name}}', body: '<p>Hi {{email}}: <a href="{{link}}">{{project_name}}</a> {{new_email}}</p>' } });
      const { email } = await f.register();
      await f.post('magic-link', { email });
      const { mail } = await f.lastLink(email);
      assert.equal(mail.subject, 'Enter Tom &amp; &lt;Jerry&gt;');
      assert.match(mail.html, /<p>Hi [^<]+@example\.com: <a href="https:\/\/app\.example\.com\/\?token=[0-9a-f]{64}">Tom &amp; &lt;Jerry&gt;<\/a> \{\{new_email\}\}<\/p>/);
    });

    test('require_email_confirmation: register sends a verification email and no session; login is 403 until confirmed', async () => {
      const f = await fixture(ctx(), { confirm: true });
      const email = uniqueEmail('confirm');
      const reg = await f.post('register', { email, password: PASSWORD });
      assert.equal(reg.status, 201);
      assert.equal(reg.body.token, null);
      assert.equal(reg.body.email_verification_required, true);
      assert.equal(reg.body.user.email_verified, false);
      const denied = expectError(await f.post('login', { email, password: PASSWORD }), 403, 'email_not_verified');
      assert.ok(denied.message);
      // a wrong password is still 401, so the 403 reveals nothing to someone without the password
      expectError(await f.post('login', { email, password: 'wrong password!' }), 401, 'invalid_credentials');
      const { token, mail } = await f.lastLink(email);
      assert.equal(mail.subject, 'Confirm your email address for Flow App');
      assert.equal((await f.post('verify/confirm', { token })).status, 200);
      const ok = await f.post('login', { email, password: PASSWORD });
      assert.equal(ok.status, 200);
      assert.match(ok.body.token, /^[0-9a-f]{64}$/);
    });

    test('require_email_confirmation: a magic link proves the address and lets the user in; the password chosen at registration is void until a reset', async () => {
      const f = await fixture(ctx(), { confirm: true });
      const email = uniqueEmail('magic-confirm');
      await f.post('register', { email, password: PASSWORD });
      // the verification email is out before the magic link is asked for: two sends may arrive in either order
      await f.mailTo(email);
      await f.post('magic-link', { email });
      const { token } = await f.lastLink(email);
      const session = await f.post('magic-link/consume', { token });
      assert.equal(session.status, 200);
      assert.equal((await me(f, session.body.token)).body.email_verified, true);
      expectError(await f.post('login', { email, password: PASSWORD }), 401, 'invalid_credentials');
      await f.post('password/forgot', { email });
      assert.equal((await f.post('password/reset', { token: (await f.lastLink(email)).token, password: 'a brand new password' })).status, 200);
      assert.equal((await f.post('login', { email, password: 'a brand new password' })).status, 200);
    });

    // ---- the address's first verification (CONTRACT §10): before it anyone could have registered
    // the address, so nothing from before outlives the proof

    test('pre-registration: a magic link on an unverified account ends every earlier session, voids the registration password and pending links', async () => {
      const f = await fixture(ctx());
      const email = uniqueEmail('victim');
      // the attacker registers the victim's address and keeps a session and an email change ready
      const attacker = await f.post('register', { email, password: ATTACKER_PASSWORD });
      assert.equal(attacker.status, 201);
      const db = await f.t.engine.project(f.pid);
      const hashOf = async () => (await db.get<{ password_hash: string }>(`SELECT password_hash FROM ${db.t('_bp_users')} WHERE email = ?`, [email]))!.password_hash;
      const attackerHash = await hashOf();
      const inbox = uniqueEmail('attacker-inbox');
      await f.post('email-change/request', { new_email: inbox }, { user: attacker.body.token });
      const change = (await f.lastLink(inbox)).token;
      // the owner of the address signs in with a magic link
      await f.post('magic-link', { email });
      const session = await f.post('magic-link/consume', { token: (await f.lastLink(email)).token });
      assert.equal(session.status, 200, JSON.stringify(session.body));
      assert.equal(session.body.user.email_verified, true);
      // the session and its caller reflect the verification at once
      const mine = await me(f, session.body.token);
      assert.equal(mine.status, 200);
      assert.deepEqual(mine.body, session.body.user);
      const resolved = await f.t.services.endUsers.resolve(f.pid, session.body.token);
      assert.equal(authOf(resolved!.user).email_verified, true);
      // nothing of the attacker's works any more
      expectError(await me(f, attacker.body.token), 401);
      const voided = expectError(await f.post('login', { email, password: ATTACKER_PASSWORD }), 401, 'invalid_credentials');
      const unknown = expectError(await f.post('login', { email: uniqueEmail('ghost'), password: ATTACKER_PASSWORD }), 401, 'invalid_credentials');
      assert.deepEqual(voided, unknown, 'a voided password answers like an unknown address');
      expectError(await f.post('email-change/confirm', { token: change }), 400, 'invalid_token');
      // the attacker's hash is gone, not merely flagged: nothing can bring it back
      const stored = await hashOf();
      assert.notEqual(stored, attackerHash);
      assert.ok(!stored.startsWith('$argon2'), stored);
      assert.equal((await me(f, session.body.token)).status, 200);
    });

    test('a voided password is checked like an unknown address: the same dummy argon2 verification', async () => {
      const f = await fixture(ctx());
      const email = uniqueEmail('voided');
      await f.post('register', { email, password: ATTACKER_PASSWORD });
      await f.post('magic-link', { email });
      assert.equal((await f.post('magic-link/consume', { token: (await f.lastLink(email)).token })).status, 200);
      const hasher = f.t.services.hasher;
      const original = hasher.verify;
      const checked: (string | null)[] = [];
      hasher.verify = async (stored, password, tenant) => {
        checked.push(stored);
        return original.call(hasher, stored, password, tenant);
      };
      try {
        expectError(await f.post('login', { email, password: ATTACKER_PASSWORD }), 401, 'invalid_credentials');
        expectError(await f.post('login', { email: uniqueEmail('ghost'), password: ATTACKER_PASSWORD }), 401, 'invalid_credentials');
      } finally {
        hasher.verify = original;
      }
      // null: the hasher verifies against its dummy hash (src/lib/password.ts), as for no account at all
      assert.deepEqual(checked, [null, null]);
    });

    test('a voided password stays void through every flow but a reset', async () => {
      const t = ctx();
      const f = await fixture(t);
      const email = uniqueEmail('stays-void');
      await f.post('register', { email, password: ATTACKER_PASSWORD });
      await f.post('magic-link', { email });
      const session = (await f.post('magic-link/consume', { token: (await f.lastLink(email)).token })).body;
      const stillVoid = async (address: string, what: string) =>
        assert.equal((await f.post('login', { email: address, password: ATTACKER_PASSWORD })).status, 401, what);
      await stillVoid(email, 'after the magic link');
      await f.post('magic-link', { email });
      const again = await f.post('magic-link/consume', { token: (await f.lastLink(email)).token });
      assert.equal(again.status, 200);
      await stillVoid(email, 'after a second magic link');
      await f.post('verify/resend', { email });
      await stillVoid(email, 'after verify/resend');
      expectError(await f.post('register', { email, password: ATTACKER_PASSWORD }), 409, 'email_taken');
      await stillVoid(email, 'after registering again');
      assert.equal((await t.req('PATCH', `/projects/${f.pid}/end-users/${session.user.id}`, { token: f.owner, body: { role: 'admin' } })).status, 200);
      await stillVoid(email, 'after a role change');
      const moved = uniqueEmail('moved');
      await f.post('email-change/request', { new_email: moved }, { user: again.body.token });
      assert.equal((await f.post('email-change/confirm', { token: (await f.lastLink(moved)).token })).status, 200);
      await stillVoid(moved, 'after an email change');
      await f.post('password/forgot', { email: moved });
      assert.equal((await f.post('password/reset', { token: (await f.lastLink(moved)).token, password: 'the owner password' })).status, 200);
      await stillVoid(moved, 'after a reset to another password');
      assert.equal((await f.post('login', { email: moved, password: 'the owner password' })).status, 200);
    });

    test('a password set through a reset link before the first verification survives a magic link (its sessions still end)', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      await f.post('password/forgot', { email });
      assert.equal((await f.post('password/reset', { token: (await f.lastLink(email)).token, password: 'the owner password' })).status, 200);
      const before = await f.post('login', { email, password: 'the owner password' });
      assert.equal(before.status, 200);
      assert.equal(before.body.user.email_verified, false);
      await f.post('magic-link', { email });
      assert.equal((await f.post('magic-link/consume', { token: (await f.lastLink(email)).token })).status, 200);
      expectError(await me(f, before.body.token), 401);
      const after = await f.post('login', { email, password: 'the owner password' });
      assert.equal(after.status, 200);
      assert.equal(after.body.user.email_verified, true);
    });

    test('verify/confirm on an unverified account ends every earlier session, voids pending links and the registration password', async () => {
      const f = await fixture(ctx());
      // the attacker registers the victim's address (no confirmation required: a session at once)
      const email = uniqueEmail('victim');
      const attacker = await f.post('register', { email, password: ATTACKER_PASSWORD });
      assert.equal(attacker.status, 201);
      const second = (await f.post('login', { email, password: ATTACKER_PASSWORD })).body.token as string;
      const inbox = uniqueEmail('attacker-inbox');
      await f.post('email-change/request', { new_email: inbox }, { user: attacker.body.token });
      const change = (await f.lastLink(inbox)).token;
      // ... and asks for the verification link, which the owner of the address clicks
      await f.post('verify/resend', { email });
      const done = await f.post('verify/confirm', { token: (await f.lastLink(email)).token });
      assert.equal(done.status, 200);
      assert.equal(done.body.user.email_verified, true);
      for (const old of [attacker.body.token, second]) expectError(await me(f, old), 401);
      expectError(await f.post('email-change/confirm', { token: change }), 400, 'invalid_token');
      // CONTRACT §10: the password predates the verification; it answers like an unknown address
      const voided = expectError(await f.post('login', { email, password: ATTACKER_PASSWORD }), 401, 'invalid_credentials');
      assert.deepEqual(voided, expectError(await f.post('login', { email: uniqueEmail('ghost'), password: ATTACKER_PASSWORD }), 401));
      // the owner sets a password through "forgot password"
      await f.post('password/forgot', { email });
      assert.equal((await f.post('password/reset', { token: (await f.lastLink(email)).token, password: 'the owner password' })).status, 200);
      const login = await f.post('login', { email, password: 'the owner password' });
      assert.equal(login.status, 200);
      assert.equal(login.body.user.email_verified, true);
    });

    test('verify/confirm keeps a password set through a reset link before it (its sessions still end)', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      await f.post('password/forgot', { email });
      assert.equal((await f.post('password/reset', { token: (await f.lastLink(email)).token, password: 'the owner password' })).status, 200);
      const before = (await f.post('login', { email, password: 'the owner password' })).body.token as string;
      await f.post('verify/resend', { email });
      assert.equal((await f.post('verify/confirm', { token: (await f.lastLink(email)).token })).status, 200);
      expectError(await me(f, before), 401);
      assert.equal((await f.post('login', { email, password: 'the owner password' })).status, 200);
    });

    test('require_email_confirmation: verify/confirm confirms the registration password (SPEC 4.6) and still ends earlier sessions', async () => {
      // sessions of an unverified user exist where confirmation was switched on after they began
      const f = await fixture(ctx());
      const { email, token: early } = await f.register();
      const cfg = await f.t.req('PUT', `/projects/${f.pid}/auth/email-config`, { token: f.owner, body: { require_email_confirmation: true } });
      assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
      expectError(await f.post('login', { email, password: PASSWORD }), 403, 'email_not_verified');
      await f.post('verify/resend', { email });
      assert.equal((await f.post('verify/confirm', { token: (await f.lastLink(email)).token })).status, 200);
      expectError(await me(f, early!), 401);
      const login = await f.post('login', { email, password: PASSWORD });
      assert.equal(login.status, 200);
      assert.equal(login.body.user.email_verified, true);
    });

    test('email-change/confirm: on an unverified account it is the first verification (sessions end, the password is void)', async () => {
      const f = await fixture(ctx());
      const { email, token: first } = await f.register();
      const second = (await f.post('login', { email, password: PASSWORD })).body.token;
      const next = uniqueEmail('next');
      await f.post('email-change/request', { new_email: next }, { user: first! });
      const done = await f.post('email-change/confirm', { token: (await f.lastLink(next)).token });
      assert.equal(done.status, 200);
      assert.equal(done.body.user.email_verified, true);
      for (const old of [first!, second]) expectError(await me(f, old), 401);
      expectError(await f.post('login', { email: next, password: PASSWORD }), 401, 'invalid_credentials');
    });

    test('require_email_confirmation: email-change/confirm on an unverified account ends earlier sessions, the password stays', async () => {
      const f = await fixture(ctx());
      const { token: session } = await f.register();
      const cfg = await f.t.req('PUT', `/projects/${f.pid}/auth/email-config`, { token: f.owner, body: { require_email_confirmation: true } });
      assert.equal(cfg.status, 200, JSON.stringify(cfg.body));
      const next = uniqueEmail('next');
      await f.post('email-change/request', { new_email: next }, { user: session! });
      const done = await f.post('email-change/confirm', { token: (await f.lastLink(next)).token });
      assert.equal(done.status, 200);
      assert.equal(done.body.user.email_verified, true);
      expectError(await me(f, session!), 401);
      assert.equal((await f.post('login', { email: next, password: PASSWORD })).status, 200);
    });

    test('already verified accounts: a magic link or an email change ends nothing; sessions see the new address at once', async () => {
      const f = await fixture(ctx(), { confirm: true });
      const { email } = await f.register();
      assert.equal((await f.post('verify/confirm', { token: (await f.lastLink(email)).token })).status, 200);
      const session = (await f.post('login', { email, password: PASSWORD })).body.token;
      await f.post('magic-link', { email });
      assert.equal((await f.post('magic-link/consume', { token: (await f.lastLink(email)).token })).status, 200);
      assert.equal((await me(f, session)).status, 200);
      assert.equal((await f.post('login', { email, password: PASSWORD })).status, 200);
      const next = uniqueEmail('next');
      await f.post('email-change/request', { new_email: next }, { user: session });
      assert.equal((await f.post('email-change/confirm', { token: (await f.lastLink(next)).token })).status, 200);
      const seen = await me(f, session);
      assert.equal(seen.status, 200);
      assert.equal(seen.body.email, next);
      assert.equal(seen.body.email_verified, true);
      assert.equal((await f.post('login', { email: next, password: PASSWORD })).status, 200);
    });

    test('a login whose password check is under way when a magic link voids the password gets no session', async () => {
      const f = await fixture(ctx());
      const email = uniqueEmail('race-login');
      await f.post('register', { email, password: ATTACKER_PASSWORD });
      await f.post('magic-link', { email });
      const link = (await f.lastLink(email)).token;
      const held = hold(f.t.services.hasher, 'verify', (_stored: unknown, password: unknown) => password === ATTACKER_PASSWORD);
      let login: Promise<Reply>;
      try {
        login = f.post('login', { email, password: ATTACKER_PASSWORD });
        await held.reached;
        assert.equal((await f.post('magic-link/consume', { token: link })).status, 200);
      } finally {
        held.release();
        held.restore();
      }
      expectError(await login, 401, 'invalid_credentials');
      const db = await f.t.engine.project(f.pid);
      const sessions = await db.all(`SELECT token_hash FROM ${db.t('_bp_user_sessions')} s JOIN ${db.t('_bp_users')} u ON u.id = s.user_id WHERE u.email = ?`, [email]);
      assert.equal(sessions.length, 1, 'only the magic-link session');
    });

    test('a login whose password check is under way when a reset replaces the password gets no session', async () => {
      const f = await fixture(ctx());
      const { email } = await f.register();
      await f.post('password/forgot', { email });
      const reset = (await f.lastLink(email)).token;
      const held = hold(f.t.services.hasher, 'verify', (_stored: unknown, password: unknown) => password === PASSWORD);
      let login: Promise<Reply>;
      try {
        login = f.post('login', { email, password: PASSWORD });
        await held.reached;
        assert.equal((await f.post('password/reset', { token: reset, password: 'a brand new password' })).status, 200);
      } finally {
        held.release();
        held.restore();
      }
      expectError(await login, 401, 'invalid_credentials');
    });

    test('an email-change request authenticated before the first verification ended its session issues and sends nothing', async () => {
      const f = await fixture(ctx());
      const email = uniqueEmail('race-change');
      const attacker = await f.post('register', { email, password: ATTACKER_PASSWORD });
      await f.post('magic-link', { email });
      const link = (await f.lastLink(email)).token;
      const inbox = uniqueEmail('attacker-inbox');
      // the request has resolved its session and is about to look the new address up
      const held = hold(f.t.services.endUsers, 'findByEmail', (_db: unknown, address: unknown) => address === inbox);
      let request: Promise<Reply>;
      try {
        request = f.post('email-change/request', { new_email: inbox }, { user: attacker.body.token });
        await held.reached;
        assert.equal((await f.post('magic-link/consume', { token: link })).status, 200);
      } finally {
        held.release();
        held.restore();
      }
      assert.deepEqual((await request).body, { ok: true });
      assert.equal((await f.mailTo(inbox)).length, 0);
      const db = await f.t.engine.project(f.pid);
      assert.equal((await db.all(`SELECT token_hash FROM ${db.t('_bp_email_tokens')} WHERE purpose = 'email_change'`)).length, 0);
    });

    test('tokens of one user consumed at the same time: each answers 200 or 400, never a deadlock', async () => {
      const f = await fixture(ctx());
      for (let round = 0; round < 3; round++) {
        const { email, token: session } = await f.register();
        const next = uniqueEmail('next');
        await f.post('email-change/request', { new_email: next }, { user: session! });
        await f.post('magic-link', { email });
        await f.post('password/forgot', { email });
        await f.post('verify/resend', { email });
        const mails = await f.mailTo(email);
        const latest = (subject: string) => tokenOf(mails.filter((m) => m.subject.startsWith(subject)).pop()!);
        const results = await Promise.all([
          f.post('email-change/confirm', { token: (await f.lastLink(next)).token }),
          f.post('magic-link/consume', { token: latest('Your sign-in link') }),
          f.post('password/reset', { token: latest('Reset your password'), password: 'a brand new password' }),
          f.post('verify/confirm', { token: latest('Confirm your email address') }),
        ]);
        for (const r of results) assert.ok(r.status === 200 || (r.status === 400 && r.body.code === 'invalid_token'), `${r.status} ${JSON.stringify(r.body)}`);
        assert.ok(results.some((r) => r.status === 200));
      }
    });

    test('an end user deleted while consuming a link: 204, and the link 200 or 400, never a deadlock', async () => {
      const f = await fixture(ctx());
      for (let round = 0; round < 3; round++) {
        const { email, user, token: session } = await f.register();
        await f.post('magic-link', { email });
        const link = (await f.lastLink(email)).token;
        const [consumed, removed] = await Promise.all([
          f.post('magic-link/consume', { token: link }),
          f.t.req('DELETE', `/projects/${f.pid}/end-users/${user.id}`, { token: f.owner }),
        ]);
        assert.equal(removed.status, 204, JSON.stringify(removed.body));
        assert.ok(consumed.status === 200 || (consumed.status === 400 && consumed.body.code === 'invalid_token'), `${consumed.status} ${JSON.stringify(consumed.body)}`);
        for (const token of [session!, consumed.body.token].filter(Boolean)) expectError(await me(f, token), 401);
      }
    });

    test('deleting an end user voids their outstanding tokens', async () => {
      const f = await fixture(ctx());
      const { email, user } = await f.register();
      await f.post('password/forgot', { email });
      const { token } = await f.lastLink(email);
      assert.equal((await f.t.req('DELETE', `/projects/${f.pid}/end-users/${user.id}`, { token: f.owner })).status, 204);
      expectError(await f.post('password/reset', { token, password: 'a brand new password' }), 400, 'invalid_token');
    });

    // ---- tokens issued in the background step, after the request has answered: the user row is
    // locked first, and the request's view of the user is checked again under that lock

    if (kind === 'postgres') {
      // SQLite runs one transaction at a time: these interleavings exist on PostgreSQL only
      test('a token issued while email-change/confirm runs for the same user: both complete, no deadlock, and the stale link is void', async () => {
        const f = await fixture(ctx());
        const warned = f.t.warnings.length;
        const { email, token: session } = await f.register();
        const next = uniqueEmail('next');
        await f.post('email-change/request', { new_email: next }, { user: session! });
        const change = (await f.lastLink(next)).token;
        await f.post('magic-link', { email });
        await f.mailTo(email); // an older magic-link token exists: the next issue row-locks it
        const paused = pauseAfter(REPLACE_TOKEN);
        let confirm: Promise<Reply>;
        try {
          assert.deepEqual((await f.post('magic-link', { email })).body, { ok: true });
          await paused.reached;
          confirm = f.post('email-change/confirm', { token: change });
          await untilLockWait(f.t);
        } finally {
          paused.release();
          paused.restore();
        }
        const done = await confirm;
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.equal(done.body.user.email, next);
        // the link went out before the change (it was issued first) and the change voided it
        expectError(await f.post('magic-link/consume', { token: (await f.lastLink(email)).token }), 400, 'invalid_token');
        assert.deepEqual(f.t.warnings.slice(warned), []);
      });

      test("a token issued while the owner deletes the user: 204, no deadlock, nothing left", async () => {
        const f = await fixture(ctx());
        const warned = f.t.warnings.length;
        const { email, user } = await f.register();
        await f.post('password/forgot', { email });
        await f.mailTo(email);
        const paused = pauseAfter(REPLACE_TOKEN);
        let removal: Promise<Reply>;
        try {
          assert.deepEqual((await f.post('password/forgot', { email })).body, { ok: true });
          await paused.reached;
          removal = f.t.req('DELETE', `/projects/${f.pid}/end-users/${user.id}`, { token: f.owner });
          await untilLockWait(f.t);
        } finally {
          paused.release();
          paused.restore();
        }
        assert.equal((await removal).status, 204);
        await f.t.services.emailFlows.settle();
        assert.deepEqual(f.t.warnings.slice(warned), []);
        assert.deepEqual(await tokenRows(f, user.id), []);
      });

      test('two requests whose tokens are issued at the same time leave one live token, the later one', async () => {
        const f = await fixture(ctx());
        const { email, user } = await f.register();
        const paused = pauseAfter(REPLACE_TOKEN);
        try {
          await f.post('magic-link', { email });
          await paused.reached;
          await f.post('magic-link', { email });
          // the second issue waits for the user's lock (or, unlocked, completes beside the first)
          await untilLockWait(f.t, async () => (await tokenRows(f, user.id, 'magic_link')).length > 0);
        } finally {
          paused.release();
          paused.restore();
        }
        const mailed = (await f.mailTo(email)).map(tokenOf);
        assert.equal(mailed.length, 2);
        const live = await tokenRows(f, user.id, 'magic_link');
        assert.equal(live.length, 1, 'one live token per user and purpose');
        assert.ok(mailed.map(hashToken).includes(live[0]!.token_hash));
      });
    }

    test('a link whose token would be issued after the account left the address is neither issued nor sent', async () => {
      const f = await fixture(ctx());
      for (const [purpose, path] of [
        ['password_reset', 'password/forgot'],
        ['magic_link', 'magic-link'],
      ] as const) {
        const { email, user, token: session } = await f.register();
        const next = uniqueEmail('next');
        await f.post('email-change/request', { new_email: next }, { user: session! });
        const change = (await f.lastLink(next)).token;
        const sent = (await f.mailTo(email)).length;
        // the request has answered; its background step is about to issue the token
        const held = hold(PurposeTokens.prototype, 'issue', (_db: unknown, _id: unknown, p: unknown) => p === purpose);
        try {
          assert.deepEqual((await f.post(path, { email })).body, { ok: true });
          await held.reached;
          assert.equal((await f.post('email-change/confirm', { token: change })).status, 200);
        } finally {
          held.release();
          held.restore();
        }
        assert.equal((await f.mailTo(email)).length, sent, `${purpose}: nothing goes to the address the account left`);
        assert.deepEqual(await tokenRows(f, user.id, purpose), [], purpose);
      }
    });

    test('a verification link whose token would be issued after the address was verified is neither issued nor sent', async () => {
      const f = await fixture(ctx());
      const { email, user } = await f.register();
      await f.post('magic-link', { email });
      const magic = (await f.lastLink(email)).token;
      const sent = (await f.mailTo(email)).length;
      const held = hold(PurposeTokens.prototype, 'issue', (_db: unknown, _id: unknown, p: unknown) => p === 'email_verification');
      try {
        assert.deepEqual((await f.post('verify/resend', { email })).body, { ok: true });
        await held.reached;
        assert.equal((await f.post('magic-link/consume', { token: magic })).status, 200);
      } finally {
        held.release();
        held.restore();
      }
      assert.equal((await f.mailTo(email)).length, sent);
      assert.deepEqual(await tokenRows(f, user.id, 'email_verification'), []);
    });

    test('a link for a user the owner removes before its token is issued: nothing issued or sent, nothing logged', async () => {
      const f = await fixture(ctx());
      const warned = f.t.warnings.length;
      const { email, user } = await f.register();
      const held = hold(PurposeTokens.prototype, 'issue', (_db: unknown, _id: unknown, p: unknown) => p === 'password_reset');
      try {
        assert.deepEqual((await f.post('password/forgot', { email })).body, { ok: true });
        await held.reached;
        assert.equal((await f.t.req('DELETE', `/projects/${f.pid}/end-users/${user.id}`, { token: f.owner })).status, 204);
      } finally {
        held.release();
        held.restore();
      }
      assert.equal((await f.mailTo(email)).length, 0);
      assert.deepEqual(f.t.warnings.slice(warned), []);
      assert.deepEqual(await tokenRows(f, user.id), []);
    });

    test('one token per user and purpose is a rule of the store; its migration keeps the newest of earlier duplicates', async () => {
      const f = await fixture(ctx());
      const { email, user } = await f.register();
      const other = await f.register();
      const db = await f.t.engine.project(f.pid);
      const tokens = db.t('_bp_email_tokens');
      const insert = (hash: string, userId: number, purpose: string, at: string) =>
        db.run(`INSERT INTO ${tokens} (token_hash, purpose, user_id, new_email, created_at, expires_at) VALUES (?, ?, ?, NULL, ?, ?)`, [hash, purpose, userId, at, '2999-01-01T00:00:00.000Z']);
      await insert('a'.repeat(64), user.id, 'magic_link', '2026-01-01T00:00:00.000Z');
      await assert.rejects(insert('b'.repeat(64), user.id, 'magic_link', '2026-01-01T00:00:01.000Z'));
      // the store as it was before the migration, with what concurrent requests could leave in it
      await db.run(`DROP INDEX ${db.t('_bp_email_tokens_user_purpose')}`);
      await db.run(`CREATE INDEX "_bp_email_tokens_user" ON ${tokens} (user_id, purpose)`);
      await db.run(`DELETE FROM ${db.t('_bp_migrations')} WHERE name = ?`, ['0006_one_token_per_purpose']);
      await insert('b'.repeat(64), user.id, 'magic_link', '2026-01-01T00:00:02.000Z');
      await insert('c'.repeat(64), user.id, 'magic_link', '2026-01-01T00:00:01.000Z');
      await insert('d'.repeat(64), user.id, 'password_reset', '2026-01-01T00:00:00.000Z');
      await insert('e'.repeat(64), other.user.id, 'magic_link', '2026-01-01T00:00:00.000Z');
      // the earlier steps are recorded as done, so the types they use are never read
      assert.deepEqual(await migrate(db, projectMigrations((n) => db.t(n), { ts: '', bool: '', bigint: '', serial: '' })), ['0006_one_token_per_purpose']);
      const left = await db.all<{ token_hash: string }>(`SELECT token_hash FROM ${tokens} WHERE user_id IN (?, ?) ORDER BY token_hash`, [user.id, other.user.id]);
      assert.deepEqual(left.map((r) => r.token_hash[0]), ['b', 'd', 'e']);
      await assert.rejects(insert('f'.repeat(64), user.id, 'magic_link', '2026-01-01T00:00:03.000Z'));
      // the flows work on the migrated store
      await f.post('magic-link', { email });
      assert.equal((await f.post('magic-link/consume', { token: (await f.lastLink(email)).token })).status, 200);
    });
  },
  // one trusted proxy: the client is the last X-Forwarded-For address (the inject socket is the proxy)
  { EMAIL_ALLOW_PRIVATE_HOSTS: 'true', TRUST_PROXY: '1' },
  { mailers },
);
