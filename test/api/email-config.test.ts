// Email configuration (SPEC 2, 4.9; CONTRACT §7) on every engine: write-only secrets sealed at rest,
// validation that names the field and changes nothing, SMTP host rules at save and at send, and
// test emails through a real SMTP server (plain, AUTH, STARTTLS verified against the host name) and
// through an HTTP provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp } from '../support/app.ts';
import { startApiCapture, startSmtpCapture, type ApiCapture, type SmtpCapture } from '../support/mail-capture.ts';
import { makeCertificates, type TestCertificates } from '../support/tls.ts';
import { smtpMailer, emailApiMailer } from '../../src/email/mailer.ts';
import { systemResolver, type Resolver } from '../../src/lib/net-guard.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { randomBytes } from 'node:crypto';
import type { MailerFactory } from '../../src/services/email-config.ts';

const SMTP = { provider: 'smtp', from_address: 'Hello@Example.com', from_name: 'Example App', smtp_host: 'smtp.example.com', smtp_port: 587, smtp_username: 'mailer', smtp_encryption: 'tls', smtp_password: 'smtp secret 123' };
const EMPTY = {
  provider: null, from_address: null, from_name: null, smtp_host: null, smtp_port: null, smtp_username: null, smtp_encryption: null,
  require_email_confirmation: false, has_smtp_password: false, has_emailapi_api_key: false,
};

async function owned(t: TestApp) {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, 'Mail Project');
  const url = `/projects/${project.id}/auth/email-config`;
  return {
    owner,
    pid: project.id,
    url,
    put: (body: unknown, token = owner.token) => t.req('PUT', url, { token, body }),
    get: (token = owner.token) => t.req('GET', url, { token }),
    send: (body: unknown, token = owner.token) => t.req('POST', `${url}/test`, { token, body }),
  };
}

