// Project auth settings (SPEC 4.8, CONTRACT §6) on every engine, and the redirect rule the email
// links follow (SPEC 4.6): validation names the entry, bad input changes nothing, other owners see 404.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError } from '../support/app.ts';

const TOKEN = 'c'.repeat(64);

await describeEngines('auth settings', (ctx) => {
  const setup = async () => {
    const t = ctx();
    const owner = await registerAccount(t);
    const project = await createProject(t, owner.token, 'Settings');
    const url = `/projects/${project.id}/auth/settings`;
    const put = (body: unknown, token = owner.token) => t.req('PUT', url, { token, body });
    const get = (token = owner.token) => t.req('GET', url, { token });
    return { t, owner, pid: project.id, url, put, get };
  };

  test('a new project has no site URL and no redirect URLs', async () => {
    const { get } = await setup();
    const res = await get();
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { site_url: null, redirect_urls: [] });
  });

  test('PUT sets either field, keeps the other, and normalises URLs', async () => {
    const { put, get } = await setup();
    let res = await put({ site_url: 'https://App.Example.com' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { site_url: 'https://app.example.com/', redirect_urls: [] });
    res = await put({ redirect_urls: ['https://app.example.com/auth', 'http://localhost:3000/callback'] });
    assert.deepEqual(res.body, { site_url: 'https://app.example.com/', redirect_urls: ['https://app.example.com/auth', 'http://localhost:3000/callback'] });
    res = await put({ site_url: null });
    assert.deepEqual(res.body, { site_url: null, redirect_urls: ['https://app.example.com/auth', 'http://localhost:3000/callback'] });
    assert.deepEqual((await get()).body, res.body);
    res = await put({ redirect_urls: [] });
    assert.deepEqual(res.body, { site_url: null, redirect_urls: [] });
  });

  test('20 redirect URLs are accepted, 21 are refused', async () => {
    const { put, get } = await setup();
    const urls = Array.from({ length: 20 }, (_, i) => `https://app${i}.example.com/cb`);
    assert.equal((await put({ redirect_urls: urls })).status, 200);
    expectError(await put({ redirect_urls: [...urls, 'https://one-more.example.com'] }), 422);
    assert.equal((await get()).body.redirect_urls.length, 20);
  });

  const BAD: Array<[string, unknown, string]> = [
    ['site_url not a URL', { site_url: 'app.example.com' }, 'site_url'],
    ['site_url relative', { site_url: '/callback' }, 'site_url'],
    ['site_url javascript:', { site_url: 'javascript:alert(1)' }, 'site_url'],
    ['site_url ftp', { site_url: 'ftp://example.com' }, 'site_url'],
    ['site_url with credentials', { site_url: 'https://u:p@example.com' }, 'site_url'],
    ['site_url with a query', { site_url: 'https://example.com/?a=1' }, 'site_url'],
    ['site_url with a fragment', { site_url: 'https://example.com/#x' }, 'site_url'],
    ['site_url a number', { site_url: 42 }, 'site_url'],
    ['site_url empty', { site_url: '' }, 'site_url'],
    ['site_url too long', { site_url: `https://example.com/${'a'.repeat(2100)}` }, 'site_url'],
    ['redirect_urls not an array', { redirect_urls: 'https://example.com' }, 'redirect_urls'],
    ['redirect_urls with a number', { redirect_urls: ['https://example.com', 5] }, 'redirect_urls[1]'],
    ['redirect_urls entry not http', { redirect_urls: ['https://ok.example.com', 'mailto:a@b.c'] }, 'redirect_urls[1]'],
    ['redirect_urls entry injection', { redirect_urls: ["https://example.com'; DROP TABLE x;--?"] }, 'redirect_urls[0]'],
    ['redirect_urls duplicate after normalising', { redirect_urls: ['https://Example.com/a', 'https://example.com:443/a'] }, 'redirect_urls[1]'],
    ['redirect_urls null', { redirect_urls: null }, 'redirect_urls'],
    ['unknown field', { site_url: null, wildcard: true }, 'wildcard'],
    ['empty body', {}, '(body)'],
  ];
  for (const [name, body, field] of BAD) {
    test(`422 and nothing changed: ${name}`, async () => {
      const { put, get } = await setup();
      await put({ site_url: 'https://keep.example.com', redirect_urls: ['https://keep.example.com/cb'] });
      const before = (await get()).body;
      const err = expectError(await put(body), 422);
      assert.equal(err.details.field, field, JSON.stringify(err));
      assert.deepEqual((await get()).body, before);
    });
  }

  test('malformed JSON is 400 and another content type is 415', async () => {
    const { t, owner, url } = await setup();
    expectError(await t.req('PUT', url, { token: owner.token, rawBody: '{"site_url":' }), 400, 'invalid_json');
    expectError(await t.req('PUT', url, { token: owner.token, rawBody: 'site_url=x', headers: { 'content-type': 'text/plain' } }), 415);
  });

  test('no token, a random token, and another owner: 401, 401, 404 on GET and PUT', async () => {
    const { t, url, put, get } = await setup();
    const other = await registerAccount(t);
    expectError(await t.req('GET', url), 401);
    expectError(await t.req('PUT', url, { body: { site_url: null } }), 401);
    expectError(await get(TOKEN), 401);
    expectError(await put({ site_url: null }, TOKEN), 401);
    expectError(await get(other.token), 404);
    expectError(await put({ site_url: 'https://evil.example.com' }, other.token), 404);
    assert.equal((await get()).body.site_url, null);
    expectError(await t.req('GET', '/projects/aaaaaaaaaaaaaaaa/auth/settings', { token: other.token }), 404);
  });

  test('email links: a matching redirect_url is used; otherwise 422 invalid_redirect_url; omitted uses the site URL', async () => {
    const { t, pid, put } = await setup();
    const s = t.services.authSettings;
    const token = 'ab'.repeat(32);
    // no site URL: the service's own URL
    assert.equal(await s.emailLink(pid, undefined, token), `${t.config.appUrl}?token=${token}`);
    await assert.rejects(s.emailLink(pid, 'https://app.example.com/cb', token), (e: any) => e.status === 422 && e.code === 'invalid_redirect_url');
    await put({ site_url: 'https://app.example.com', redirect_urls: ['https://mobile.example.com/auth'] });
    assert.equal(await s.emailLink(pid, undefined, token), `https://app.example.com/?token=${token}`);
    assert.equal(await s.emailLink(pid, 'https://app.example.com/welcome?x=1', token), `https://app.example.com/welcome?x=1&token=${token}`);
    assert.equal(await s.emailLink(pid, 'https://mobile.example.com/auth/done', token), `https://mobile.example.com/auth/done?token=${token}`);
    for (const bad of ['https://mobile.example.com/authx', 'http://app.example.com/', 'https://app.example.com.evil.com/', 'https://mobile.example.com/auth/../admin', 'not a url', 'javascript:alert(1)']) {
      await assert.rejects(s.emailLink(pid, bad, token), (e: any) => e.status === 422 && e.code === 'invalid_redirect_url', bad);
    }
  });
});
