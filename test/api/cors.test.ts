// CORS: the data plane (every door applications use, native and supabase-js) allows any origin,
// exposing the headers clients read (CONTRACT §5); the control plane allows only the origins
// CORS_ORIGINS names (none by default: the console is served by the service itself), and answers
// its preflights either way; operations routes have no CORS. Credentials (cookies) never.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type Reply, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';
import { loadConfig } from '../../src/config.ts';

const EVIL = 'https://evil.example';
const CONSOLE = 'https://console.example.com';
const DEV = 'http://localhost:5173';

const preflight = (t: TestApp, url: string, origin: string | null, method = 'POST', headers = 'authorization, content-type') =>
  t.req('OPTIONS', url, { headers: { ...(origin ? { origin } : {}), 'access-control-request-method': method, 'access-control-request-headers': headers } });

const list = (res: Reply, header: string) => String(res.headers[header] ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

function assertNoCors(res: Reply, what: string): void {
  for (const h of ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-allow-methods', 'access-control-expose-headers'])
    assert.equal(res.headers[h], undefined, `${what}: ${h}`);
}

/** Every door of the data plane, as a browser application calls it. */
function dataPlaneUrls(d: DataPlane): string[] {
  return [
    `/${d.pid}/rest/notes`,
    `/${d.pid}/rest/notes/1`,
    `/${d.pid}/auth/login`,
    `/${d.pid}/auth/user`,
    `/${d.pid}/functions/hello`,
    `/${d.pid}/functions/hello/sub/path`,
    `/${d.pid}/rest/v1/notes`,
    `/${d.pid}/auth/v1/token?grant_type=password`,
    `/${d.pid}/functions/v1/hello`,
  ];
}

await describeEngines('CORS with the default settings', (ctx) => {
  test('the data plane: any origin, preflights of every door answered with the methods and headers clients send', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    for (const url of dataPlaneUrls(d)) {
      const pre = await preflight(t, url, EVIL, 'PATCH', 'authorization, x-user-token, prefer, range, apikey, x-client-info');
      assert.equal(pre.status, 204, url);
      assert.equal(pre.headers['access-control-allow-origin'], '*', url);
      assert.equal(pre.headers['access-control-allow-credentials'], undefined, url);
      for (const m of ['get', 'head', 'post', 'patch', 'put', 'delete']) assert.ok(list(pre, 'access-control-allow-methods').includes(m), `${url} ${m}`);
      for (const h of ['authorization', 'x-user-token', 'content-type', 'prefer', 'range', 'accept', 'apikey', 'x-client-info', 'x-supabase-api-version'])
        assert.ok(list(pre, 'access-control-allow-headers').includes(h), `${url} ${h}`);
      assert.equal(pre.headers['access-control-max-age'], '86400');
      assert.equal(pre.body, '', url);
    }
  });

  test("a function route's preflight also allows the headers the application asks for; the other routes keep their list", async () => {
    const t = ctx();
    const d = await dataPlane(t);
    for (const url of [`/${d.pid}/functions/hello`, `/${d.pid}/functions/v1/hello/sub`]) {
      const pre = await preflight(t, url, EVIL, 'POST', 'authorization, X-Custom-Header, x-trace');
      assert.equal(pre.status, 204);
      for (const h of ['authorization', 'apikey', 'x-custom-header', 'x-trace']) assert.ok(list(pre, 'access-control-allow-headers').includes(h), `${url} ${h}`);
      assert.match(String(pre.headers.vary), /Access-Control-Request-Headers/);
      // not a header list: the fixed one
      const odd = await preflight(t, url, EVIL, 'POST', 'x-a\r\nx-b: 1'.replace(/[\r\n]/g, ' '));
      assert.ok(!list(odd, 'access-control-allow-headers').some((h) => h.startsWith('x-a')), String(odd.headers['access-control-allow-headers']));
    }
    const rest = await preflight(t, `/${d.pid}/rest/notes`, EVIL, 'GET', 'x-custom-header');
    assert.ok(!list(rest, 'access-control-allow-headers').includes('x-custom-header'));
  });

  test('the data plane: answers (errors too) allow any origin and expose Content-Range, Preference-Applied, X-Request-Id, Retry-After', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    await d.createTable('notes', [{ name: 'body', type: 'text' }]);
    const ok = await d.rest('GET', 'notes', { headers: { origin: EVIL, prefer: 'count=exact' } });
    const refused = await t.req('GET', `/${d.pid}/rest/notes`, { headers: { origin: EVIL } });
    expectError(refused, 401);
    for (const res of [ok, refused]) {
      assert.equal(res.headers['access-control-allow-origin'], '*');
      for (const h of ['content-range', 'preference-applied', 'x-request-id', 'retry-after']) assert.ok(list(res, 'access-control-expose-headers').includes(h), h);
      assert.equal(res.headers['access-control-allow-credentials'], undefined);
    }
    assert.equal(ok.status, 200);
  });

  test('a preflight without Origin is answered too (never a plain-text 400)', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    assert.equal((await preflight(t, `/${d.pid}/rest/notes`, null)).status, 204);
    assert.equal((await t.req('OPTIONS', `/${d.pid}/rest/notes`)).status, 204);
    assert.equal((await t.req('OPTIONS', '/projects')).status, 204);
  });

  test('the control plane: preflights answered (204) but no origin allowed; answers carry no CORS header', async () => {
    const t = ctx();
    for (const url of ['/projects', '/projects/abc/tables', '/auth/login', '/auth/me']) {
      const pre = await preflight(t, url, EVIL, 'DELETE');
      assert.equal(pre.status, 204, url);
      assert.equal(pre.headers['access-control-allow-origin'], undefined, url);
      assert.equal(pre.headers['access-control-allow-credentials'], undefined, url);
    }
    const res = await t.req('GET', '/projects', { headers: { origin: EVIL } });
    expectError(res, 401);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const login = await t.req('POST', '/auth/login', { headers: { origin: EVIL }, body: { email: 'a@example.com', password: 'nope nope' } });
    assert.equal(login.headers['access-control-allow-origin'], undefined);
  });

  test('operations routes have no CORS: /health, /metrics and /openapi.json answer without it, their preflights are 404', async () => {
    const t = ctx();
    for (const url of ['/health', '/metrics', '/openapi.json']) {
      assertNoCors(await t.req('GET', url, { headers: { origin: EVIL } }), url);
      const pre = await preflight(t, url, EVIL, 'GET');
      expectError(pre, 404, 'not_found');
      assertNoCors(pre, url);
    }
    // a path that merely looks like the data plane is not one
    expectError(await preflight(t, '/notaprojectid/rest/x', EVIL), 404, 'not_found');
  });
});

