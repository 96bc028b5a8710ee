// The REST passthrough's writes and per-row routes (CONTRACT §5) on every engine, with the
// permission gate and bad input that must change nothing.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';
import type { RestRequest } from '../../src/services/rows/rows.ts';

await describeEngines('rest passthrough writes', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  const snapshot = async (table = 'notes') => (await d.rest('GET', `${table}?order=id`)).body;

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    await d.createTable('notes', [
      { name: 'body', type: 'text' },
      { name: 'n', type: 'integer', nullable: false, default: 0 },
      { name: 'slug', type: 'text', unique: true },
      { name: 'flag', type: 'boolean' },
    ]);
  });

  test('PATCH and DELETE on the collection without a filter are refused', async () => {
    await d.rest('POST', 'notes', { body: [{ body: 'a', slug: 'a' }, { body: 'b', slug: 'b' }] });
    const before = await snapshot();
    expectError(await d.rest('PATCH', 'notes', { body: { body: 'all' } }), 400, 'filter_required');
    expectError(await d.rest('DELETE', 'notes'), 400, 'filter_required');
    expectError(await d.rest('PATCH', 'notes?limit=1', { body: { body: 'all' } }), 400, 'filter_required');
    assert.deepEqual(await snapshot(), before);
  });

  test('PATCH with a filter updates and returns the rows; return=minimal gives 204', async () => {
    const res = await d.rest('PATCH', 'notes?slug=eq.a', { body: { body: 'A!', n: 5 } });
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 1);
    assert.equal(res.body[0].body, 'A!');
    assert.equal(res.body[0].n, 5);
    const minimal = await d.rest('PATCH', 'notes?slug=eq.b', { body: { flag: true }, headers: { prefer: 'return=minimal, count=exact' } });
    assert.equal(minimal.status, 204);
    assert.equal(minimal.headers['content-range'], '0-0/1');
    const none = await d.rest('PATCH', 'notes?slug=eq.zzz', { body: { flag: true } });
    assert.deepEqual(none.body, []);
  });

  test('DELETE with a filter: 204 by default, the rows with return=representation', async () => {
    await d.rest('POST', 'notes', { body: [{ slug: 'd1' }, { slug: 'd2' }, { slug: 'd3' }] });
    const plain = await d.rest('DELETE', 'notes?slug=eq.d1');
    assert.equal(plain.status, 204);
    const rep = await d.rest('DELETE', 'notes?slug=in.(d2,d3)', { headers: { prefer: 'return=representation' } });
    assert.equal(rep.status, 200);
    assert.deepEqual(rep.body.map((r: { slug: string }) => r.slug), ['d2', 'd3']);
    assert.equal((await d.rest('GET', 'notes?slug=like.d*')).body.length, 0);
  });

  test('limit, offset and order bound a PATCH or DELETE to the first rows in that order (PostgREST limited writes), never more', async () => {
    const rows = (await d.rest('POST', 'notes', { body: [5, 3, 9, 1, 7].map((n, i) => ({ slug: `lim${i}`, n, body: 'lim' })) })).body as { id: number; n: number }[];
    const bodies = async () => Object.fromEntries(((await d.rest('GET', 'notes?body=like.lim*&select=n,body')).body as { n: number; body: string }[]).map((r) => [r.n, r.body]));
    const patched = await d.rest('PATCH', 'notes?body=eq.lim&order=n.desc&limit=2', { body: { body: 'lim top' } });
    assert.deepEqual(patched.body.map((r: { n: number }) => r.n).sort(), [7, 9]);
    assert.deepEqual(await bodies(), { 1: 'lim', 3: 'lim', 5: 'lim', 7: 'lim top', 9: 'lim top' });
    const offset = await d.rest('PATCH', 'notes?body=eq.lim&order=n&limit=1&offset=1', { body: { body: 'lim second' }, headers: { prefer: 'count=exact' } });
    assert.equal(offset.headers['content-range'], '0-0/1');
    assert.deepEqual(offset.body.map((r: { n: number }) => r.n), [3]);
    // without an order, ids in order: the first two rows created
    const byId = await d.rest('DELETE', 'notes?body=like.lim*&limit=2', { headers: { prefer: 'return=representation' } });
    assert.deepEqual(byId.body.map((r: { id: number }) => r.id), [rows[0]!.id, rows[1]!.id]);
    assert.deepEqual(await bodies(), { 1: 'lim', 7: 'lim top', 9: 'lim top' }, 'n = 5 and n = 3 were the first two');
    assert.equal((await d.rest('DELETE', 'notes?body=like.lim*&limit=0', { headers: { prefer: 'count=exact' } })).headers['content-range'], '*/0');
    expectError(await d.rest('DELETE', 'notes?body=like.lim*&limit=-1'), 400);
    assert.equal((await d.rest('DELETE', 'notes?body=like.lim*&order=n.desc&limit=1&offset=5', { headers: { prefer: 'count=exact' } })).headers['content-range'], '*/0');
    assert.equal(Object.keys(await bodies()).length, 3);
    await d.rest('DELETE', 'notes?body=like.lim*');
  });

  test('a limited write counts only the rows its caller may see and write: the limit never reaches past the policies', async () => {
    const table = await d.createTable('limited', [
      { name: 'owner', type: 'integer', default: '$auth.id' },
      { name: 'n', type: 'integer' },
    ]);
    const alice = await d.endUser();
    const bob = await d.endUser();
    await d.rest('POST', 'limited', { user: bob.token, body: [{ n: 1 }, { n: 2 }] });
    await d.rest('POST', 'limited', { user: alice.token, body: [{ n: 3 }, { n: 4 }] });
    assert.equal((await d.policy(table.id, 'ALL', 'owner = $auth.id')).status, 201);
    const res = await d.rest('DELETE', 'limited?n=gt.0&order=n&limit=1', { user: alice.token, headers: { prefer: 'return=representation' } });
    assert.deepEqual(res.body.map((r: { n: number }) => r.n), [3]);
    assert.deepEqual((await d.rest('GET', 'limited?order=n&select=n', { user: bob.token })).body, [{ n: 1 }, { n: 2 }]);
  });

  test('Prefer: tx=rollback answers as the write would and writes nothing: POST (one row, many, upsert), PATCH, PUT, DELETE', async () => {
    await d.rest('POST', 'notes', { body: [{ slug: 'dry1', n: 1 }, { slug: 'dry2', n: 2 }] });
    const before = await snapshot();
    const dry = { prefer: 'return=representation, tx=rollback, count=exact' };
    const one = await d.rest('POST', 'notes', { body: { slug: 'dry3', n: 3 }, headers: dry });
    assert.equal(one.status, 201);
    assert.deepEqual(one.body.map((r: { slug: string }) => r.slug), ['dry3']);
    assert.equal(one.headers['preference-applied'], 'return=representation, count=exact, tx=rollback');
    assert.equal((await d.rest('POST', 'notes', { body: [{ slug: 'dry4' }, { slug: 'dry5' }], headers: dry })).body.length, 2);
    const upsert = await d.rest('POST', 'notes?on_conflict=slug', { body: { slug: 'dry1', n: 10 }, headers: { prefer: `${dry.prefer}, resolution=merge-duplicates` } });
    assert.equal(upsert.body[0].n, 10);
    const patched = await d.rest('PATCH', 'notes?slug=like.dry*', { body: { n: 99 }, headers: dry });
    assert.deepEqual([patched.status, patched.headers['content-range'], patched.body.map((r: { n: number }) => r.n)], [200, '0-1/2', [99, 99]]);
    const [id] = before.filter((r: { slug: string }) => r.slug === 'dry1').map((r: { id: number }) => r.id);
    assert.equal((await d.rest('PUT', `notes/${id}`, { body: { slug: 'dry1', n: 7 }, headers: dry })).body.n, 7);
    const deleted = await d.rest('DELETE', 'notes?slug=like.dry*', { headers: dry });
    assert.equal(deleted.body.length, 2);
    // a dry run that fails fails as the write would
    expectError(await d.rest('POST', 'notes', { body: { slug: 'dry2' }, headers: dry }), 409, 'unique_violation');
    assert.deepEqual(await snapshot(), before, 'nothing written');
    const committed = await d.rest('POST', 'notes', { body: { slug: 'dry6' }, headers: { prefer: 'return=minimal, tx=commit' } });
    assert.deepEqual([committed.status, committed.headers['preference-applied']], [201, 'return=minimal, tx=commit']);
    await d.rest('DELETE', 'notes?slug=like.dry*');
  });

  test('Prefer: handling=strict refuses what it cannot honour, and max-affected bounds a PATCH or DELETE (PostgREST 13, supabase-js maxAffected())', async () => {
    await d.rest('POST', 'notes', { body: [{ slug: 'max1', n: 1 }, { slug: 'max2', n: 1 }, { slug: 'max3', n: 2 }] });
    const before = await snapshot();
    for (const prefer of ['handling=strict, timezone=UTC', 'handling=strict, count=bogus', 'bogus, handling=strict', 'handling=strict, return=minimal, return=representation']) {
      const err = expectError(await d.rest('PATCH', 'notes?slug=like.max*', { body: { n: 5 }, headers: { prefer } }), 400, 'invalid_preference');
      assert.equal(typeof err.details.preference, 'string', prefer);
      expectError(await d.rest('GET', 'notes', { headers: { prefer } }), 400, 'invalid_preference');
    }
    const over = await d.rest('PATCH', 'notes?n=eq.1', { body: { n: 5 }, headers: { prefer: 'handling=strict, max-affected=1' } });
    assert.deepEqual(expectError(over, 400, 'max_affected_exceeded').details, { max: 1, count: 2 });
    expectError(await d.rest('DELETE', 'notes?slug=like.max*', { headers: { prefer: 'handling=strict, max-affected=2' } }), 400, 'max_affected_exceeded');
    assert.deepEqual(await snapshot(), before, 'nothing written');
    // lenient (the default): unknown preferences and max-affected are ignored, as PostgREST ignores them
    assert.equal((await d.rest('GET', 'notes?slug=like.max*', { headers: { prefer: 'timezone=UTC, max-affected=0' } })).status, 200);
    const within = await d.rest('PATCH', 'notes?n=eq.2', { body: { n: 3 }, headers: { prefer: 'handling=strict, max-affected=1, return=minimal' } });
    assert.deepEqual([within.status, within.headers['preference-applied']], [204, 'return=minimal, max-affected=1']);
    assert.equal((await d.rest('DELETE', 'notes?slug=like.max*', { headers: { prefer: 'handling=strict, max-affected=3' } })).status, 204);
  });

  test('count=planned and count=estimated are counted exactly, as count=exact', async () => {
    await d.rest('POST', 'notes', { body: [{ slug: 'cnt1' }, { slug: 'cnt2' }, { slug: 'cnt3' }] });
    for (const count of ['planned', 'estimated']) {
      const res = await d.rest('GET', 'notes?slug=like.cnt*&limit=1', { headers: { prefer: `count=${count}` } });
      assert.deepEqual([res.headers['content-range'], res.headers['preference-applied']], ['0-0/3', `count=${count}`]);
      const head = await d.rest('HEAD', 'notes?slug=like.cnt*', { headers: { prefer: `count=${count}` } });
      assert.equal(head.headers['content-range'], '0-2/3');
    }
    await d.rest('DELETE', 'notes?slug=like.cnt*');
  });

  test('per-row routes: GET, PATCH, PUT, DELETE by id', async () => {
    const created = (await d.rest('POST', 'notes', { body: { body: 'row', n: 3, slug: 'row', flag: true } })).body[0];
    const id = created.id;
    const got = await d.rest('GET', `notes/${id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, created, 'a bare object');
    const patched = await d.rest('PATCH', `notes/${id}`, { body: { body: 'patched' } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.body, 'patched');
    assert.equal(patched.body.n, 3, 'PATCH leaves other columns');
    const put = await d.rest('PUT', `notes/${id}`, { body: { body: 'replaced', slug: 'row' } });
    assert.equal(put.status, 200);
    assert.deepEqual({ ...put.body, id: 0 }, { id: 0, body: 'replaced', n: 0, slug: 'row', flag: null }, 'PUT: omitted columns take their default or NULL');
    const del = await d.rest('DELETE', `notes/${id}`);
    assert.equal(del.status, 204);
    for (const m of ['GET', 'PATCH', 'PUT', 'DELETE']) {
      expectError(await d.rest(m, `notes/${id}`, { body: m === 'GET' || m === 'DELETE' ? undefined : { body: 'x' } }), 404, 'not_found');
    }
    for (const bad of ['abc', '0', '-1', '1.5', '99999999999999999999', "1'%20OR%20'1'='1"]) {
      expectError(await d.rest('GET', `notes/${bad}`), 404, 'not_found');
    }
    const rep = (await d.rest('POST', 'notes', { body: { slug: 'rep' } })).body[0];
    const delRep = await d.rest('DELETE', `notes/${rep.id}`, { headers: { prefer: 'return=representation' } });
    assert.equal(delRep.status, 200);
    assert.equal(delRep.body.slug, 'rep');
    expectError(await d.rest('PUT', 'notes', { body: { body: 'x' } }), 405);
    expectError(await d.rest('POST', `notes/1`, { body: { body: 'x' } }), 405);
  });

  test('per-row routes AND their filters with the id: a row that does not match is 404 and unchanged', async () => {
    const row = (await d.rest('POST', 'notes', { body: { slug: 'occ', n: 1 } })).body[0];
    const unchanged = async () => assert.deepEqual((await d.rest('GET', `notes/${row.id}`)).body, row);
    expectError(await d.rest('GET', `notes/${row.id}?n=eq.2`), 404, 'not_found');
    assert.deepEqual((await d.rest('GET', `notes/${row.id}?or=(n.eq.2,slug.eq.occ)`)).body, row);
    for (const method of ['PATCH', 'PUT', 'DELETE']) {
      const body = method === 'DELETE' ? undefined : { body: 'lost update', slug: 'occ' };
      expectError(await d.rest(method, `notes/${row.id}?n=eq.2`, { body }), 404, 'not_found');
      await unchanged();
    }
    // optimistic concurrency: the write names the version it read
    const patched = await d.rest('PATCH', `notes/${row.id}?n=eq.1`, { body: { n: 2 } });
    assert.equal(patched.body.n, 2);
    expectError(await d.rest('PATCH', `notes/${row.id}?n=eq.1`, { body: { n: 3 } }), 404, 'not_found');
    assert.equal((await d.rest('DELETE', `notes/${row.id}?n=eq.2`)).status, 204);
    expectError(await d.rest('GET', `notes/${row.id}`), 404, 'not_found');
  });

  test('Preference-Applied names only the preferences the answer honours', async () => {
    await d.rest('POST', 'notes', { body: { slug: 'pref' } });
    const all = 'resolution=merge-duplicates, missing=default, count=exact';
    for (const method of ['PATCH', 'DELETE']) {
      const res = await d.rest(method, 'notes?slug=eq.zzz', { body: method === 'PATCH' ? { n: 1 } : undefined, headers: { prefer: all } });
      assert.equal(res.headers['preference-applied'], 'count=exact', method);
    }
    const inserted = await d.rest('POST', 'notes?on_conflict=slug', { body: { slug: 'pref' }, headers: { prefer: `return=minimal, ${all}` } });
    assert.equal(inserted.headers['preference-applied'], 'return=minimal, count=exact, resolution=merge-duplicates, missing=default');
    const blind = { prefer: 'return=representation, count=exact' };
    assert.equal((await d.rest('PATCH', 'notes?slug=eq.pref', { key: d.keys.update, body: { n: 1 }, headers: blind })).headers['preference-applied'], undefined);
    assert.equal((await d.rest('POST', 'notes', { key: d.keys.insert, body: {}, headers: blind })).headers['preference-applied'], undefined);
    assert.equal((await d.rest('POST', 'notes', { key: d.keys.insert, body: {}, headers: { prefer: 'return=minimal' } })).headers['preference-applied'], 'return=minimal');
  });

  test('upsert: merge-duplicates and ignore-duplicates on a unique column and on id', async () => {
    await d.rest('POST', 'notes', { body: { slug: 'up', body: 'v1', n: 1 } });
    const merged = await d.rest('POST', 'notes?on_conflict=slug', {
      body: [{ slug: 'up', body: 'v2' }, { slug: 'up-new', body: 'new' }],
      headers: { prefer: 'resolution=merge-duplicates' },
    });
    assert.equal(merged.status, 201, JSON.stringify(merged.body));
    assert.equal(merged.headers['preference-applied'], 'resolution=merge-duplicates');
    const rows = (await d.rest('GET', 'notes?slug=like.up*&order=slug')).body;
    assert.deepEqual(rows.map((r: { slug: string; body: string; n: number }) => [r.slug, r.body, r.n]), [
      ['up', 'v2', 1],
      ['up-new', 'new', 0],
    ]);
    const ignored = await d.rest('POST', 'notes?on_conflict=slug', {
      body: [{ slug: 'up', body: 'v3' }],
      headers: { prefer: 'resolution=ignore-duplicates' },
    });
    assert.equal(ignored.status, 201);
    assert.deepEqual(ignored.body, []);
    assert.equal((await d.rest('GET', 'notes?slug=eq.up')).body[0].body, 'v2');
    const byId = await d.rest('POST', 'notes', { body: { id: rows[0].id, slug: 'up', body: 'by id' }, headers: { prefer: 'resolution=merge-duplicates' } });
    assert.equal(byId.body[0].body, 'by id');
    // explicit new ids keep the id generator ahead on both engines
    const explicit = await d.rest('POST', 'notes', { body: { id: 1000, slug: 'explicit' } });
    assert.equal(explicit.body[0].id, 1000);
    const next = await d.rest('POST', 'notes', { body: { slug: 'after-explicit' } });
    assert.equal(next.status, 201);
    assert.ok(next.body[0].id > 1000);
    expectError(await d.rest('POST', 'notes?on_conflict=body', { body: { slug: 'x' }, headers: { prefer: 'resolution=merge-duplicates' } }), 422, 'invalid_on_conflict');
    expectError(
      await d.rest('POST', 'notes?on_conflict=slug', { key: d.keys.insert, body: { slug: 'up' }, headers: { prefer: 'resolution=merge-duplicates' } }),
      403,
      'insufficient_permission',
    );
  });

  test('columns= limits the keys taken from the payload', async () => {
    const res = await d.rest('POST', 'notes?columns=slug,body', { body: { slug: 'cols', body: 'kept', n: 42 } });
    assert.equal(res.status, 201);
    assert.equal(res.body[0].n, 0, 'n ignored, default applies');
  });

  const perms: [string, string, keyof DataPlane['keys'], number][] = [
    ['GET', 'notes', 'insert', 403],
    ['GET', 'notes', 'update', 403],
    ['GET', 'notes', 'delete', 403],
    ['HEAD', 'notes', 'insert', 403],
    ['POST', 'notes', 'select', 403],
    ['POST', 'notes', 'update', 403],
    ['PATCH', 'notes?slug=eq.a', 'select', 403],
    ['PATCH', 'notes?slug=eq.a', 'insert', 403],
    ['DELETE', 'notes?slug=eq.a', 'select', 403],
    ['DELETE', 'notes?slug=eq.a', 'update', 403],
    ['GET', 'notes', 'select', 200],
    ['POST', 'notes', 'insert', 201],
    ['PATCH', 'notes?id=eq.999999', 'update', 200],
    ['DELETE', 'notes?id=eq.999999', 'delete', 204],
    ['GET', 'notes/1', 'insert', 403],
    ['GET', 'notes/1', 'update', 403],
    ['GET', 'notes/1', 'delete', 403],
    ['PATCH', 'notes/1', 'select', 403],
    ['PATCH', 'notes/1', 'delete', 403],
    ['PUT', 'notes/1', 'select', 403],
    ['PUT', 'notes/1', 'insert', 403],
    ['DELETE', 'notes/1', 'select', 403],
    ['DELETE', 'notes/1', 'insert', 403],
    ['GET', 'notes/1', 'select', 200],
    ['PATCH', 'notes/1', 'update', 204], // written, but without `select` the row is not returned
    ['DELETE', 'notes/999999', 'delete', 404],
  ];
  for (const [method, path, key, status] of perms) {
    test(`permission gate: ${method} ${path} with a '${key}' key -> ${status}`, async () => {
      const before = await snapshot();
      const body = method === 'POST' ? { slug: `perm-${key}-${Date.now()}` } : method === 'PATCH' || method === 'PUT' ? { body: 'perm' } : undefined;
      const res = await d.rest(method, path, { key: d.keys[key], body });
      assert.equal(res.status, status, JSON.stringify(res.body));
      if (status === 403) {
        if (method !== 'HEAD') assert.equal(res.body.code, 'insufficient_permission');
        assert.deepEqual(await snapshot(), before);
      }
    });
  }

  test('writes without the select permission succeed and return no rows', async () => {
    const res = await d.rest('POST', 'notes', { key: d.keys.insert, body: { slug: 'blind' } });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body, []);
    const id = (await d.rest('GET', 'notes?slug=eq.blind')).body[0].id;
    const upd = await d.rest('PATCH', `notes?id=eq.${id}`, { key: d.keys.update, body: { body: 'seen?' } });
    assert.equal(upd.status, 200);
    assert.deepEqual(upd.body, []);
    assert.equal((await d.rest('GET', 'notes?slug=eq.blind')).body[0].body, 'seen?');
  });

  test('credentials: missing, malformed, random, other project key -> 401; unknown table -> 404', async () => {
    for (const key of [null, 'nope', 'f'.repeat(64)]) {
      const res = await d.rest('GET', 'notes', { key });
      expectError(res, 401);
      assert.equal(res.headers['www-authenticate'], 'Bearer');
    }
    const other = await dataPlane(t);
    expectError(await d.rest('GET', 'notes', { key: other.keys.all }), 401, 'invalid_api_key');
    expectError(await d.rest('GET', 'missing_table'), 404, 'not_found');
    expectError(await d.rest('GET', 'x;drop'), 404, 'not_found');
    expectError(await d.rest('GET', '_bp_keys'), 404, 'not_found');
    expectError(await d.rest('GET', '_bp_users?select=password_hash'), 404, 'not_found');
    const unknownProject = await t.req('GET', `/aaaaaaaaaaaaaaaa/rest/notes`, { headers: { authorization: `Bearer ${d.keys.all}` } });
    expectError(unknownProject, 401);
  });

  const badInput: [string, string, string, unknown, number, string][] = [
    ['malformed filter col=eq', 'GET', 'notes?slug=eq', undefined, 400, 'invalid_filter'],
    ['unbalanced or', 'GET', 'notes?or=(slug.eq.a', undefined, 400, 'invalid_filter'],
    ['unknown operator', 'GET', 'notes?slug=foo.a', undefined, 400, 'invalid_filter'],
    ['unknown column in filter', 'GET', 'notes?nope=eq.1', undefined, 400, 'unknown_column'],
    ['unknown column in select', 'GET', 'notes?select=nope', undefined, 400, 'unknown_column'],
    ['unknown column in order', 'GET', 'notes?order=nope', undefined, 400, 'unknown_column'],
    ['unknown column in or', 'GET', 'notes?or=(nope.eq.1,slug.eq.a)', undefined, 400, 'unknown_column'],
    ['injection in identifier', 'GET', 'notes?select=slug;drop%20table%20notes', undefined, 400, 'unknown_column'],
    ['quoted identifier', 'GET', 'notes?%22slug%22=eq.a', undefined, 400, 'unknown_column'],
    ['wrong-typed filter value', 'GET', 'notes?n=eq.abc', undefined, 422, 'invalid_value'],
    ['unknown column in columns=', 'POST', 'notes?columns=slug,nope', { slug: 'c' }, 400, 'unknown_column'],
    ['unknown column in on_conflict=', 'POST', 'notes?on_conflict=nope', { slug: 'c' }, 400, 'unknown_column'],
    ['unknown column in order of PATCH', 'PATCH', 'notes?slug=eq.a&order=nope', { body: 'x' }, 400, 'unknown_column'],
    ['unknown column in DELETE filter', 'DELETE', 'notes?nope=eq.1', undefined, 400, 'unknown_column'],
    ['unknown column in body', 'POST', 'notes', { slug: 'z', nope: 1 }, 400, 'unknown_column'],
    ['injection column in body', 'POST', 'notes', { 'slug"; DROP TABLE notes; --': 1 }, 400, 'unknown_column'],
    ['__proto__ in body', 'POST', 'notes', JSON.parse('{"__proto__": {"x": 1}, "slug": "p"}'), 400, 'unknown_column'],
    ['wrong type in body', 'POST', 'notes', { slug: 5 }, 422, 'invalid_value'],
    ['float for integer', 'POST', 'notes', { n: 1.5 }, 422, 'invalid_value'],
    ['unsafe integer', 'POST', 'notes', { n: 2 ** 53 }, 422, 'invalid_value'],
    ['string for boolean', 'POST', 'notes', { flag: 'true' }, 422, 'invalid_value'],
    ['null into NOT NULL', 'POST', 'notes', { n: null }, 422, 'invalid_value'],
    ['array of mixed keys with an unknown', 'POST', 'notes', [{ slug: 'm1' }, { slugg: 'm2' }], 400, 'unknown_column'],
    ['array with a non-object', 'POST', 'notes', [{ slug: 'm1' }, 5], 422, 'invalid_body'],
    ['scalar body', 'POST', 'notes', 'hello', 422, 'invalid_body'],
    ['missing body', 'POST', 'notes', undefined, 422, 'invalid_body'],
    ['PATCH with array', 'PATCH', 'notes?slug=eq.a', [{ body: 'x' }], 422, 'invalid_body'],
    ['PATCH of id', 'PATCH', 'notes?slug=eq.a', { id: 99 }, 422, 'read_only_column'],
    ['PATCH with empty object', 'PATCH', 'notes?slug=eq.a', {}, 422, 'empty_update'],
    ['PATCH unknown column', 'PATCH', 'notes?slug=eq.a', { nope: 1 }, 400, 'unknown_column'],
    ['PATCH wrong type', 'PATCH', 'notes?slug=eq.a', { n: 'x' }, 422, 'invalid_value'],
    ['negative id in body', 'POST', 'notes', { id: -5 }, 422, 'invalid_value'],
    // three rows are two statements (slices are powers of two): the first must not stay written
    ['a duplicate third row of a bulk insert', 'POST', 'notes', [{ slug: 'u1' }, { slug: 'u2' }, { slug: 'u1' }], 409, 'unique_violation'],
  ];
  for (const [name, method, path, body, status, code] of badInput) {
    test(`bad input: ${name} -> ${status} ${code}, nothing changed`, async () => {
      const before = await snapshot();
      expectError(await d.rest(method, path, { body }), status, code);
      assert.deepEqual(await snapshot(), before);
    });
  }

  test('malformed JSON body is 400 and an oversize body 413', async () => {
    expectError(await d.rest('POST', 'notes', { rawBody: '[{"slug": ' }), 400, 'invalid_json');
    expectError(await d.rest('POST', 'notes', { body: { body: 'x'.repeat(1024 * 1024 + 10) } }), 413, 'payload_too_large');
  });

  test('an unpaired surrogate escape in a body is 422 unpaired_surrogate and writes nothing; a pair is stored as sent', async () => {
    const before = await snapshot();
    const json = { 'content-type': 'application/json' };
    for (const raw of ['{"body": "a\\ud800b"}', '[{"body": "ok"}, {"body": "\\uDC00"}]', '{"body": "x\\ud83d"}', '{"body\\udfff": 1}'])
      expectError(await d.rest('POST', 'notes', { rawBody: raw, headers: json }), 422, 'unpaired_surrogate');
    expectError(await d.rest('PATCH', 'notes?n=eq.0', { rawBody: '{"body": "\\ud800"}', headers: json }), 422, 'unpaired_surrogate');
    assert.deepEqual(await snapshot(), before);
    const pair = await d.rest('POST', 'notes', { rawBody: '{"slug": "pair", "body": "a\\ud83d\\ude00b \\\\ud800"}', headers: json });
    assert.equal(pair.status, 201, JSON.stringify(pair.body));
    assert.equal((await d.rest('GET', 'notes?slug=eq.pair')).body[0].body, 'a\u{1F600}b \\ud800', 'a pair, and an escaped backslash before "ud800", are ordinary text');
    await d.rest('DELETE', 'notes?slug=eq.pair');
    const platform = await t.req('POST', '/projects', { token: d.owner, rawBody: '{"name": "a\\ud800b"}', headers: json });
    expectError(platform, 422, 'unpaired_surrogate');
  });

  test('injection in values is stored and matched literally', async () => {
    const evil = `'); DROP TABLE notes; -- "\\ %_*`;
    const res = await d.rest('POST', 'notes', { body: { slug: 'evil', body: evil } });
    assert.equal(res.status, 201);
    const back = await d.rest('GET', `notes?body=eq.${encodeURIComponent(evil)}`);
    assert.equal(back.body.length, 1);
    assert.equal(back.body[0].body, evil);
    assert.ok((await d.rest('GET', 'notes')).body.length > 1, 'table intact');
  });

  test('CORS on the data plane', async () => {
    const pre = await t.req('OPTIONS', `/${d.pid}/rest/notes`, { headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    assert.match(String(pre.headers['access-control-allow-headers']), /x-user-token/);
    const get = await d.rest('GET', 'notes', { headers: { origin: 'https://app.example' } });
    assert.match(String(get.headers['access-control-expose-headers']), /Content-Range/);
  });
});

await describeEngines('rest passthrough engine parity', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    await d.createTable('things', [
      { name: 'body', type: 'text' },
      { name: 'meta', type: 'json' },
      { name: 'u', type: 'text', unique: true },
    ]);
  });

  test('json: stored in jsonb key order, compared as jsonb, never ordered', async () => {
    const res = await d.rest('POST', 'things', { body: { meta: { yy: 2, x: 1, a: { c: 1, bb: 2 } } } });
    assert.deepEqual(Object.keys(res.body[0].meta), ['a', 'x', 'yy'], 'jsonb order: shorter keys first');
    assert.equal((await d.rest('GET', `things?meta=eq.${encodeURIComponent('{"x":1,"a":{"bb":2,"c":1},"yy":2}')}`)).body.length, 1);
    assert.equal((await d.rest('GET', `things?meta=eq.${encodeURIComponent('{"x":1,"yy":3,"a":{"bb":2,"c":1},"yy":2}')}`)).body.length, 1, 'last duplicate key wins');
    expectError(await d.rest('GET', 'things?order=meta'), 400, 'unsupported_order');
  });

  test('a json number past the double range is 422 number_out_of_range (not written as null); numbers whose text PostgreSQL prints past 4 MiB are 422 too_long', async () => {
    const json = { 'content-type': 'application/json' };
    const count = async () => (await d.rest('GET', 'things?select=id')).body.length;
    const before = await count();
    for (const raw of ['[1e400]', '{"a": {"b": [-1e309]}}', '1e400'])
      assert.deepEqual(expectError(await d.rest('POST', 'things', { rawBody: `{"meta": ${raw}}`, headers: json }), 422, 'invalid_value').details, { column: 'meta', reason: 'number_out_of_range' });
    // 5e-324 is 326 characters as PostgreSQL prints it: 20,000 of them are 6.5 MB there
    const tiny = `[${Array(20_000).fill('5e-324').join(',')}]`;
    assert.deepEqual(expectError(await d.rest('POST', 'things', { rawBody: `{"meta": ${tiny}}`, headers: json }), 422, 'invalid_value').details, { column: 'meta', reason: 'too_long' });
    assert.equal(await count(), before, 'nothing written');
    const fine = await d.rest('POST', 'things', { rawBody: '{"meta": [1.7976931348623157e308, 5e-324, null, 1e21]}', headers: json });
    assert.equal(fine.status, 201, JSON.stringify(fine.body));
    assert.deepEqual(fine.body[0].meta, [1.7976931348623157e308, 5e-324, null, 1e21]);
    // a filter value with a number PostgreSQL's numeric cannot read: 422 on both engines (500 there before)
    for (const v of ['[1e-16384]', '{"a": 1e131072}'])
      assert.deepEqual(expectError(await d.rest('GET', `things?meta=eq.${encodeURIComponent(v)}`), 422, 'invalid_value').details, { column: 'meta', reason: 'number_out_of_range' });
    assert.equal((await d.rest('GET', `things?meta=eq.${encodeURIComponent('[1.7976931348623157e308, 5e-324, null, 1e21]')}`)).body.length, 1);
  });

  test('a body nested deeper than 128 levels is 422 too_deep, not a crash', async () => {
    const deep = `{"meta": ${'['.repeat(100000)}1${']'.repeat(100000)}}`;
    expectError(await d.rest('POST', 'things', { rawBody: deep, headers: { 'content-type': 'application/json' } }), 422, 'too_deep');
    let ok: unknown = 1;
    for (let i = 0; i < 100; i++) ok = [ok];
    assert.equal((await d.rest('POST', 'things', { body: { meta: ok } })).status, 201);
  });

  test('a json filter value nested deeper than 128 levels is 422 too_deep, not a crash; so is a json value from a function', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    await d.rest('POST', 'things', { body: { body: 'deep', meta: [] } });
    for (const [method, op] of [['GET', 'eq'], ['PATCH', 'neq'], ['DELETE', 'eq']]) {
      const res = await d.rest(method!, `things?meta=${op}.${deep(4000)}`, { body: method === 'PATCH' ? { body: 'x' } : undefined });
      assert.deepEqual(expectError(res, 422, 'too_deep').details, { column: 'meta', limit: 128 });
    }
    expectError(await d.rest('GET', `things?or=(meta.eq.${deep(129)},body.eq.x)`), 422, 'too_deep');
    assert.equal((await d.rest('GET', `things?meta=eq.${deep(128)}`)).status, 200);
    assert.equal((await d.rest('GET', 'things?body=eq.deep')).body[0].meta.length, 0, 'unchanged');
    // context.db hands a function's values to the passthrough without the HTTP body's depth check
    let value: unknown = 1;
    for (let i = 0; i < 10_000; i++) value = [value];
    const request: RestRequest = {
      projectId: d.pid,
      table: 'things',
      rowId: null,
      method: 'POST',
      query: new URLSearchParams(),
      prefer: undefined,
      accept: undefined,
      range: undefined,
      body: { meta: value },
      key: { keyId: 'k', permissions: new Set(['select', 'insert'] as const) },
      auth: null,
    };
    await assert.rejects(t.services.rows.handle(request), { status: 422, code: 'invalid_value', details: { column: 'meta', reason: 'too_deep' } });
  });

  test('a 256-character pattern ending in a lone backslash matches it literally on both engines', async () => {
    const value = `${'a'.repeat(255)}\\`;
    await d.rest('POST', 'things', { body: [{ body: value }, { body: 'other' }] });
    for (const op of ['like', 'ilike']) {
      const res = await d.rest('GET', `things?select=body&body=${op}.${encodeURIComponent(value)}`);
      assert.deepEqual(res.body, [{ body: value }], op);
      const not = await d.rest('GET', `things?select=body&body=not.${op}.${encodeURIComponent(value)}`);
      assert.ok(!not.body.some((r: { body: string }) => r.body === value), `not.${op}`);
    }
  });

  test('ilike folds Unicode case the same way on both engines; a trailing backslash is literal', async () => {
    await d.rest('POST', 'things', { body: [{ body: 'ÉCOLE' }, { body: 'école' }, { body: 'Straße' }, { body: 'back\\' }] });
    const e = await d.rest('GET', `things?select=body&body=ilike.${encodeURIComponent('é*')}&order=body`);
    assert.deepEqual(e.body.map((r: { body: string }) => r.body), ['ÉCOLE', 'école']);
    const like = await d.rest('GET', `things?select=body&body=like.${encodeURIComponent('é*')}`);
    assert.deepEqual(like.body.map((r: { body: string }) => r.body), ['école']);
    for (const op of ['like', 'ilike']) {
      const b = await d.rest('GET', `things?select=body&body=${op}.${encodeURIComponent('back\\')}`);
      assert.equal(b.status, 200);
      assert.deepEqual(b.body.map((r: { body: string }) => r.body), ['back\\']);
    }
  });

  test('concurrent upserts of one key all succeed (the insert yields to a concurrent one)', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, k) =>
        d.rest('POST', 'things?on_conflict=u', { body: { u: 'same', body: `v${k}` }, headers: { prefer: 'resolution=merge-duplicates, return=minimal' } }),
      ),
    );
    assert.deepEqual(results.map((r) => r.status), results.map(() => 201));
    assert.equal((await d.rest('GET', 'things?u=eq.same')).body.length, 1);
  });

  test('explicit ids never make the id generator go backwards or collide', async () => {
    await d.createTable('seq', [{ name: 'n', type: 'integer' }]);
    const ten = await d.rest('POST', 'seq', { body: Array.from({ length: 10 }, (_, n) => ({ n })) });
    assert.equal(ten.body[9].id, 10);
    await d.rest('DELETE', 'seq?id=gte.2');
    assert.equal((await d.rest('POST', 'seq', { body: { id: 2, n: 0 } })).status, 201);
    const next = await d.rest('POST', 'seq', { body: { n: 0 } });
    assert.ok(next.body[0].id > 10, `deleted ids are not reused (got ${next.body[0].id})`);
    const mixed = await d.rest('POST', 'seq', { body: [{ id: 500, n: 1 }, { n: 2 }, { n: 3 }] });
    assert.equal(mixed.status, 201, JSON.stringify(mixed.body));
    assert.ok(mixed.body[1].id > 500 && mixed.body[2].id > 500);
  });
});
