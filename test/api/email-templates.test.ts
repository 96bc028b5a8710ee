// Email templates (SPEC 2 "Email template", 4.10; CONTRACT §7) on every engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp } from '../support/app.ts';

const KEYS = ['magic_link', 'password_reset', 'email_verification', 'email_change'];

async function owned(t: TestApp, name = 'Acme & <Co>') {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, name);
  const base = `/projects/${project.id}/auth/templates`;
  return {
    owner,
    pid: project.id,
    base,
    req: (method: string, path = '', body?: unknown, token: string | null = owner.token) =>
      t.req(method, `${base}${path}`, { ...(token === null ? {} : { token }), body }),
  };
}

await describeEngines('email templates', (ctx) => {
  test('list: four templates, all defaults, each with key, subject, body and is_custom', async () => {
    const { req } = await owned(ctx());
    const res = await req('GET');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.map((t: any) => t.key), KEYS);
    for (const t of res.body) {
      assert.deepEqual(Object.keys(t).sort(), ['body', 'is_custom', 'key', 'subject']);
      assert.equal(t.is_custom, false);
      assert.match(t.body, /\{\{link\}\}/);
      assert.match(t.subject, /\{\{project_name\}\}/);
    }
  });

  test('PUT sets a custom template; GET shows it; DELETE resets to the default; DELETE again is 204', async () => {
    const { req } = await owned(ctx());
    const def = (await req('GET', '/magic_link')).body;
    let res = await req('PUT', '/magic_link', { subject: 'Log in to {{project_name}}', body: '<p>Hi {{email}}, <a href="{{link}}">go</a></p>' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { key: 'magic_link', subject: 'Log in to {{project_name}}', body: '<p>Hi {{email}}, <a href="{{link}}">go</a></p>', is_custom: true });
    assert.deepEqual((await req('GET', '/magic_link')).body, res.body);
    const list = (await req('GET')).body;
    assert.deepEqual(list.map((t: any) => t.is_custom), [true, false, false, false]);
    res = await req('PUT', '/magic_link', { subject: 'Second', body: 'Body two {{link}}' });
    assert.equal(res.body.subject, 'Second');
    assert.equal((await req('DELETE', '/magic_link')).status, 204);
    assert.deepEqual((await req('GET', '/magic_link')).body, def);
    assert.equal((await req('DELETE', '/magic_link')).status, 204);
  });

  test('unknown key: 404 on GET, PUT and DELETE', async () => {
    const { req } = await owned(ctx());
    for (const key of ['welcome', 'MAGIC_LINK', 'magic_link;drop', '..%2fmagic_link', '%00']) {
      expectError(await req('GET', `/${key}`), 404);
      expectError(await req('PUT', `/${key}`, { subject: 's', body: 'b' }), 404);
      expectError(await req('DELETE', `/${key}`), 404);
    }
  });

  const BAD: Array<[string, unknown, string]> = [
    ['missing subject', { body: 'b' }, 'subject'],
    ['missing body', { subject: 's' }, 'body'],
    ['empty subject', { subject: '', body: 'b' }, 'subject'],
    ['blank subject', { subject: '   ', body: 'b' }, 'subject'],
    ['empty body', { subject: 's', body: '' }, 'body'],
    ['subject with a line break', { subject: 'Hi\r\nBcc: x@evil.com', body: 'b' }, 'subject'],
    ['subject too long', { subject: 's'.repeat(201), body: 'b' }, 'subject'],
    ['body too long', { subject: 's', body: 'b'.repeat(20001) }, 'body'],
    ['subject a number', { subject: 5, body: 'b' }, 'subject'],
    ['body null', { subject: 's', body: null }, 'body'],
    ['unknown field', { subject: 's', body: 'b', is_custom: false }, 'is_custom'],
  ];
  for (const [name, body, field] of BAD) {
    test(`PUT 422 naming ${field}, nothing changed: ${name}`, async () => {
      const { req } = await owned(ctx());
      await req('PUT', '/password_reset', { subject: 'Kept', body: 'Kept {{link}}' });
      const err = expectError(await req('PUT', '/password_reset', body), 422);
      assert.equal(err.details.field, field);
      assert.deepEqual((await req('GET', '/password_reset')).body, { key: 'password_reset', subject: 'Kept', body: 'Kept {{link}}', is_custom: true });
    });
  }

  test('200 emoji fit the subject limit (characters, not UTF-16 units)', async () => {
    const { req } = await owned(ctx());
    assert.equal((await req('PUT', '/email_change', { subject: '📧'.repeat(200), body: 'b' })).status, 200);
  });

  test('preview: sample values and the real project name, HTML-escaped; unknown placeholders kept; nothing saved', async () => {
    const { req } = await owned(ctx());
    const res = await req('POST', '/preview', {
      subject: 'Hello from {{project_name}}',
      body: '<p>{{email}} {{new_email}} <a href="{{link}}">x</a> {{unknown}} {{ link }}</p>',
    });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['body', 'subject']);
    assert.equal(res.body.subject, 'Hello from Acme &amp; &lt;Co&gt;');
    assert.match(res.body.body, /<p>user@example\.com new\.address@example\.com <a href="https:\/\/example\.com\/auth\/callback\?token=0{64}">x<\/a> \{\{unknown\}\} \{\{ link \}\}<\/p>/);
    assert.ok((await req('GET')).body.every((t: any) => !t.is_custom));
  });

  test('preview with a key uses only that key’s placeholders', async () => {
    const { req } = await owned(ctx(), 'Plain');
    const res = await req('POST', '/preview', { key: 'email_change', subject: '{{new_email}} / {{email}}', body: '{{link}}' });
    assert.equal(res.body.subject, 'new.address@example.com / {{email}}');
    expectError(await req('POST', '/preview', { key: 'welcome', subject: 's', body: 'b' }), 422);
  });

  test('preview bad input: 422 for missing, oversize and unknown fields; 400 for malformed JSON', async () => {
    const t = ctx();
    const { req, base, owner } = await owned(t);
    for (const body of [{}, { subject: 's' }, { subject: 's', body: 'b'.repeat(20001) }, { subject: 's', body: 'b', to: 'x@example.com' }]) {
      expectError(await req('POST', '/preview', body), 422);
    }
    expectError(await t.req('POST', `${base}/preview`, { token: owner.token, rawBody: '{"subject":' }), 400, 'invalid_json');
  });

  test('no token, random token 401; another owner 404 on every template path; nothing changed', async () => {
    const t = ctx();
    const { req } = await owned(t);
    const other = await registerAccount(t);
    const calls: Array<[string, string, unknown]> = [
      ['GET', '', undefined],
      ['GET', '/magic_link', undefined],
      ['PUT', '/magic_link', { subject: 'Hijack', body: 'x' }],
      ['DELETE', '/magic_link', undefined],
      ['POST', '/preview', { subject: 's', body: 'b' }],
    ];
    for (const [m, p, b] of calls) {
      expectError(await req(m, p, b, null), 401);
      expectError(await req(m, p, b, 'e'.repeat(64)), 401);
      expectError(await req(m, p, b, other.token), 404);
    }
    assert.equal((await req('GET', '/magic_link')).body.is_custom, false);
  });
});