await describeEngines(
  'CORS with CORS_ORIGINS set',
  (ctx) => {
    test('the control plane: the listed origins, and only they, are allowed, on preflights and answers (errors too)', async () => {
      const t = ctx();
      for (const origin of [CONSOLE, DEV]) {
        const pre = await preflight(t, '/projects/abc', origin, 'PATCH');
        assert.equal(pre.status, 204);
        assert.equal(pre.headers['access-control-allow-origin'], origin);
        assert.match(String(pre.headers.vary), /Origin/i);
        for (const m of ['get', 'post', 'patch', 'put', 'delete']) assert.ok(list(pre, 'access-control-allow-methods').includes(m), m);
        for (const h of ['authorization', 'content-type']) assert.ok(list(pre, 'access-control-allow-headers').includes(h), h);
        assert.equal(pre.headers['access-control-allow-credentials'], undefined);
        const res = await t.req('GET', '/projects', { headers: { origin } });
        expectError(res, 401);
        assert.equal(res.headers['access-control-allow-origin'], origin);
        assert.ok(list(res, 'access-control-expose-headers').includes('x-request-id'));
      }
      for (const origin of [EVIL, `${CONSOLE}.evil.example`, 'https://console.example.com:444', 'http://console.example.com', 'null']) {
        const pre = await preflight(t, '/auth/login', origin);
        assert.equal(pre.status, 204);
        assert.equal(pre.headers['access-control-allow-origin'], undefined, origin);
        assert.equal((await t.req('GET', '/auth/me', { headers: { origin } })).headers['access-control-allow-origin'], undefined, origin);
      }
    });

    test('the data plane still allows any origin; operations routes still have none', async () => {
      const t = ctx();
      const d = await dataPlane(t);
      assert.equal((await preflight(t, `/${d.pid}/rest/notes`, EVIL)).headers['access-control-allow-origin'], '*');
      assertNoCors(await t.req('GET', '/health', { headers: { origin: CONSOLE } }), '/health');
    });
  },
  { CORS_ORIGINS: ` ${CONSOLE}, ${DEV} ` },
);

await describeEngines(
  'CORS with CORS_ORIGINS=*',
  (ctx) => {
    test('the control plane allows any origin, still without credentials', async () => {
      const pre = await preflight(ctx(), '/projects', EVIL);
      assert.equal(pre.headers['access-control-allow-origin'], '*');
      assert.equal(pre.headers['access-control-allow-credentials'], undefined);
    });
  },
  { CORS_ORIGINS: '*' },
);

test('CORS_ORIGINS: origins only (scheme, host, port), or *; anything else refused naming the value', () => {
  assert.deepEqual(loadConfig({}).corsOrigins, []);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: '' }).corsOrigins, []);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: `${CONSOLE},${DEV},http://[::1]:8080` }).corsOrigins, [CONSOLE, DEV, 'http://[::1]:8080']);
  for (const bad of ['console.example.com', `${CONSOLE}/`, `${CONSOLE}/console`, 'ftp://files.example.com', 'https://a.example.com:99999', `${CONSOLE}?x=1`, 'https://user@a.example.com', 'HTTPS://A.EXAMPLE.COM'])
    assert.throws(() => loadConfig({ CORS_ORIGINS: `${CONSOLE},${bad}` }), { message: new RegExp(`^CORS_ORIGINS must be .* got '${bad.replace(/[.?*+[\]/]/g, '\\$&')}'$`) });
});
