// Edge functions (CONTRACT §8) on every engine: deploy/list/get/delete by the owner, invocation
// with the `function` permission, the request and context the module sees, context.db under the
// caller's policies, and failures (throw, timeout, out of memory) as 500/504 while the service goes on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

const ECHO = `export default async (request, context) => ({ status: 201, headers: { 'X-Fn': 'echo' }, body: { request, auth: context.auth } });`;

async function setup(t: TestApp) {
  const d = await dataPlane(t);
  const fnKey = (await d.createKey(['function'])).key;
  const deploy = (name: string, code: string, token = d.owner) => t.req('PUT', `/projects/${d.pid}/functions/${name}`, { token, body: { code } });
  const call = (method: string, path: string, opts: { key?: string | null; user?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const key = opts.key === undefined ? fnKey : opts.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (opts.user) headers['x-user-token'] = opts.user;
    return t.req(method, `/${d.pid}/functions/${path}`, { headers, body: opts.body });
  };
  return { d, fnKey, deploy, call };
}

await describeEngines(
  'edge functions',
  (ctx) => {
    test('deploy 201, redeploy 200, list, get with code, delete 204 then 404', async () => {
      const t = ctx();
      const { d, deploy } = await setup(t);
      let res = await deploy('echo', ECHO);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'created_at', 'name', 'size', 'updated_at']);
      assert.equal(res.body.size, Buffer.byteLength(ECHO));
      res = await deploy('echo', 'export default () => 1;');
      assert.equal(res.status, 200);
      assert.equal(res.body.code, 'export default () => 1;');
      await deploy('another', ECHO);
      const list = await t.req('GET', `/projects/${d.pid}/functions`, { token: d.owner });
      assert.deepEqual(list.body.map((f: any) => f.name), ['another', 'echo']);
      assert.ok(list.body.every((f: any) => !('code' in f)));
      assert.equal((await t.req('GET', `/projects/${d.pid}/functions/echo`, { token: d.owner })).body.code, 'export default () => 1;');
      assert.equal((await t.req('DELETE', `/projects/${d.pid}/functions/echo`, { token: d.owner })).status, 204);
      expectError(await t.req('GET', `/projects/${d.pid}/functions/echo`, { token: d.owner }), 404);
      expectError(await t.req('DELETE', `/projects/${d.pid}/functions/echo`, { token: d.owner }), 404);
    });

    const BAD_CODE: Array<[string, string]> = [
      ['a syntax error', 'export default ('],
      ['an import', "import fs from 'fs'; export default () => 1;"],
      ['no default export', 'export const x = 1;'],
      ['a default export that is not a function', 'export default 42;'],
      ['a top-level throw', "throw new Error('at load'); export default () => 1;"],
      ['a top-level infinite loop', 'for (;;) {} export default () => 1;'],
      ['CommonJS', 'module.exports = () => 1;'],
    ];
    for (const [what, code] of BAD_CODE) {
      test(`deploy refuses ${what}: 422 invalid_function, nothing stored`, async () => {
        const t = ctx();
        const { d, deploy } = await setup(t);
        const err = expectError(await deploy('bad', code), 422, 'invalid_function');
        assert.equal(err.details.field, 'code');
        expectError(await t.req('GET', `/projects/${d.pid}/functions/bad`, { token: d.owner }), 404);
      });
    }

    test('deploy bad input: names, missing/empty/oversize/wrong-typed code, unknown fields', async () => {
      const t = ctx();
      const { d, deploy } = await setup(t);
      for (const name of ['Bad', '1abc', 'a-b', 'a'.repeat(64), "x'; drop table _bp_functions; --", '%2e%2e']) expectError(await deploy(encodeURIComponent(name), ECHO), 422);
      for (const body of [{}, { code: '' }, { code: 5 }, { code: null }, { code: ECHO, runtime: 'deno' }, { code: 'x'.repeat(262145) }]) {
        expectError(await t.req('PUT', `/projects/${d.pid}/functions/ok`, { token: d.owner, body }), 422);
      }
      expectError(await t.req('PUT', `/projects/${d.pid}/functions/ok`, { token: d.owner, rawBody: '{"code":' }), 400, 'invalid_json');
      assert.deepEqual((await t.req('GET', `/projects/${d.pid}/functions`, { token: d.owner })).body, []);
    });

    test('owner paths: no token 401, another owner 404, nothing changed', async () => {
      const t = ctx();
      const { d, deploy } = await setup(t);
      await deploy('echo', ECHO);
      const other = await registerAccount(t);
      const paths: Array<[string, string, unknown]> = [
        ['GET', `/projects/${d.pid}/functions`, undefined],
        ['GET', `/projects/${d.pid}/functions/echo`, undefined],
        ['PUT', `/projects/${d.pid}/functions/echo`, { code: 'export default () => "hijacked";' }],
        ['DELETE', `/projects/${d.pid}/functions/echo`, undefined],
      ];
      for (const [m, p, body] of paths) {
        expectError(await t.req(m, p, { body }), 401);
        expectError(await t.req(m, p, { body, token: 'b'.repeat(64) }), 401);
        expectError(await t.req(m, p, { body, token: other.token }), 404);
      }
      assert.equal((await t.req('GET', `/projects/${d.pid}/functions/echo`, { token: d.owner })).body.code, ECHO);
    });

    test('invoke: the module sees method, sub-path, query, headers (no credentials), JSON body and context.auth', async () => {
      const t = ctx();
      const { d, deploy, call } = await setup(t);
      await deploy('echo', ECHO);
      const alice = await d.endUser();
      const res = await call('POST', 'echo/sub/path?x=1&y=a&y=b', { user: alice.token, body: { hello: 'world' }, headers: { 'x-custom': 'v', cookie: 'secret=1' } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.headers['x-fn'], 'echo');
      const { request, auth } = res.body;
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/sub/path');
      assert.deepEqual(request.query, { x: '1', y: ['a', 'b'] });
      assert.deepEqual(request.body, { hello: 'world' });
      assert.equal(request.headers['x-custom'], 'v');
      for (const h of ['authorization', 'x-user-token', 'cookie']) assert.ok(!(h in request.headers), h);
      assert.deepEqual(auth, { id: alice.id, email: alice.email, role: null, email_verified: false });
      // anonymous, GET, no sub-path
      const anon = await call('GET', 'echo');
      assert.equal(anon.body.auth, null);
      assert.equal(anon.body.request.path, '/');
      assert.equal(anon.body.request.body, null);
      // an invalid user token is anonymous too
      assert.equal((await call('GET', 'echo', { user: 'c'.repeat(64) })).body.auth, null);
    });

    test('invoke: JSON values are 200, nothing is 204, a string with a content type is sent as is', async () => {
      const { deploy, call } = await setup(ctx());
      await deploy('value', 'export default () => [1, "two", { three: 3 }];');
      await deploy('nothing', 'export default async () => {};');
      await deploy('html', "export default () => ({ headers: { 'content-type': 'text/html' }, body: '<h1>hi</h1>' });");
      let res = await call('GET', 'value');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, [1, 'two', { three: 3 }]);
      res = await call('GET', 'nothing');
      assert.equal(res.status, 204);
      res = await call('GET', 'html');
      assert.equal(res.status, 200);
      assert.equal(res.body, '<h1>hi</h1>');
      assert.match(String(res.headers['content-type']), /text\/html/);
    });

    test('invoke credentials: no key 401, another project key 401, revoked 401, key without the function permission 403, unknown function 404', async () => {
      const t = ctx();
      const { d, deploy, call } = await setup(t);
      await deploy('echo', ECHO);
      expectError(await call('GET', 'echo', { key: null }), 401);
      const other = await dataPlane(t);
      expectError(await call('GET', 'echo', { key: other.keys.all }), 401);
      const err = expectError(await call('GET', 'echo', { key: d.keys.all }), 403, 'insufficient_permission');
      assert.equal(err.details.permission, 'function');
      const temp = await d.createKey(['function']);
      await t.req('DELETE', `/projects/${d.pid}/keys/${temp.key_id}`, { token: d.owner });
      expectError(await call('GET', 'echo', { key: temp.key }), 401);
      expectError(await call('GET', 'missing'), 404);
      expectError(await call('GET', 'Bad-Name'), 404);
      expectError(await t.req('GET', '/aaaaaaaaaaaaaaaa/functions/echo', { headers: { authorization: `Bearer ${d.keys.all}` } }), 401);
    });

    test('context.db reads and writes as the caller, under the policies', async () => {
      const t = ctx();
      const { d, deploy, call } = await setup(t);
      const table = await d.createTable('notes', [
        { name: 'body', type: 'text' },
        { name: 'owner', type: 'integer', default: '$auth.id' },
      ]);
      assert.equal((await d.policy(table.id, 'ALL', 'owner = $auth.id')).status, 201);
      await deploy(
        'notes',
        `export default async (request, { db, auth }) => {
          if (request.method === 'POST') return { status: 201, body: await db.insert('notes', request.body) };
          if (request.method === 'DELETE') return db.delete('notes', { id: 'gt.0' });
          return db.select('notes', { select: 'body,owner', order: 'id.asc' });
        };`,
      );
      const alice = await d.endUser();
      const bob = await d.endUser();
      const created = await call('POST', 'notes', { user: alice.token, body: { body: 'alice note' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body[0].owner, alice.id);
      await call('POST', 'notes', { user: bob.token, body: { body: 'bob note' } });
      assert.deepEqual((await call('GET', 'notes', { user: alice.token })).body, [{ body: 'alice note', owner: alice.id }]);
      assert.deepEqual((await call('GET', 'notes', { user: bob.token })).body, [{ body: 'bob note', owner: bob.id }]);
      assert.deepEqual((await call('GET', 'notes')).body, []);
      // a write that violates the policy fails inside the function and, uncaught, is a 500 function_error
      const spoof = await call('POST', 'notes', { user: alice.token, body: { body: 'as bob', owner: bob.id } });
      const err = expectError(spoof, 500, 'function_error');
      assert.match(err.details.error, /policy|rls/i);
      // deletes only the caller's rows
      await call('DELETE', 'notes', { user: bob.token });
      assert.deepEqual((await call('GET', 'notes', { user: alice.token })).body, [{ body: 'alice note', owner: alice.id }]);
    });

    test('context.db errors are catchable with their code; bad calls are refused', async () => {
      const { deploy, call } = await setup(ctx());
      await deploy(
        'catcher',
        `export default async (r, { db }) => {
          const out = {};
          for (const [k, f] of Object.entries({
            missing: () => db.select('no_such_table'),
            badFilter: () => db.select('no_such_table', 'id=eq'),
            badOp: () => db.delete(),
            badQuery: () => db.select('x', { a: { nested: true } }),
          })) {
            try { await f(); out[k] = 'no error'; } catch (e) { out[k] = { code: e.code, status: e.status }; }
          }
          return out;
        };`,
      );
      const res = await call('GET', 'catcher');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.missing, { code: 'not_found', status: 404 });
      assert.equal(res.body.badOp.status, 400);
      assert.equal(res.body.badQuery.status, 400);
    });

    test('failures: throw 500 function_error, endless loop 504 function_timeout, memory 500 function_out_of_memory; the service goes on', async () => {
      const { deploy, call } = await setup(ctx());
      await deploy('boom', "export default () => { throw new Error('kaboom'); };");
      await deploy('loop', 'export default () => { for (;;) {} };');
      await deploy('hog', 'export default () => { const a = []; for (;;) a.push(new Array(1e6).fill(7)); };');
      await deploy('bad_status', 'export default () => ({ status: 42, body: null });');
      await deploy('bigint', 'export default () => 10n;');
      await deploy('ok', 'export default () => ({ fine: true });');
      const boom = expectError(await call('GET', 'boom'), 500, 'function_error');
      assert.equal(boom.details.error, 'kaboom');
      expectError(await call('GET', 'loop'), 504, 'function_timeout');
      expectError(await call('GET', 'hog'), 500, 'function_out_of_memory');
      expectError(await call('GET', 'bad_status'), 500, 'function_invalid_response');
      expectError(await call('GET', 'bigint'), 500, 'function_invalid_response');
      assert.deepEqual((await call('GET', 'ok')).body, { fine: true });
      assert.equal((await ctx().req('GET', '/health')).status, 200);
    });

    test('response headers: an allowlist (origin-wide headers and the request id are the service\'s own); nosniff always; non-JSON text is sandboxed; invalid values are 500', async () => {
      const { deploy, call } = await setup(ctx());
      await deploy(
        'headers',
        `export default () => ({ status: 200, headers: {
          'Set-Cookie': 'sid=1', 'Access-Control-Allow-Origin': 'https://evil.example', 'Access-Control-Allow-Credentials': 'true',
          'Strict-Transport-Security': 'max-age=0', 'Clear-Site-Data': '"*"', 'WWW-Authenticate': 'Basic realm="x"', Refresh: '0; url=https://evil.example',
          'X-Request-Id': 'forged', 'X-Content-Type-Options': 'none', Location: 'https://evil.example', 'Cache-Control': 'max-age=60', 'X-Ok': 'yes' }, body: { ok: true } });`,
      );
      await deploy('redirect', "export default () => ({ status: 302, headers: { Location: '/elsewhere' }, body: null });");
      await deploy('page', "export default () => ({ headers: { 'content-type': 'text/html' }, body: '<script>alert(1)</script>' });");
      await deploy('badvalue', "export default () => ({ headers: { 'x-bad': 'a\\u0001b' }, body: 1 });");
      await deploy('notmodified', "export default () => ({ status: 304, body: 'ignored' });");
      let res = await call('GET', 'headers');
      assert.equal(res.status, 200);
      assert.equal(res.headers['x-ok'], 'yes');
      assert.equal(res.headers['set-cookie'], undefined);
      assert.notEqual(res.headers['access-control-allow-origin'], 'https://evil.example');
      assert.equal(res.headers['access-control-allow-credentials'], undefined);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      for (const h of ['strict-transport-security', 'clear-site-data', 'www-authenticate', 'refresh', 'location']) assert.equal(res.headers[h], undefined, h);
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      assert.equal(res.headers['cache-control'], 'max-age=60');
      res = await call('GET', 'redirect');
      assert.equal(res.status, 302);
      assert.equal(res.headers.location, '/elsewhere');
      res = await call('GET', 'page');
      assert.equal(res.headers['content-security-policy'], 'sandbox');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      expectError(await call('GET', 'badvalue'), 500, 'function_invalid_response');
      res = await call('GET', 'notmodified');
      assert.equal(res.status, 304);
      assert.equal(res.body, '');
    });

    test('the sandbox has no process, require, fetch or file system, and nothing leaks between invocations', async () => {
      const { deploy, call } = await setup(ctx());
      await deploy(
        'probe',
        `export default (request, context) => {
          const seen = globalThis.marker;
          globalThis.marker = 'set';
          Object.prototype.polluted = 'yes';
          let escape;
          try { escape = context.db.select.constructor.constructor('return typeof process')(); } catch (e) { escape = 'threw: ' + e.message; }
          return { process: typeof process, require: typeof require, fetch: typeof fetch, module: typeof module, escape, seen: seen ?? null, polluted: ({}).polluted };
        };`,
      );
      const first = (await call('GET', 'probe')).body;
      assert.deepEqual(first, { process: 'undefined', require: 'undefined', fetch: 'undefined', module: 'undefined', escape: 'undefined', seen: null, polluted: 'yes' });
      const second = (await call('GET', 'probe')).body;
      assert.equal(second.seen, null);
      assert.equal(({} as any).polluted, undefined);
    });
  },
  // long enough for a memory hog to hit its heap limit first on a loaded machine, where sandboxes
  // run at a lower CPU priority than the rest of it
  { FUNCTION_TIMEOUT_MS: '3000', FUNCTION_MEMORY_MB: '32' },
);

