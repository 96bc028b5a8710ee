// HTTP behaviour shared by every endpoint (CONTRACT §0, §9) on every engine: health, OpenAPI and
// docs, request ids, the flat error shape for framework errors, body parsing limits, no secret echo.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp, type Reply } from '../support/app.ts';

const MiB = 1024 * 1024;

async function counts(t: TestApp): Promise<{ accounts: number; projects: number }> {
  const p = t.engine.platform;
  const a = await p.get<{ n: number }>(`SELECT count(*) AS n FROM ${p.t('accounts')}`);
  const pr = await p.get<{ n: number }>(`SELECT count(*) AS n FROM ${p.t('projects')}`);
  return { accounts: Number(a!.n), projects: Number(pr!.n) };
}

function requestId(res: Reply, what: string): string {
  const id = res.headers['x-request-id'];
  assert.ok(typeof id === 'string' && id.length >= 8, `${what}: X-Request-Id present (${String(id)})`);
  return id;
}

function withContext(what: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
}

await describeEngines('platform http', (ctx) => {
  test('GET /health is 200 {status:"ok"}', async () => {
    const t = ctx();
    const res = await t.req('GET', '/health');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(res.body, { status: 'ok' });
    requestId(res, 'health');
  });

  test('GET /openapi.json is an OpenAPI 3 document with the routes and their request body schemas', async () => {
    const t = ctx();
    const res = await t.req('GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const doc = res.body;
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(typeof doc.info?.title, 'string');
    for (const path of ['/health', '/auth/register', '/auth/login', '/auth/me', '/projects', '/projects/{id}', '/projects/{id}/tables', '/projects/{id}/tables/{table_id}']) {
      assert.ok(doc.paths[path], `lists ${path}`);
    }
    assert.deepEqual(Object.keys(doc.paths['/projects/{id}']).filter((m) => ['get', 'patch', 'delete'].includes(m)).sort(), ['delete', 'get', 'patch']);
    assert.deepEqual(Object.keys(doc.paths['/projects/{id}/tables/{table_id}']).filter((m) => ['get', 'patch', 'delete'].includes(m)).sort(), ['delete', 'get', 'patch']);
    const params = doc.paths['/projects/{id}/tables/{table_id}'].get.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort();
    assert.deepEqual(params, ['path:id', 'path:table_id']);

    const bodyOf = (path: string, method: string) => {
      const schema = doc.paths[path][method]?.requestBody?.content?.['application/json']?.schema;
      assert.ok(schema, `${method.toUpperCase()} ${path} has a JSON request body schema`);
      return schema;
    };
    const register = bodyOf('/auth/register', 'post');
    assert.equal(register.type, 'object');
    assert.deepEqual([...register.required].sort(), ['email', 'name', 'password']);
    assert.equal(register.additionalProperties, false);
    assert.equal(register.properties.password.minLength, 8);
    const project = bodyOf('/projects', 'post');
    assert.deepEqual(project.required, ['name']);
    assert.equal(project.properties.name.maxLength, 100);
    assert.ok(bodyOf('/projects/{id}', 'patch').properties.description);
    const table = bodyOf('/projects/{id}/tables', 'post');
    assert.deepEqual([...table.required].sort(), ['columns', 'name']);
    assert.equal(table.properties.columns.type, 'array');
    assert.ok(table.properties.columns.items.properties.type, 'column_def schema is inlined or referenced');
    const alter = bodyOf('/projects/{id}/tables/{table_id}', 'patch');
    for (const f of ['name', 'add_columns', 'drop_columns', 'rename_columns']) assert.ok(alter.properties[f], `table PATCH documents ${f}`);
    assert.ok(doc.components?.securitySchemes?.platformToken, 'platform token security scheme');
    assert.ok(doc.paths['/projects'].get.security, 'project routes declare their security');
  });

  test('GET /docs answers 200 HTML', async () => {
    const t = ctx();
    const slash = await t.req('GET', '/docs/');
    assert.equal(slash.status, 200);
    assert.match(String(slash.headers['content-type']), /^text\/html/);
    assert.match(String(slash.body), /<html/i);
    const bare = await t.req('GET', '/docs');
    assert.ok(bare.status === 200 || (bare.status >= 301 && bare.status <= 308), `/docs: ${bare.status}`);
    if (bare.status === 200) assert.match(String(bare.headers['content-type']), /^text\/html/);
    requestId(slash, '/docs/');
  });

  test("GET /docs is branded as Baseplate: its title, its logo and favicon, not the framework's", async () => {
    const t = ctx();
    const page = String((await t.req('GET', '/docs/')).body);
    assert.match(page, /<title>Baseplate API<\/title>/);
    assert.doesNotMatch(page, /Swagger UI<\/title>|favicon-32x32\.png/);
    const favicon = /href="([^"]*baseplate\.svg)"/.exec(page);
    assert.ok(favicon, 'the favicon is the Baseplate logo');
    const icon = await t.req('GET', `/docs/${favicon[1]!.replace(/^\.\//, '')}`);
    assert.equal(icon.status, 200);
    assert.match(String(icon.body), /<svg[^]*Baseplate<\/text>/);
    const init = String((await t.req('GET', '/docs/static/swagger-initializer.js')).body);
    const logo = /data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(init);
    assert.ok(logo, 'the top bar logo is replaced');
    assert.match(Buffer.from(logo[1]!, 'base64').toString('utf8'), /Baseplate<\/text>/);
    assert.doesNotMatch(Buffer.from(logo[1]!, 'base64').toString('utf8'), /fastify/i);
    const doc = (await t.req('GET', '/openapi.json')).body;
    assert.equal(doc.info.title, 'Baseplate API');
  });

  test('every response carries its own X-Request-Id: success, 4xx, 404 route, body errors', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const project = await createProject(t, token);
    const cases: [string, () => Promise<Reply>, number][] = [
      ['health', () => t.req('GET', '/health'), 200],
      ['health again', () => t.req('GET', '/health'), 200],
      ['openapi', () => t.req('GET', '/openapi.json'), 200],
      ['docs', () => t.req('GET', '/docs/'), 200],
      ['list projects', () => t.req('GET', '/projects', { token }), 200],
      ['create project', () => t.req('POST', '/projects', { token, body: { name: 'x' } }), 201],
      ['delete table 404', () => t.req('DELETE', `/projects/${project.id}/tables/aaaaaaaaaaaaaaaa`, { token }), 404],
      ['401', () => t.req('GET', '/projects'), 401],
      ['422', () => t.req('POST', '/projects', { token, body: { name: '' } }), 422],
      ['404 route', () => t.req('GET', '/no/such/route'), 404],
      ['404 method', () => t.req('PUT', '/projects', { token, body: { name: 'x' } }), 404],
      ['400 json', () => t.req('POST', '/projects', { token, rawBody: '{' }), 400],
      ['415', () => t.req('POST', '/projects', { token, rawBody: 'name=x', headers: { 'content-type': 'text/plain' } }), 415],
      ['413', () => t.req('POST', '/projects', { token, body: { name: 'x'.repeat(MiB + 1) } }), 413],
    ];
    const ids = new Set<string>();
    for (const [what, send, status] of cases) {
      const res = await send();
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body).slice(0, 200)}`);
      if (status >= 400) withContext(what, () => expectError(res, status));
      const id = requestId(res, what);
      assert.ok(!ids.has(id), `${what}: X-Request-Id ${id} is fresh`);
      ids.add(id);
    }
  });

  test('a 500 carries the request id in the header and body, never a stack or SQL', async () => {
    // No route fails on purpose; this checks the contract on whatever the error handler emits for
    // an unexpected error by asking for a project store that is missing underneath the platform row.
    const t = ctx();
    const { token } = await registerAccount(t);
    const project = await createProject(t, token);
    await t.engine.dropProjectStore(project.id);
    const res = await t.req('GET', `/projects/${project.id}/tables`, { token });
    if (res.status === 500) {
      const err = expectError(res, 500, 'internal_error');
      const id = requestId(res, '500');
      assert.ok(err.message.includes(id) || JSON.stringify(err.details).includes(id), 'the body names the request id');
      assert.doesNotMatch(JSON.stringify(err), /SELECT|_bp_tables|\.ts:\d+|at [A-Za-z]+ \(|schema|SQLITE|relation/i);
    } else {
      withContext('missing store', () => expectError(res, res.status));
    }
  });

  test('unknown routes and methods are 404 not_found in the flat error shape', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const cases: [string, string][] = [
      ['GET', '/nope'],
      ['GET', '/projects/aaaaaaaaaaaaaaaa/nothing'],
      ['POST', '/health'],
      ['DELETE', '/projects'],
      ['PUT', '/projects/aaaaaaaaaaaaaaaa'],
      ['GET', '/auth'],
      ['GET', '/%27%3B%20drop%20table%20accounts%3B%20--'],
    ];
    for (const [method, url] of cases) {
      const res = await t.req(method, url, { token });
      withContext(`${method} ${url}`, () => expectError(res, 404, 'not_found'));
      requestId(res, url);
    }
    // a route behind auth answers 404 for an unknown sub-path even without a token
    expectError(await t.req('GET', '/projects/aaaaaaaaaaaaaaaa/nothing'), 404, 'not_found');
  });

  test('malformed percent-encoding and over-long path parameters answer in the flat error shape with X-Request-Id', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    for (const url of ['/projects/%E0%A4%A', '/projects/%', `/projects/${'a'.repeat(500)}`, `/projects/aaaaaaaaaaaaaaaa/tables/${'b'.repeat(500)}`]) {
      const res = await t.req('GET', url, { token });
      withContext(`GET ${url.slice(0, 40)}`, () => {
        assert.ok(res.status >= 400 && res.status < 500, `4xx, got ${res.status}`);
        expectError(res, res.status);
        requestId(res, url);
      });
    }
  });

  test('a body on a GET is ignored or rejected cleanly, never a 500', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const project = await createProject(t, token);
    const bodies: [string, { body?: unknown; rawBody?: string; headers?: Record<string, string> }][] = [
      ['JSON object', { body: { name: 'ignored' } }],
      ['malformed JSON', { rawBody: '{"name":' }],
      ['text/plain', { rawBody: 'hello', headers: { 'content-type': 'text/plain' } }],
      ['oversized', { body: { blob: 'x'.repeat(MiB + 10) } }],
    ];
    for (const [what, opts] of bodies) {
      for (const url of ['/health', '/projects', `/projects/${project.id}`]) {
        const res = await t.req('GET', url, { token, ...opts });
        withContext(`${what} on GET ${url}`, () => {
          assert.ok(res.status < 500, `status ${res.status}`);
          if (res.status >= 400) expectError(res, res.status);
        });
        requestId(res, url);
      }
    }
    const list = await t.req('GET', '/projects', { token, body: { name: 'ignored' } });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((p: { id: string }) => p.id), [project.id], 'nothing created by a GET with a body');
  });

  test('a body of another media type is 415 unsupported_media_type; application/json with parameters is fine', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const before = await counts(t);
    for (const ct of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'text/json', 'application/jsonx']) {
      const register = await t.req('POST', '/auth/register', { rawBody: JSON.stringify({ name: 'a', email: 'ct@example.com', password: 'password1' }), headers: { 'content-type': ct } });
      withContext(`register ${ct}`, () => expectError(register, 415, 'unsupported_media_type'));
      const project = await t.req('POST', '/projects', { token, rawBody: '{"name":"p"}', headers: { 'content-type': ct } });
      withContext(`project ${ct}`, () => expectError(project, 415, 'unsupported_media_type'));
    }
    assert.deepEqual(await counts(t), before, 'nothing created');
    for (const ct of ['application/json; charset=utf-8', 'Application/JSON']) {
      const res = await t.req('POST', '/projects', { token, rawBody: '{"name":"p"}', headers: { 'content-type': ct } });
      assert.equal(res.status, 201, `${ct}: ${JSON.stringify(res.body)}`);
    }
  });

  test('a body over 1 MiB is 413 payload_too_large and nothing is created; just under the limit is validated normally', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const before = await counts(t);
    expectError(await t.req('POST', '/projects', { token, body: { name: 'x'.repeat(MiB) } }), 413, 'payload_too_large');
    expectError(await t.req('POST', '/auth/register', { body: { name: 'a', email: 'big@example.com', password: 'p'.repeat(2 * MiB) } }), 413, 'payload_too_large');
    expectError(await t.req('POST', '/projects', { token, rawBody: `{"name":"p"}${' '.repeat(MiB)}` }), 413, 'payload_too_large');
    assert.deepEqual(await counts(t), before);
    const under = `{"name":"${'x'.repeat(MiB - 100)}"}`;
    assert.ok(Buffer.byteLength(under) < MiB);
    expectError(await t.req('POST', '/projects', { token, rawBody: under }), 422, 'validation_failed');
  });

  test('malformed JSON is 400 invalid_json on every endpoint that takes a body, and changes nothing', async () => {
    const t = ctx();
    const { token, account } = await registerAccount(t);
    const project = await createProject(t, token);
    const before = await counts(t);
    const targets: [string, string][] = [
      ['POST', '/auth/register'],
      ['POST', '/auth/login'],
      ['PATCH', '/auth/me'],
      ['POST', '/projects'],
      ['PATCH', `/projects/${project.id}`],
      ['POST', `/projects/${project.id}/tables`],
    ];
    for (const raw of ['{', '{"name": "a",}', "{'name':'a'}", '[1,2', 'nul', '{"a":1}}', '\u0000']) {
      for (const [method, url] of targets) {
        const res = await t.req(method, url, { token, rawBody: raw });
        withContext(`${method} ${url} ${JSON.stringify(raw)}`, () => expectError(res, 400, 'invalid_json'));
      }
    }
    assert.deepEqual(await counts(t), before);
    const me = await t.req('GET', '/auth/me', { token });
    assert.deepEqual(me.body, account);
    assert.deepEqual((await t.req('GET', `/projects/${project.id}/tables`, { token })).body, []);
  });

  test('an error response never contains the token or key that was sent', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const project = await createProject(t, token);
    const random = 'ab'.repeat(32);
    const userToken = 'cd'.repeat(32);
    const probes: [string, string, { body?: unknown; rawBody?: string; headers?: Record<string, string> }][] = [
      ['GET', '/no/such/route', {}],
      ['GET', `/projects/aaaaaaaaaaaaaaaa`, {}],
      ['GET', `/projects/${project.id}/tables/aaaaaaaaaaaaaaaa`, {}],
      ['POST', '/projects', { rawBody: '{"name":' }],
      ['POST', '/projects', { body: { name: '' } }],
      ['POST', '/projects', { body: { name: 'x', extra: 1 } }],
      ['POST', '/projects', { rawBody: 'x', headers: { 'content-type': 'text/plain' } }],
      ['POST', '/projects', { body: { name: 'x'.repeat(MiB) } }],
      ['POST', `/projects/${project.id}/tables`, { body: { name: 'Bad', columns: [] } }],
      ['POST', '/auth/login', { body: { email: 'nobody@example.com', password: 'wrong password' } }],
    ];
    for (const sent of [token, random]) {
      for (const [method, url, opts] of probes) {
        for (const where of ['header', 'query'] as const) {
          const target = where === 'query' ? `${url}?access_token=${sent}&apikey=${sent}` : url;
          const res = await t.req(method, target, {
            ...opts,
            headers: { ...(opts.headers ?? {}), authorization: `Bearer ${sent}`, 'x-user-token': userToken, apikey: sent },
          });
          assert.ok(res.status >= 400, `${method} ${url} is an error (${res.status})`);
          const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
          const headers = JSON.stringify(res.headers);
          for (const secret of [sent, userToken]) {
            assert.ok(!text.includes(secret), `${method} ${target.slice(0, 50)} body echoes a credential: ${text.slice(0, 200)}`);
            assert.ok(!headers.includes(secret), `${method} ${target.slice(0, 50)} headers echo a credential`);
          }
        }
      }
    }
  });
});
