// Owner row access (CONTRACT §10): /projects/{id}/tables/{table_id}/rows under the platform token,
// as the owner (every row, no policy) or as an anonymous or end-user caller of the passthrough. Read
// and write scenarios run on the owner's route and on the passthrough side by side (a twin table
// with the same rows, policies and ids) and must answer alike; then the owner's own mode, the `as`
// parameter, bad input and another owner's reach. On every engine.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, registerAccount, createProject, type Reply, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';

type Caller = 'anonymous' | 'alice' | 'bob';
const HEADERS = ['content-range', 'preference-applied'] as const;
const COLUMNS = [
  { name: 'title', type: 'text' },
  { name: 'n', type: 'integer' },
  { name: 'created_by', type: 'integer', default: '$auth.id' },
  { name: 'public', type: 'boolean', default: false },
];
const POLICIES: [string, string][] = [
  ['SELECT', 'created_by = $auth.id OR public'],
  ['INSERT', 'created_by = $auth.id'],
  ['UPDATE', 'created_by = $auth.id'],
  ['DELETE', "created_by = $auth.id OR $auth.role = 'admin'"],
];

/** The parts of a reply both routes must agree on. */
const shape = (r: Reply) => ({ status: r.status, body: r.body, ...Object.fromEntries(HEADERS.map((h) => [h, r.headers[h]])) });