await describeEngines(
  'edge functions: slots shared fairly between projects',
  (ctx) => {
    test("a project flooding with hanging invocations holds only its share of the slots: another project's invocations still run and answer 200", async () => {
      const t = ctx();
      const a = await setup(t);
      const b = await setup(t);
      assert.equal((await a.deploy('hang', 'export default () => new Promise(() => {});')).status, 201);
      for (const p of [a, b]) assert.equal((await p.deploy('ok', 'export default () => ({ ok: true });')).status, 201);
      // all four sandbox processes started beforehand: how long a start takes on a loaded machine is not the question here
      const warm = await Promise.all([a.call('GET', 'ok'), a.call('GET', 'ok'), b.call('GET', 'ok'), b.call('GET', 'ok')]);
      assert.deepEqual(warm.map((r) => r.status), [200, 200, 200, 200]);
      let settled = 0;
      const flood = Array.from({ length: 12 }, () =>
        a.call('GET', 'hang').then((res) => {
          settled++;
          return res;
        }),
      );
      const served = await Promise.all([b.call('GET', 'ok'), b.call('GET', 'ok')]);
      for (const res of served) assert.deepEqual([res.status, res.body], [200, { ok: true }]);
      assert.equal(settled, 0, "project b was served while every invocation of project a was still hanging");
      for (const res of await Promise.all(flood)) {
        const timedOut = res.status === 504 && res.body.code === 'function_timeout';
        const refused = res.status === 503 && res.body.code === 'function_busy' && res.headers['retry-after'] === '1';
        assert.ok(timedOut || refused, JSON.stringify([res.status, res.body]));
      }
    });
  },
  // 4 slots, so 2 per project (FUNCTION_PROJECT_CONCURRENCY's default, half)
  { FUNCTION_TIMEOUT_MS: '5000', FUNCTION_MEMORY_MB: '32', FUNCTION_CONCURRENCY: '4' },
);