await describeEngines('email config', (ctx) => {
  test('GET before any PUT: provider null and has_* false', async () => {
    const { get } = await owned(ctx());
    const res = await get();
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, EMPTY);
  });

  test('PUT smtp: 200, secrets write-only, sealed at rest; omitted secret kept, empty string clears', async () => {
    const t = ctx();
    const { pid, put, get } = await owned(t);
    let res = await put(SMTP);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const expected = { ...EMPTY, provider: 'smtp', from_address: 'hello@example.com', from_name: 'Example App', smtp_host: 'smtp.example.com', smtp_port: 587, smtp_username: 'mailer', smtp_encryption: 'tls', has_smtp_password: true };
    assert.deepEqual(res.body, expected);
    assert.deepEqual((await get()).body, expected);
    assert.ok(!JSON.stringify(res.body).includes('smtp secret'));
    const db = await t.engine.project(pid);
    const row = await db.get<Record<string, string>>(`SELECT * FROM ${db.t('_bp_email_config')}`);
    assert.ok(row && !JSON.stringify(row).includes('smtp secret 123'), 'the password is not stored in clear');
    assert.match(row.smtp_password_sealed!, /^v1\./);
    // the sealed value is bound to this project and field
    assert.equal(t.secrets.open(row.smtp_password_sealed!, `${pid}:smtp_password`), 'smtp secret 123');
    assert.throws(() => t.secrets.open(row.smtp_password_sealed!, `otherproject00000:smtp_password`));
    res = await put({ from_name: 'Renamed', require_email_confirmation: true });
    assert.deepEqual(res.body, { ...expected, from_name: 'Renamed', require_email_confirmation: true });
    assert.equal(t.secrets.open((await db.get<Record<string, string>>(`SELECT * FROM ${db.t('_bp_email_config')}`))!.smtp_password_sealed!, `${pid}:smtp_password`), 'smtp secret 123');
    res = await put({ smtp_password: '' });
    assert.equal(res.body.has_smtp_password, false);
  });

  test('PUT emailapi needs a key; switching back to smtp keeps the smtp settings', async () => {
    const { put } = await owned(ctx());
    assert.equal((await put(SMTP)).status, 200);
    const err = expectError(await put({ provider: 'emailapi' }), 422);
    assert.equal(err.details.field, 'emailapi_api_key');
    let res = await put({ provider: 'emailapi', emailapi_api_key: 're_live_key' });
    assert.equal(res.status, 200);
    assert.equal(res.body.provider, 'emailapi');
    assert.equal(res.body.has_emailapi_api_key, true);
    assert.equal(res.body.has_smtp_password, true);
    res = await put({ provider: 'smtp' });
    assert.equal(res.body.smtp_host, 'smtp.example.com');
    expectError(await put({ provider: 'emailapi', emailapi_api_key: '' }), 422);
  });

  const BAD: Array<[string, Record<string, unknown>, string]> = [
    ['no provider on first PUT', { from_address: 'a@example.com' }, 'provider'],
    ['unknown provider', { ...SMTP, provider: 'sendgrid' }, 'provider'],
    ['from_address missing', { ...SMTP, from_address: undefined }, 'from_address'],
    ['from_address not an email', { ...SMTP, from_address: 'not-an-email' }, 'from_address'],
    ['from_address with a header injection', { ...SMTP, from_address: 'a@example.com\r\nBcc: x@evil.com' }, 'from_address'],
    ['from_name with a line break', { ...SMTP, from_name: 'A\r\nBcc: x@evil.com' }, 'from_name'],
    ['from_name too long', { ...SMTP, from_name: 'n'.repeat(101) }, 'from_name'],
    ['smtp_host localhost', { ...SMTP, smtp_host: 'localhost' }, 'smtp_host'],
    ['smtp_host loopback IP', { ...SMTP, smtp_host: '127.0.0.1' }, 'smtp_host'],
    ['smtp_host IPv6 loopback', { ...SMTP, smtp_host: '[::1]' }, 'smtp_host'],
    ['smtp_host private IP', { ...SMTP, smtp_host: '10.1.2.3' }, 'smtp_host'],
    ['smtp_host metadata IP', { ...SMTP, smtp_host: '169.254.169.254' }, 'smtp_host'],
    ['smtp_host decimal IP spelling', { ...SMTP, smtp_host: '2130706433' }, 'smtp_host'],
    ['smtp_host single label', { ...SMTP, smtp_host: 'mailserver' }, 'smtp_host'],
    ['smtp_host with injection', { ...SMTP, smtp_host: 'smtp.example.com; rm -rf /' }, 'smtp_host'],
    ['smtp_host with a port', { ...SMTP, smtp_host: 'smtp.example.com:25' }, 'smtp_host'],
    ['smtp_host empty', { ...SMTP, smtp_host: '' }, 'smtp_host'],
    ['smtp_host missing for smtp', { ...SMTP, smtp_host: undefined }, 'smtp_host'],
    ['smtp_port not allowed', { ...SMTP, smtp_port: 26 }, 'smtp_port'],
    ['smtp_port 22', { ...SMTP, smtp_port: 22 }, 'smtp_port'],
    ['smtp_port a string', { ...SMTP, smtp_port: '587' }, 'smtp_port'],
    ['smtp_port fractional', { ...SMTP, smtp_port: 587.5 }, 'smtp_port'],
    ['smtp_encryption unknown', { ...SMTP, smtp_encryption: 'starttls' }, 'smtp_encryption'],
    ['smtp_encryption missing for smtp', { ...SMTP, smtp_encryption: undefined }, 'smtp_encryption'],
    ['smtp_password too long', { ...SMTP, smtp_password: 'p'.repeat(1025) }, 'smtp_password'],
    ['smtp_password a number', { ...SMTP, smtp_password: 12345678 }, 'smtp_password'],
    ['emailapi_api_key with a line break', { provider: 'emailapi', from_address: 'a@example.com', emailapi_api_key: 'key\r\nX-Injected: 1' }, 'emailapi_api_key'],
    ['emailapi_api_key with a control character', { provider: 'emailapi', from_address: 'a@example.com', emailapi_api_key: 'key\u0001' }, 'emailapi_api_key'],
    ['emailapi_api_key with a space', { provider: 'emailapi', from_address: 'a@example.com', emailapi_api_key: 're_ key' }, 'emailapi_api_key'],
    ['require_email_confirmation a string', { ...SMTP, require_email_confirmation: 'yes' }, 'require_email_confirmation'],
    ['unknown field', { ...SMTP, smtp_pasword: 'typo' }, 'smtp_pasword'],
    ['has_smtp_password is response-only', { ...SMTP, has_smtp_password: true }, 'has_smtp_password'],
    ['empty body', {}, '(body)'],
  ];
  for (const [name, body, field] of BAD) {
    test(`PUT 422 naming ${field}, nothing changed: ${name}`, async () => {
      const { put, get } = await owned(ctx());
      const before = (await get()).body;
      const err = expectError(await put(JSON.parse(JSON.stringify(body))), 422);
      assert.equal(err.details.field, field, JSON.stringify(err));
      assert.deepEqual((await get()).body, before);
      // on a configured project an omitted field keeps its value, so only the other cases apply again
      if (!/missing|no provider|empty body/.test(name)) {
        // and a configured project keeps its configuration
        assert.equal((await put(SMTP)).status, 200);
        const kept = (await get()).body;
        expectError(await put(JSON.parse(JSON.stringify(body))), 422);
        assert.deepEqual((await get()).body, kept);
      }
    });
  }

  test('malformed JSON 400, wrong content type 415, oversize body 413', async () => {
    const t = ctx();
    const { owner, url } = await owned(t);
    expectError(await t.req('PUT', url, { token: owner.token, rawBody: '{"provider":"smtp"' }), 400, 'invalid_json');
    expectError(await t.req('PUT', url, { token: owner.token, rawBody: 'provider=smtp', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415);
    expectError(await t.req('PUT', url, { token: owner.token, body: { ...SMTP, from_name: 'x'.repeat(2_000_000) } }), 413);
  });

  test('no token 401, random token 401, another owner 404 on every email-config path', async () => {
    const t = ctx();
    const { put, get, send } = await owned(t);
    assert.equal((await put(SMTP)).status, 200);
    const other = await registerAccount(t);
    const { url } = await owned(t);
    expectError(await t.req('GET', url), 401);
    expectError(await t.req('PUT', url, { body: SMTP }), 401);
    expectError(await t.req('POST', `${url}/test`, { body: { to: 'a@example.com' } }), 401);
    const random = 'f'.repeat(64);
    expectError(await get(random), 401);
    expectError(await put(SMTP, random), 401);
    expectError(await send({ to: 'a@example.com' }, random), 401);
    expectError(await get(other.token), 404);
    expectError(await put({ from_name: 'Hijacked' }, other.token), 404);
    expectError(await send({ to: 'a@example.com' }, other.token), 404);
    assert.equal((await get()).body.from_name, 'Example App');
  });

  test('POST test: 422 without a provider; bad recipient 422', async () => {
    const { send, put } = await owned(ctx());
    expectError(await send({ to: 'someone@example.com' }), 422, 'email_not_configured');
    assert.equal((await put(SMTP)).status, 200);
    for (const body of [{}, { to: 'not an email' }, { to: 5 }, { to: 'a@example.com', cc: 'b@example.com' }, { to: 'a@example.com\r\nBcc: x@evil.com' }]) {
      expectError(await send(body), 422);
    }
  });
});

// ---- delivery through real peers: an SMTP server and an HTTP provider on 127.0.0.1
let plain: SmtpCapture;
let authed: SmtpCapture;
let tlsGood: SmtpCapture;
let tlsWrongName: SmtpCapture;
let api: ApiCapture;
let certs: TestCertificates;
let wrongCerts: TestCertificates;
before(async () => {
  certs = makeCertificates('localhost');
  wrongCerts = makeCertificates('mail.other.example');
  [plain, authed, tlsGood, tlsWrongName, api] = await Promise.all([
    startSmtpCapture(),
    startSmtpCapture({ auth: { user: 'mailer', pass: 'right password' } }),
    startSmtpCapture({ tls: certs }),
    startSmtpCapture({ tls: wrongCerts }),
    startApiCapture(),
  ]);
});
after(async () => {
  await Promise.all([plain, authed, tlsGood, tlsWrongName, api].map((s) => s?.close()));
});

/** SMTP settings must name port 25/465/587/2525; these peers listen elsewhere, so the factory maps the port. */
const PORTS: Record<number, () => number> = { 25: () => plain.port, 2525: () => authed.port, 587: () => tlsGood.port, 465: () => tlsWrongName.port };
let resolver: Resolver = systemResolver;
const mailers: MailerFactory = {
  smtp: (s) => smtpMailer({ ...s, port: PORTS[s.port]!() }, { resolver: { lookup: (h) => resolver.lookup(h) }, allowPrivateHosts: true, timeoutMs: 5000, ca: certs.ca + wrongCerts.ca }),
  emailapi: (key) => emailApiMailer(key, { baseUrl: api.baseUrl, timeoutMs: 5000 }),
};

await describeEngines(
  'email delivery',
  (ctx) => {
    const LOCAL = { ...SMTP, smtp_host: 'localhost', smtp_username: null, smtp_password: '', smtp_encryption: 'none', smtp_port: 25 };

    test('plain SMTP: the test email arrives with the sender, recipient and project name', async () => {
      const { send, put } = await owned(ctx());
      assert.equal((await put(LOCAL)).status, 200);
      const before = plain.messages.length;
      const res = await send({ to: 'Recipient@Example.com' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { sent: true });
      const m = plain.messages[before]!;
      assert.equal(m.from, 'hello@example.com');
      assert.deepEqual(m.to, ['recipient@example.com']);
      assert.equal(m.subject, 'Test email from Mail Project');
      assert.match(m.text, /test email from Mail Project/);
      assert.match(m.raw, /From: Example App <hello@example.com>/);
    });

    test('SMTP AUTH: the right password is used; a wrong one is 502 authentication_failed', async () => {
      const { send, put } = await owned(ctx());
      assert.equal((await put({ ...LOCAL, smtp_port: 2525, smtp_username: 'mailer', smtp_password: 'right password' })).status, 200);
      const before = authed.messages.length;
      assert.equal((await send({ to: 'a@example.com' })).status, 200);
      assert.equal(authed.messages.length, before + 1);
      assert.equal((await put({ smtp_password: 'wrong password' })).status, 200);
      const res = await send({ to: 'a@example.com' });
      assert.equal(res.status, 502);
      assert.equal(res.body.code, 'email_delivery_failed');
      assert.equal(res.body.details.reason, 'authentication_failed');
      assert.ok(!JSON.stringify(res.body).includes('wrong password'));
    });

    test('STARTTLS: verified against the host name; a certificate for another name is 502 tls_failed', async () => {
      const { send, put } = await owned(ctx());
      assert.equal((await put({ ...LOCAL, smtp_port: 587, smtp_encryption: 'tls' })).status, 200);
      const before = tlsGood.messages.length;
      const ok = await send({ to: 'a@example.com' });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(tlsGood.messages.length, before + 1);
      assert.equal((await put({ smtp_port: 465 })).status, 200); // mapped to the server whose certificate names mail.other.example
      const bad = await send({ to: 'a@example.com' });
      assert.equal(bad.status, 502);
      assert.equal(bad.body.details.reason, 'tls_failed');
      assert.equal(tlsWrongName.messages.length, 0);
    });

    test('DNS answers are checked at send: a name resolving to a private address is refused (no connection)', async () => {
      const t = ctx();
      const { send, put } = await owned(t);
      // saved as a public-looking name; the app allows private hosts for the loopback peers, so use a
      // resolver answer that is private AND a mailer that does not allow private hosts
      const strict = smtpMailer({ host: 'smtp.example.com', port: plain.port, encryption: 'none', username: null, password: null }, {
        resolver: { lookup: async () => ['93.184.216.34', '10.0.0.7'] },
        allowPrivateHosts: false,
        timeoutMs: 2000,
      });
      await assert.rejects(strict.send({ from: { name: 'x', address: 'x@example.com' }, to: 'a@example.com', subject: 's', html: 'h', text: 't' }), (e: any) => e.reason === 'host_not_allowed');
      assert.equal((await put({ ...LOCAL })).status, 200);
      resolver = { lookup: async () => ['127.0.0.1'] };
      try {
        assert.equal((await send({ to: 'a@example.com' })).status, 200);
      } finally {
        resolver = systemResolver;
      }
    });

    test('a server that is gone is 502 connection_failed, without socket details', async () => {
      const t = ctx();
      const { send, put } = await owned(t);
      const gone = await startSmtpCapture();
      const port = gone.port;
      await gone.close();
      const saved = PORTS[25]!;
      PORTS[25] = () => port;
      try {
        assert.equal((await put(LOCAL)).status, 200);
        const res = await send({ to: 'a@example.com' });
        assert.equal(res.status, 502);
        assert.equal(res.body.details.reason, 'connection_failed');
        assert.ok(!res.body.message.includes(String(port)) && !/ECONNREFUSED|127\.0\.0\.1/.test(res.body.message), res.body.message);
      } finally {
        PORTS[25] = saved;
      }
    });

    test('a secret sealed under another MASTER_KEY (changed, or restored from elsewhere) is 422 naming it, to set again, not a 500', async () => {
      const t = ctx();
      const { send, put, pid } = await owned(t);
      assert.equal((await put({ provider: 'emailapi', from_address: 'hello@example.com', emailapi_api_key: 're_test_123' })).status, 200);
      const db = await t.engine.project(pid);
      const elsewhere = new SecretBox(randomBytes(32)).seal('re_test_123', `${pid}:emailapi_api_key`);
      await db.run(`UPDATE ${db.t('_bp_email_config')} SET emailapi_api_key_sealed = ?`, [elsewhere]);
      const before = api.requests.length;
      const err = expectError(await send({ to: 'a@example.com' }), 422, 'validation_failed');
      assert.deepEqual(err.details, { field: 'emailapi_api_key', reason: 'unreadable' });
      assert.match(err.message, /MASTER_KEY/);
      assert.equal(api.requests.length, before, 'nothing sent');
      assert.equal((await put({ emailapi_api_key: 're_test_456' })).status, 200);
      assert.equal((await send({ to: 'a@example.com' })).status, 200, 'set again, it sends');
    });

    test('emailapi: POST {base}/emails with the bearer key and the JSON message; 401 and 500 become 502', async () => {
      const { send, put } = await owned(ctx());
      assert.equal((await put({ provider: 'emailapi', from_address: 'hello@example.com', from_name: 'Example App', emailapi_api_key: 're_test_123' })).status, 200);
      const before = api.requests.length;
      const res = await send({ to: 'a@example.com' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const r = api.requests[before]!;
      assert.equal(r.method, 'POST');
      assert.equal(r.path, '/emails');
      assert.equal(r.authorization, 'Bearer re_test_123');
      assert.deepEqual(Object.keys(r.body).sort(), ['from', 'html', 'subject', 'text', 'to']);
      assert.equal(r.body.from, 'Example App <hello@example.com>');
      assert.deepEqual(r.body.to, ['a@example.com']);
      // without a display name (or one of blanks only), the bare address
      for (const name of ['', '   ']) {
        assert.equal((await put({ from_name: name })).status, 200);
        assert.equal((await send({ to: 'a@example.com' })).status, 200);
        assert.equal(api.requests.at(-1)!.body.from, 'hello@example.com', JSON.stringify(name));
      }
      for (const [status, reason] of [[401, 'authentication_failed'], [500, 'provider_error']] as const) {
        api.status = status;
        try {
          const bad = await send({ to: 'a@example.com' });
          assert.equal(bad.status, 502);
          assert.equal(bad.body.details.reason, reason);
          assert.ok(!JSON.stringify(bad.body).includes('re_test_123'));
        } finally {
          api.status = 200;
        }
      }
    });
  },
  { EMAIL_ALLOW_PRIVATE_HOSTS: 'true' },
  { mailers },
);