await describeEngines('owner row access', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  let docs: { id: string };
  let twin: { id: string };
  let alice: EndUserFixture;
  let bob: EndUserFixture;
  const asOf = (c: Caller) => (c === 'anonymous' ? 'anonymous' : `end_user:${(c === 'alice' ? alice : bob).id}`);
  const tokenOf = (c: Caller) => (c === 'anonymous' ? undefined : (c === 'alice' ? alice : bob).token);
  /** `path` is '' or '/{id}', `query` without its '?' */
  const owned = (method: string, tableId: string, path: string, query: string, opts: { body?: unknown; headers?: Record<string, string>; token?: string } = {}) =>
    t.req(method, `/projects/${d.pid}/tables/${tableId}/rows${path}${query ? `?${query}` : ''}`, { token: d.owner, ...opts });
  const asCaller = (c: Caller, query: string) => [`as=${asOf(c)}`, query].filter(Boolean).join('&');
  const all = async (tableId: string) => (await owned('GET', tableId, '', 'order=id')).body as Record<string, unknown>[];
  const idOf = async (title: string) => ((await all(docs.id)).find((r) => r.title === title) as { id: number }).id;

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    alice = await d.endUser();
    bob = await d.endUser();
    docs = await d.createTable('docs', COLUMNS);
    twin = await d.createTable('twin', COLUMNS);
    const seed = [
      { title: 'a1', n: 1, created_by: alice.id },
      { title: 'a2', n: 2, created_by: alice.id, public: true },
      { title: 'b1', n: 3, created_by: bob.id },
      { title: 'anon', n: null, created_by: null },
    ];
    for (const table of [docs, twin]) {
      const res = await owned('POST', table.id, '', '', { body: seed });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      for (const [op, expression] of POLICIES) assert.equal((await d.policy(table.id, op, expression)).status, 201);
    }
  });

  test('reads as anonymous or an end user answer exactly as the passthrough does with an all-permission key', async () => {
    const a1 = await idOf('a1');
    const reads: [string, string, Record<string, string>][] = [
      ['', '', {}],
      ['', 'select=title,n&order=n.desc.nullslast', {}],
      ['', 'or=(public.is.true,n.gt.2)&order=title', {}],
      ['', 'limit=2&offset=1', { prefer: 'count=exact' }],
      ['', '', { range: '0-0', prefer: 'count=exact' }],
      ['', 'title=like.a*&not.and=(n.gte.2,n.lte.2)', {}],
      ['', 'title=eq.a1', { accept: 'application/vnd.pgrst.object+json' }],
      ['', 'nope=eq.1', {}],
      ['', 'n=eq.abc', {}],
      ['', 'order=title.sideways', {}],
      [`/${a1}`, 'select=title', {}],
      ['/999', '', {}],
    ];
    for (const caller of ['anonymous', 'alice', 'bob'] as Caller[]) {
      for (const [path, query, headers] of reads) {
        for (const method of ['GET', 'HEAD']) {
          const mine = await owned(method, docs.id, path, asCaller(caller, query), { headers });
          const theirs = await d.rest(method, `twin${path}${query ? `?${query}` : ''}`, { user: tokenOf(caller), headers });
          assert.deepEqual(shape(mine), shape(theirs), `${method} ${path}?${query} ${JSON.stringify(headers)} as ${caller}`);
        }
      }
    }
  });

  test('writes as anonymous or an end user answer and change exactly what the passthrough does', async () => {
    const [a1, b1] = [await idOf('a1'), await idOf('b1')];
    const objectMedia = { accept: 'application/vnd.pgrst.object+json' };
    const writes: [Caller, string, string, string, unknown, Record<string, string>][] = [
      ['alice', 'POST', '', '', { title: 'w1', n: 5 }, {}],
      ['alice', 'POST', '', '', { title: 'forged', created_by: 999 }, {}],
      ['anonymous', 'POST', '', '', { title: 'anon2' }, {}],
      ['bob', 'POST', '', 'columns=title,n', [{ title: 'b2', n: 7, extra: 1 }, { title: 'b3' }], { prefer: 'return=minimal, count=exact' }],
      ['alice', 'PATCH', '', 'title=eq.b1', { title: 'hijacked' }, {}],
      ['bob', 'PATCH', `/${b1}`, '', { title: 'b1!' }, {}],
      ['bob', 'PATCH', `/${b1}`, '', { created_by: alice.id }, {}],
      ['alice', 'PUT', `/${a1}`, '', { title: 'a1 replaced' }, {}],
      ['alice', 'PATCH', '', 'n=gte.0', { n: 9 }, { prefer: 'count=exact' }],
      ['alice', 'PATCH', '', 'n=gte.0', { n: 10 }, objectMedia],
      ['alice', 'DELETE', `/${b1}`, '', undefined, {}],
      ['bob', 'DELETE', '', 'title=eq.b3', undefined, { prefer: 'return=representation' }],
      ['bob', 'POST', '', 'on_conflict=id', { id: b1, title: 'upserted', created_by: bob.id }, { prefer: 'resolution=merge-duplicates' }],
      ['alice', 'POST', '', '', { title: 'x', nope: 1 }, {}],
      ['alice', 'POST', '', '', { title: 5 }, {}],
      ['alice', 'POST', '', '', { id: 2 ** 52 + 1, title: 'big' }, {}],
      ['alice', 'PATCH', '', '', { title: 'everything' }, {}],
      ['alice', 'PUT', '', 'title=eq.w1', { title: 'put on the collection' }, {}],
      ['alice', 'POST', `/${a1}`, '', { title: 'post on a row' }, {}],
      ['anonymous', 'DELETE', '', 'n=gt.0', undefined, { prefer: 'count=exact' }],
    ];
    for (const [caller, method, path, query, body, headers] of writes) {
      const mine = await owned(method, docs.id, path, asCaller(caller, query), { body, headers });
      const theirs = await d.rest(method, `twin${path}${query ? `?${query}` : ''}`, { user: tokenOf(caller), body, headers });
      assert.deepEqual(shape(mine), shape(theirs), `${method} ${path}?${query} as ${caller}`);
      assert.deepEqual(await all(docs.id), await all(twin.id), `the tables after ${method} ${path}?${query} as ${caller}`);
    }
  });

  test('as the owner (the default): every row, no policy, every operation', async () => {
    const anyone = { title: 'owned', created_by: 424242 };
    const inserted = await owned('POST', docs.id, '', '', { body: anyone });
    assert.equal(inserted.status, 201, JSON.stringify(inserted.body));
    assert.equal(inserted.body[0].created_by, 424242, 'no INSERT policy checks the owner');
    const id = inserted.body[0].id;
    const count = await owned('GET', docs.id, '', 'as=owner&select=id', { headers: { prefer: 'count=exact' } });
    const total = Number(String(count.headers['content-range']).split('/')[1]);
    assert.equal(count.body.length, total);
    assert.ok(total > (await d.rest('GET', 'docs', { user: alice.token })).body.length, 'the owner sees rows no caller sees');
    assert.equal((await owned('PATCH', docs.id, `/${id}`, '', { body: { n: 1 } })).body.n, 1);
    const byDefault = await owned('POST', docs.id, '', '', { body: { title: 'defaults' } });
    assert.equal(byDefault.body[0].created_by, null, "$auth.id defaults are NULL for the owner: it is no end user");
    assert.equal((await owned('DELETE', docs.id, `/${id}`, '')).status, 204);
    expectError(await owned('GET', docs.id, `/${id}`, ''), 404, 'not_found');
  });

  test("the owner's writes keep the passthrough's guarantees: whitelist, types, ids, one transaction", async () => {
    const tags = await d.createTable('tags', [{ name: 'slug', type: 'text', unique: true }, { name: 'weight', type: 'number' }]);
    assert.equal((await owned('POST', tags.id, '', '', { body: [{ slug: 'a' }, { slug: 'b' }] })).status, 201);
    const before = await all(tags.id);
    expectError(await owned('POST', tags.id, '', '', { body: [{ slug: 'c' }, { slug: 'a' }] }), 409, 'unique_violation');
    expectError(await owned('POST', tags.id, '', '', { body: { slug: 'd', colour: 'red' } }), 400, 'unknown_column');
    expectError(await owned('POST', tags.id, '', '', { body: { slug: 'd', weight: 'heavy' } }), 422, 'invalid_value');
    expectError(await owned('POST', tags.id, '', '', { body: { id: 2 ** 53, slug: 'd' } }), 422, 'invalid_value');
    expectError(await owned('PATCH', tags.id, '', '', { body: { weight: 1 } }), 400, 'filter_required');
    expectError(await owned('DELETE', tags.id, '', ''), 400, 'filter_required');
    expectError(await owned('PATCH', tags.id, '', 'slug=eq.a', { body: { id: 7 } }), 422, 'read_only_column');
    expectError(await owned('GET', tags.id, '', 'select=slug;drop'), 400);
    assert.deepEqual(await all(tags.id), before, 'nothing changed');
  });

  test('`as` is reserved on this route: a column named as is filtered with and=(…)', async () => {
    const aliases = await d.createTable('aliases', [{ name: 'as', type: 'text' }]);
    assert.equal((await owned('POST', aliases.id, '', '', { body: [{ as: 'x' }, { as: 'y' }] })).status, 201);
    const refused = expectError(await owned('GET', aliases.id, '', 'as=eq.x'), 422, 'validation_failed');
    assert.equal(refused.details.field, 'as');
    const filtered = await owned('GET', aliases.id, '', 'and=(as.eq.x)&select=as');
    assert.deepEqual(filtered.body, [{ as: 'x' }]);
    assert.deepEqual((await owned('GET', aliases.id, '', 'as=anonymous&select=as&order=as.desc')).body, [{ as: 'y' }, { as: 'x' }]);
    assert.deepEqual((await d.rest('GET', 'aliases?as=eq.x&select=as')).body, [{ as: 'x' }], 'on the passthrough it is a column filter');
  });

  test('a malformed `as` is 422 naming it, an unknown end user 404; nothing is written either way', async () => {
    const other = await dataPlane(t);
    for (let i = 0; i < 3; i++) await other.endUser();
    const theirs = (await other.endUser()).id;
    assert.ok(theirs > bob.id, 'the other project has user ids this one lacks');
    const before = await all(docs.id);
    const bad: [string, number][] = [
      ['as=admin', 422],
      ['as=Owner', 422],
      ['as=', 422],
      ['as=end_user:', 422],
      ['as=end_user:0', 422],
      ['as=end_user:-1', 422],
      ['as=end_user:1.5', 422],
      ['as=end_user:0x1', 422],
      ['as=end_user:99999999999999999', 422],
      ['as=end_user:%201', 422],
      ['as=owner&as=anonymous', 422],
      [`as=end_user:${theirs}`, 404],
      ['as=end_user:9007199254740991', 404],
    ];
    for (const [query, status] of bad) {
      for (const method of ['GET', 'POST']) {
        const res = await owned(method, docs.id, '', query, method === 'POST' ? { body: { title: 'never' } } : {});
        const body = expectError(res, status, status === 422 ? 'validation_failed' : 'not_found');
        if (status === 422) assert.equal(body.details.field, 'as', query);
      }
    }
    assert.deepEqual(await all(docs.id), before);
  });

  test("another owner's project or table, an unknown table and a missing token reach nothing", async () => {
    const stranger = await registerAccount(t);
    const strangers = await createProject(t, stranger.token, 'theirs');
    const before = await all(docs.id);
    const tries: [string, string, number][] = [
      [stranger.token, `/projects/${d.pid}/tables/${docs.id}/rows`, 404],
      [stranger.token, `/projects/${strangers.id}/tables/${docs.id}/rows`, 404],
      [d.owner, `/projects/${d.pid}/tables/nosuchtable00000/rows`, 404],
      [d.owner, `/projects/${d.pid}/tables/..%2F..%2Fx/rows`, 404],
      [d.owner, `/projects/${strangers.id}/tables/${docs.id}/rows`, 404],
    ];
    for (const [token, url, status] of tries) {
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        const res = await t.req(method, `${url}?title=eq.a1`, { token, body: method === 'GET' || method === 'DELETE' ? undefined : { title: 'x' } });
        expectError(res, status, 'not_found');
      }
    }
    expectError(await t.req('GET', `/projects/${d.pid}/tables/${docs.id}/rows`), 401, 'missing_token');
    expectError(await t.req('GET', `/projects/${d.pid}/tables/${docs.id}/rows`, { token: 'f'.repeat(64) }), 401);
    assert.deepEqual(await all(docs.id), before);
  });

  test('the routes and the as parameter are in the OpenAPI document', async () => {
    const doc = (await t.req('GET', '/openapi.json')).body;
    const rows = doc.paths['/projects/{id}/tables/{table_id}/rows'];
    for (const method of ['get', 'post', 'patch', 'delete']) {
      assert.deepEqual(rows[method].tags, ['owner rows']);
      assert.ok(rows[method].parameters.some((p: { name: string; in: string }) => p.name === 'as' && p.in === 'query'), method);
    }
    assert.ok(doc.paths['/projects/{id}/tables/{table_id}/rows/{row_id}'].put);
    const simulate = doc.paths['/projects/{id}/tables/{table_id}/simulate'].post;
    assert.ok(simulate.requestBody.content['application/json'].schema.properties.operation);
  });
});
