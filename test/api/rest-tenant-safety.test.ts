// Tenant safety of the passthrough (issue [D]) on every engine: writes see what SELECT sees, a key
// without `select` learns nothing from a write, ids stay exact integers and cannot be used up, bulk
// inserts are few statements, and `__proto__` is data, never a prototype.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';
import { countStatements } from './rest-statements.ts';

const MAX = Number.MAX_SAFE_INTEGER; // 2^53 - 1
const CAP = 2 ** 52; // the largest explicit id
const OBJECT = { accept: 'application/vnd.pgrst.object+json' };

await describeEngines('rest passthrough tenant safety', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  /** Rows as stored, policies and permissions aside. */
  const stored = async (table: string) => {
    const db = await t.engine.project(d.pid);
    return db.all<Record<string, unknown>>(`SELECT * FROM ${db.t(table)} ORDER BY "id"`);
  };
  const ids = (res: { body: { id: number }[] }) => res.body.map((r) => r.id);
  /** A row with `id` written behind the service's back, the id generator moved to it: a table as
   * one created before explicit ids were capped, or one that has generated ids for a long time. */
  const plantId = async (table: string, id: number) => {
    const db = await t.engine.project(d.pid);
    await db.run(`INSERT INTO ${db.t(table)} ("id") VALUES (?)`, [id]);
    if (t.kind === 'postgres') await db.get(`SELECT setval(pg_get_serial_sequence(?, 'id'), ?)`, [db.t(table), id]);
  };

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
  });

  test('a key without select learns nothing from a filtered write: a right and a wrong guess answer alike', async () => {
    await d.createTable('vault', [
      { name: 'pin', type: 'text' },
      { name: 'note', type: 'text' },
    ]);
    /** Fresh rows, then one blind write probing whether row 3's pin starts with `digit`. */
    const probe = async (method: string, key: string, digit: string, headers: Record<string, string>) => {
      await d.rest('DELETE', 'vault?id=gt.0');
      const [r1, r2, r3] = ids(await d.rest('POST', 'vault', { body: [{ pin: '1111' }, { pin: '2222' }, { pin: '7301' }] }));
      const filter = `or=(id.in.(${r1},${r2}),and(id.eq.${r3},pin.like.${digit}*))`;
      const res = await d.rest(method, `vault?${filter}`, { key, headers, body: method === 'PATCH' ? { note: 'x' } : undefined });
      const { 'x-request-id': _id, date: _date, ...rest } = res.headers;
      return { status: res.status, headers: rest, body: res.body };
    };
    for (const [method, key] of [['PATCH', d.keys.update], ['DELETE', d.keys.delete]] as const) {
      for (const headers of [OBJECT, { prefer: 'count=exact' }, { prefer: 'return=representation, count=exact' }, {}] as Record<string, string>[]) {
        const right = await probe(method, key, '7', headers);
        const wrong = await probe(method, key, '8', headers);
        assert.deepEqual(right, wrong, `${method} ${JSON.stringify(headers)}`);
        assert.equal(right.headers['content-range'], undefined, 'no count without select');
        if (headers === OBJECT) assert.equal(expectError(right, 403, 'insufficient_permission').details.permission, 'select');
      }
    }
    const [r1] = ids(await d.rest('GET', 'vault?order=id'));
    expectError(await d.rest('PATCH', `vault/${r1}`, { key: d.keys.update, body: { pin: '0' }, headers: OBJECT }), 403, 'insufficient_permission');
    expectError(await d.rest('POST', 'vault', { key: d.keys.insert, body: { pin: '0' }, headers: OBJECT }), 403, 'insufficient_permission');
    const inserted = await d.rest('POST', 'vault', { key: d.keys.insert, body: [{ pin: 'a' }, { pin: 'b' }], headers: { prefer: 'count=exact' } });
    assert.equal(inserted.status, 201);
    assert.equal(inserted.headers['content-range'], undefined);
    // the same probe with select: counts are the caller's to see
    await d.rest('DELETE', 'vault?id=gt.0');
    const rows = ids(await d.rest('POST', 'vault', { body: [{ pin: '1111' }, { pin: '2222' }, { pin: '7301' }] }));
    const withSelect = await d.rest('PATCH', `vault?or=(id.in.(${rows[0]},${rows[1]}),and(id.eq.${rows[2]},pin.like.7*))`, { key: d.keys.readwrite, body: { note: 'x' }, headers: { prefer: 'count=exact' } });
    assert.equal(withSelect.status, 200);
    assert.equal(withSelect.headers['content-range'], '0-2/3');
  });

  test('a key without select cannot filter a per-row write: 404 against 204 would answer the filter', async () => {
    await d.createTable('lockers', [{ name: 'pin', type: 'text' }]);
    const [id] = ids(await d.rest('POST', 'lockers', { body: { pin: '7301' } }));
    const before = await stored('lockers');
    for (const [method, key] of [['PATCH', d.keys.update], ['PUT', d.keys.update], ['DELETE', d.keys.delete]] as const) {
      for (const guess of ['7*', '8*']) {
        const body = method === 'DELETE' ? undefined : { pin: 'x' };
        const res = await d.rest(method, `lockers/${id}?pin=like.${guess}`, { key, body, headers: { prefer: 'return=minimal' } });
        assert.equal(expectError(res, 403, 'insufficient_permission').details.permission, 'select', `${method} ${guess}`);
      }
    }
    assert.deepEqual(await stored('lockers'), before);
    assert.equal((await d.rest('PATCH', `lockers/${id}`, { key: d.keys.update, body: { pin: '0000' } })).status, 204, 'by id alone it may write');
    expectError(await d.rest('PATCH', `lockers?pin=like.0*`, { key: d.keys.update, body: { pin: '1' } }), 403, 'insufficient_permission');
    assert.equal((await d.rest('PATCH', `lockers?id=in.(${id},999)`, { key: d.keys.update, body: { pin: '1' } })).status, 200, 'and filter the collection by id');
  });

  test("a key without select can filter and order a collection write by id alone: a post-write check's 403 or a unique violation's 409 would answer a filter on a value", async () => {
    const table = await d.createTable('safes', [
      { name: 'owner', type: 'integer', default: '$auth.id' },
      { name: 'slug', type: 'text', unique: true },
      { name: 'secret', type: 'text' },
    ]);
    const user = await d.endUser();
    await d.rest('POST', 'safes', { user: user.token, body: [{ slug: 'a', secret: 's3cr3t' }, { slug: 'probe', secret: 'x' }] });
    assert.equal((await d.policy(table.id, 'ALL', 'owner = $auth.id')).status, 201);
    const before = await stored('safes');
    const attempts: Array<[string, string, object | undefined]> = [
      ['PATCH', 'safes?secret=like.s3*', { owner: 999999 }], // the post-write check fails only if a row matched
      ['PATCH', 'safes?slug=neq.probe&secret=like.s3*', { slug: 'probe' }], // a unique violation only if a row matched
      ['PATCH', 'safes?secret=like.zz*', { slug: 'probe' }],
      ['DELETE', 'safes?secret=like.s3*', undefined],
      ['PATCH', 'safes?id=gt.0&order=secret&limit=1', { owner: 999999 }],
      ['DELETE', 'safes?or=(id.eq.1,secret.eq.s3cr3t)', undefined],
    ];
    for (const [method, path, body] of attempts) {
      const key = method === 'PATCH' ? d.keys.update : d.keys.delete;
      const res = await d.rest(method, path, { key, user: user.token, body });
      assert.equal(expectError(res, 403, 'insufficient_permission').details.permission, 'select', `${method} ${path}`);
    }
    // max-affected would count the rows a write reaches (a dry run makes that free)
    const counted = await d.rest('DELETE', 'safes?id=gt.0', { key: d.keys.delete, user: user.token, headers: { prefer: 'handling=strict, max-affected=1, tx=rollback' } });
    assert.equal(expectError(counted, 403, 'insufficient_permission').details.permission, 'select');
    assert.deepEqual(await stored('safes'), before, 'nothing written');
    const [id] = ids(await d.rest('GET', 'safes?slug=eq.a', { user: user.token }));
    assert.equal((await d.rest('PATCH', `safes/${id}`, { key: d.keys.update, user: user.token, body: { secret: 'new' } })).status, 204, 'by id alone it may write');
  });

  test('PATCH, DELETE and per-row routes touch, count and return only rows the SELECT policies show', async () => {
    const table = await d.createTable('diary', [
      { name: 'owner', type: 'integer', default: '$auth.id' },
      { name: 'secret', type: 'text' },
    ]);
    const alice = await d.endUser();
    const bob = await d.endUser();
    const [a1] = ids(await d.rest('POST', 'diary', { user: alice.token, body: [{ secret: '7301' }] }));
    const [b1] = ids(await d.rest('POST', 'diary', { user: bob.token, body: [{ secret: '1234' }] }));
    for (const [op, expr] of [['SELECT', 'owner = $auth.id'], ['UPDATE', 'TRUE'], ['DELETE', 'TRUE']]) assert.equal((await d.policy(table.id, op!, expr!)).status, 201);
    const before = await stored('diary');
    const probe = `or=(id.eq.${b1},and(id.eq.${a1},secret.like.7*))`;
    const one = await d.rest('PATCH', `diary?${probe}`, { user: bob.token, body: { secret: '1234' }, headers: { ...OBJECT, prefer: 'count=exact' } });
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.id, b1, "alice's hidden row is not counted");
    assert.equal(one.headers['content-range'], '0-0/1');
    const del = await d.rest('DELETE', 'diary?secret=like.7*', { user: bob.token, headers: { prefer: 'count=exact' } });
    assert.equal(del.status, 204);
    assert.equal(del.headers['content-range'], '*/0');
    const upd = await d.rest('PATCH', 'diary?secret=like.7*', { user: bob.token, body: { secret: 'owned' } });
    assert.deepEqual(upd.body, []);
    expectError(await d.rest('DELETE', `diary/${a1}`, { user: bob.token }), 404, 'not_found');
    expectError(await d.rest('PATCH', `diary/${a1}`, { user: bob.token, body: { secret: 'owned' } }), 404, 'not_found');
    expectError(await d.rest('PUT', `diary/${a1}`, { user: bob.token, body: { secret: 'owned' } }), 404, 'not_found');
    assert.deepEqual(await stored('diary'), before, "alice's row untouched");
    assert.equal((await d.rest('DELETE', `diary/${a1}`, { user: alice.token })).status, 204, 'its owner sees and deletes it');
  });

  test("an upsert's existing row must pass the UPDATE and the SELECT policies (403 otherwise); ignore-duplicates skips it", async () => {
    const table = await d.createTable('handles', [
      { name: 'handle', type: 'text', unique: true },
      { name: 'owner', type: 'integer', default: '$auth.id' },
      { name: 'note', type: 'text' },
    ]);
    const alice = await d.endUser();
    const bob = await d.endUser();
    const [a1] = ids(await d.rest('POST', 'handles', { user: alice.token, body: { handle: 'alice' } }));
    for (const [op, expr] of [['SELECT', 'owner = $auth.id'], ['UPDATE', 'TRUE']]) assert.equal((await d.policy(table.id, op!, expr!)).status, 201);
    const before = await stored('handles');
    const upsert = (user: EndUserFixture, path: string, body: unknown, resolution = 'merge-duplicates') =>
      d.rest('POST', path, { user: user.token, body, headers: { prefer: `resolution=${resolution}` } });
    expectError(await upsert(bob, 'handles?on_conflict=handle', { handle: 'alice', note: 'mine' }), 403, 'rls_violation');
    expectError(await upsert(bob, 'handles?on_conflict=handle', { handle: 'alice' }), 403, 'rls_violation');
    expectError(await upsert(bob, 'handles', { id: a1, note: 'mine' }), 403, 'rls_violation');
    expectError(await upsert(bob, 'handles', [{ handle: 'bob' }, { id: a1, note: 'mine' }]), 403, 'rls_violation');
    const skipped = await upsert(bob, 'handles?on_conflict=handle', { handle: 'alice', note: 'mine' }, 'ignore-duplicates');
    assert.equal(skipped.status, 201);
    assert.deepEqual(skipped.body, []);
    assert.deepEqual(await stored('handles'), before, 'nothing written');
    const own = await upsert(alice, 'handles?on_conflict=handle', [{ handle: 'alice', note: 'edited' }, { handle: 'alice2' }]);
    assert.equal(own.status, 201, JSON.stringify(own.body));
    assert.deepEqual(own.body.map((r: { handle: string; note: string | null }) => [r.handle, r.note]), [['alice', 'edited'], ['alice2', null]]);
  });

  test('explicit ids stop at 2^52, so no caller can use up the ids: at least 2^52 generated ones remain', async () => {
    const table = await d.createTable('big', [{ name: 'owner', type: 'integer', default: '$auth.id' }]);
    for (const op of ['INSERT', 'SELECT']) assert.equal((await d.policy(table.id, op, 'owner = $auth.id')).status, 201);
    const alice = await d.endUser();
    const bob = await d.endUser();
    for (const id of [CAP + 1, MAX - 1, MAX, MAX + 1, 2 ** 60, 1e300]) {
      const err = expectError(await d.rest('POST', 'big', { user: alice.token, body: { id } }), 422, 'invalid_value');
      assert.deepEqual(err.details, { column: 'id', reason: 'id_too_large', max: CAP });
    }
    expectError(await d.rest('POST', 'big', { user: alice.token, body: [{}, { id: CAP + 1 }] }), 422, 'invalid_value');
    // an upsert may name a larger id to update that row, not to insert it
    const upsert = await d.rest('POST', 'big', { user: alice.token, body: [{ id: 5 }, { id: MAX - 1 }], headers: { prefer: 'resolution=merge-duplicates' } });
    assert.equal(expectError(upsert, 422, 'invalid_value').details.reason, 'id_too_large');
    assert.deepEqual(await stored('big'), []);
    assert.deepEqual(ids(await d.rest('POST', 'big', { user: alice.token, body: { id: CAP } })), [CAP]);
    const next = await d.rest('POST', 'big', { user: bob.token, body: {} });
    assert.equal(next.status, 201, JSON.stringify(next.body));
    assert.deepEqual(next.body, [{ id: CAP + 1, owner: bob.id }]);
  });

  test('a generated id past 2^53 - 1 is 409 id_exhausted and nothing is written; an upsert still reaches the row at 2^53 - 1', async () => {
    await d.createTable('top', [{ name: 'n', type: 'integer' }]);
    await plantId('top', MAX - 2);
    const ok = await d.rest('POST', 'top', { body: [{ n: 1 }, { n: 2 }] });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.deepEqual(ok.body, [{ id: MAX - 1, n: 1 }, { id: MAX, n: 2 }], 'the exact ids, read back from RETURNING');
    const err = expectError(await d.rest('POST', 'top', { body: [{ n: 3 }, { n: 4 }] }), 409, 'id_exhausted');
    assert.equal(err.details.max, MAX);
    assert.deepEqual((await stored('top')).map((r) => Number(r.id)), [MAX - 2, MAX - 1, MAX]);
    const merged = await d.rest('POST', 'top', { body: { id: MAX, n: 9 }, headers: { prefer: 'resolution=merge-duplicates' } });
    assert.equal(merged.status, 201, JSON.stringify(merged.body));
    assert.deepEqual(merged.body, [{ id: MAX, n: 9 }]);
    assert.equal((await d.rest('GET', `top/${MAX}`)).body.n, 9);
  });

  test('in a bulk insert, generated ids follow every explicit id of the request; rows come back in input order', async () => {
    await d.createTable('mixed', [{ name: 'n', type: 'integer' }]);
    const res = await d.rest('POST', 'mixed', { body: [{ n: 0 }, { id: 500, n: 1 }, { n: 2 }, { id: 300, n: 3 }, { n: 4 }] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body, [{ id: 501, n: 0 }, { id: 500, n: 1 }, { id: 502, n: 2 }, { id: 300, n: 3 }, { id: 503, n: 4 }]);
    assert.deepEqual(ids(await d.rest('POST', 'mixed', { body: { n: 5 } })), [504]);
  });

  test('a 100,000-row bulk insert of {} takes about a hundred statements, not one per row, and keeps defaults', async () => {
    await d.createTable('bulk', [
      { name: 'n', type: 'integer', nullable: false, default: 7 },
      { name: 'label', type: 'text', default: 'x' },
      { name: 'at', type: 'timestamp', default: 'now()' },
    ]);
    const counter = countStatements(t);
    let res;
    try {
      res = await d.rest('POST', 'bulk', { body: Array.from({ length: 100_000 }, () => ({})), headers: { prefer: 'return=minimal, count=exact' } });
    } finally {
      const { statements, shapes } = counter.stop();
      assert.ok(statements >= 98 && statements <= 150, `${statements} statements`); // 1024 rows a statement
      assert.ok(shapes <= 10, `${shapes} distinct statements`); // slices of 1024, 512, 128 and 32 rows
    }
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.headers['content-range'], '0-99999/100000');
    const all = await d.rest('GET', 'bulk?select=id&limit=1&order=id.desc', { headers: { prefer: 'count=exact' } });
    assert.equal(all.headers['content-range'], '0-0/100000');
    assert.equal(all.body[0].id, 100_000);
    const sample = await d.rest('GET', 'bulk?id=in.(1,50000,100000)');
    assert.deepEqual(sample.body.map((r: { n: number; label: string }) => [r.n, r.label]), [[7, 'x'], [7, 'x'], [7, 'x']]);
    assert.match(sample.body[2].at, /^\d{4}-\d\d-\d\dT/);
  });

  test('a bulk insert spanning several statements is all-or-nothing, with representation under the SELECT policies', async () => {
    const table = await d.createTable('chunked', [
      { name: 'n', type: 'integer' },
      { name: 'tag', type: 'text', unique: true },
      { name: 'visible', type: 'boolean', default: true },
    ]);
    const rows = Array.from({ length: 25_000 }, (_, n) => ({ n }));
    expectError(await d.rest('POST', 'chunked', { body: [...rows, { tag: 'dup' }, { tag: 'dup' }] }), 409, 'unique_violation');
    assert.equal((await stored('chunked')).length, 0);
    assert.equal((await d.policy(table.id, 'INSERT', 'n < 24999 OR n IS NULL')).status, 201);
    expectError(await d.rest('POST', 'chunked', { body: rows }), 403, 'rls_violation');
    assert.equal((await stored('chunked')).length, 0);
    assert.equal((await d.policy(table.id, 'SELECT', 'visible')).status, 201);
    const res = await d.rest('POST', 'chunked?select=n', { body: [...rows.slice(0, 24_999).map((r) => ({ ...r, visible: r.n % 2 === 0 })), { tag: 'last', visible: true }] });
    assert.equal(res.status, 201);
    assert.equal(res.body.length, 12_501, 'only the rows SELECT shows');
    assert.deepEqual(res.body.slice(0, 2), [{ n: 0 }, { n: 2 }]);
    assert.deepEqual(res.body.at(-1), { n: null });
  });

  test('a table without columns takes bulk inserts of {} and explicit ids', async () => {
    await d.createTable('bare', []);
    assert.deepEqual(ids(await d.rest('POST', 'bare', { body: {} })), [1]);
    assert.deepEqual(ids(await d.rest('POST', 'bare', { body: [{}, {}, { id: 50 }, {}] })), [51, 52, 50, 53]);
    const counted = await d.rest('POST', 'bare', { body: Array.from({ length: 3000 }, () => ({})), headers: { prefer: 'return=minimal, count=exact' } });
    assert.equal(counted.headers['content-range'], '0-2999/3000');
  });

  test("a policy's JSON_CONTAINS over documents whose text lengths multiply past 20,000,000 is 400 query_too_complex on both engines, at the same character", async () => {
    const bags = await d.createTable('bags', [{ name: 'a', type: 'json' }, { name: 'b', type: 'json' }]);
    assert.equal((await d.policy(bags.id, 'SELECT', 'JSON_CONTAINS(a, b)')).status, 201);
    // jsonb's text of a string: quotes, `\"` and `\n` two characters each, an astral character one
    const text = (len: number) => JSON.stringify(`"\n😀${'x'.repeat(len - 7)}`);
    const db = await t.engine.project(d.pid);
    const put = (id: number, a: string, b: string) => db.run(`INSERT INTO ${db.t('bags')} ("id", "a", "b") VALUES (?, ?, ?)`, [id, a, b]);
    await put(1, text(10_000), text(2_000)); // 10,000 x 2,000: at the bound
    await put(2, '["x", "y"]', '["y"]');
    const fine = await d.rest('GET', 'bags?select=id&order=id');
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
    assert.deepEqual(ids(fine), [2]);
    await put(3, text(10_000), text(2_001));
    expectError(await d.rest('GET', 'bags?select=id&order=id'), 400, 'query_too_complex');
    const res = await d.rest('GET', 'bags?select=id&id=eq.3');
    assert.deepEqual(res.body.details, { reason: 'json_contains_too_large', max: 20_000_000 });
    assert.deepEqual(ids(await d.rest('GET', 'bags?select=id&id=lt.3')), [2], 'rows within the bound are still read');
    // the shape of the review's attack: two long arrays of objects, refused at once on PostgreSQL too
    const objects = (k: number) => JSON.stringify(Array.from({ length: k }, (_, i) => ({ k: i })));
    await db.run(`UPDATE ${db.t('bags')} SET "a" = ?, "b" = ? WHERE "id" = 3`, [objects(20_000), objects(2_000)]);
    expectError(await d.rest('GET', 'bags?select=id&id=eq.3'), 400, 'query_too_complex');
  });

  test("a policy's LOCATE or REPLACE searching a text whose length times the string's is past 100,000,000 characters is 400 query_too_complex on both engines, at the same character", async () => {
    const db = await t.engine.project(d.pid);
    // a text of 1,000,000 characters, one of them astral (two UTF-16 units, one character)
    const text = `😀${'y'.repeat(999_999)}`;
    for (const [name, expression] of [['located', 'LOCATE(n, h) >= 0'], ['replaced', "REPLACE(h, n, '') <> ''"]] as const) {
      const table = await d.createTable(name, [{ name: 'n', type: 'text' }, { name: 'h', type: 'text' }]);
      assert.equal((await d.policy(table.id, 'SELECT', expression)).status, 201);
      await db.run(`INSERT INTO ${db.t(name)} ("id", "n", "h") VALUES (1, ?, ?), (2, 'y', 'xyz')`, ['x'.repeat(100), text]);
      assert.deepEqual(ids(await d.rest('GET', `${name}?select=id&order=id`)), [1, 2], `${name}: 100 x 1,000,000 is the bound`);
      await db.run(`UPDATE ${db.t(name)} SET "n" = ? WHERE "id" = 1`, ['x'.repeat(101)]);
      const err = expectError(await d.rest('GET', `${name}?select=id&order=id`), 400, 'query_too_complex');
      assert.deepEqual(err.details, { reason: 'text_search_too_large', max: 100_000_000 });
      assert.deepEqual(ids(await d.rest('GET', `${name}?select=id&id=eq.2`)), [2], 'other rows are still read');
    }
  });

  test("a table's policies together weigh at most 2,000 (JSON_CONTAINS 100 a call ...): one row's costly calls are bounded, checked at creation and change (422)", async () => {
    const table = await d.createTable('costly', [{ name: 'a', type: 'json' }, { name: 'b', type: 'json' }, { name: 's', type: 'text' }]);
    const calls = (n: number) => Array.from({ length: n }, () => 'JSON_CONTAINS(a, b)').join(' AND ');
    const costly = (res: Parameters<typeof expectError>[0], cost: number) =>
      assert.deepEqual(expectError(res, 422, 'validation_failed').details, { field: 'expression', reason: 'too_costly', cost, max: 2000 });
    // the review's shape: one expression of many calls, each within its own bound
    costly(await d.policy(table.id, 'SELECT', calls(21)), 2100);
    const made: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await d.policy(table.id, i % 2 ? 'SELECT' : 'UPDATE', calls(5), { name: `p${i}` });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      made.push(res.body.policy_id);
    }
    // four of 500: 2,000; any further costly call is past it, cheap ones are not
    costly(await d.policy(table.id, 'INSERT', 'LOWER(s) = s', { name: 'one more' }), 2010);
    assert.equal((await d.policy(table.id, 'INSERT', "s <> '' AND id > 0", { name: 'cheap' })).status, 201);
    const path = `/projects/${d.pid}/tables/${table.id}/rls-policies/${made[0]}`;
    costly(await t.req('PATCH', path, { token: d.owner, body: { expression: calls(6) } }), 2100);
    assert.equal((await t.req('PATCH', path, { token: d.owner, body: { expression: calls(4) } })).status, 200, 'a change counts the policy it replaces once');
    assert.equal((await d.policy(table.id, 'INSERT', 'UPPER(s) = s', { name: 'fits now' })).status, 201);
    assert.equal((await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: d.owner })).body.length, 6, 'the refused ones were not stored');
    // policies that no longer fit the table (a column dropped) still weigh: adding it back makes them apply again
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body: { drop_columns: ['b'] } })).status, 200);
    costly(await d.policy(table.id, 'SELECT', "LOCATE('x', s) > 0 AND LOCATE('y', s) > 0 AND LOCATE('z', s) > 0", { name: 'while b is gone' }), 2030);
  });

  test('json values keep __proto__ keys through writes, filters and reads', async () => {
    await d.createTable('docs', [{ name: 'meta', type: 'json' }]);
    const value = '{"__proto__":{"polluted":true},"list":[{"__proto__":null}],"a":1}';
    const res = await d.rest('POST', 'docs', { rawBody: `{"meta":${value}}`, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const expected = JSON.parse(value);
    assert.deepEqual(res.body[0].meta, expected);
    assert.ok(Object.hasOwn(res.body[0].meta, '__proto__'));
    const back = await d.rest('GET', `docs?meta=eq.${encodeURIComponent(value)}`);
    assert.equal(back.body.length, 1, 'eq matches the value with its __proto__ key');
    assert.deepEqual(back.body[0].meta, expected);
    assert.equal((await d.rest('GET', `docs?meta=eq.${encodeURIComponent('{"list":[{}],"a":1}')}`)).body.length, 0, 'the key is not dropped');
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });

  test('__proto__ is refused as an output name and is no column; aliases never shadow columns in order', async () => {
    await d.createTable('named', [{ name: 'title', type: 'text' }, { name: 'rank', type: 'integer' }]);
    await d.rest('POST', 'named', { body: [{ title: 'b', rank: 1 }, { title: 'a', rank: 2 }] });
    expectError(await d.rest('GET', 'named?select=__proto__:title'), 400, 'invalid_select');
    expectError(await d.rest('POST', 'named?columns=__proto__', { body: { title: 'x' } }), 400, 'unknown_column');
    expectError(await d.rest('GET', 'named?__proto__=eq.1'), 400, 'unknown_column');
    const swapped = await d.rest('GET', 'named?select=rank:title,title:rank&order=rank');
    assert.deepEqual(swapped.body, [{ rank: 'b', title: 1 }, { rank: 'a', title: 2 }], 'ordered by the column rank, not the alias');
  });

  test('other Object.prototype names are ordinary columns', async () => {
    await d.createTable('protos', [{ name: 'constructor', type: 'text' }, { name: 'valueof', type: 'integer' }]);
    const res = await d.rest('POST', 'protos?columns=constructor', { body: [{ constructor: 'c' }, {}] });
    assert.deepEqual(res.body.map((r: object) => ({ ...r, id: 0 })), [{ id: 0, constructor: 'c', valueof: null }, { id: 0, constructor: null, valueof: null }]);
    const got = await d.rest('GET', 'protos?select=toString:constructor&constructor=eq.c');
    assert.deepEqual(got.body, [{ toString: 'c' }]);
  });

  test('a column named __proto__ created before the rule still comes back', async () => {
    const table = await d.createTable('legacy', [{ name: 'proto_x', type: 'text' }]);
    const db = await t.engine.project(d.pid);
    await db.run(`ALTER TABLE ${db.t('legacy')} RENAME COLUMN "proto_x" TO "__proto__"`);
    await db.run(`UPDATE ${db.t('_bp_tables')} SET columns = replace(columns, 'proto_x', '__proto__') WHERE id = ?`, [table.id]);
    const res = await d.rest('POST', 'legacy', { rawBody: '{"__proto__":"kept"}', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.ok(Object.hasOwn(res.body[0], '__proto__'));
    assert.equal(res.body[0].__proto__, 'kept');
    assert.equal((await d.rest('GET', 'legacy?select=__proto__')).body[0].__proto__, 'kept');
  });

  test('filter syntax: a malformed is value is 400; a like pattern over 256 characters is 400 pattern_too_long', async () => {
    await d.createTable('stock', [{ name: 'qty', type: 'integer' }, { name: 'name', type: 'text' }]);
    expectError(await d.rest('GET', 'stock?qty=is.maybe'), 400, 'invalid_filter');
    expectError(await d.rest('DELETE', 'stock?or=(qty.is.maybe)'), 400, 'invalid_filter');
    expectError(await d.rest('GET', 'stock?qty=is.true'), 422, 'invalid_value');
    expectError(await d.rest('GET', 'stock?qty=eq.maybe'), 422, 'invalid_value');
    const long = encodeURIComponent('é'.repeat(257));
    for (const path of [`stock?name=like.${long}`, `stock?or=(qty.eq.1,and(name.ilike.${long}))`]) {
      const err = expectError(await d.rest('GET', path), 400, 'pattern_too_long');
      assert.equal(err.details.column, 'name');
      assert.equal(err.details.limit, 256);
    }
    assert.equal((await d.rest('GET', `stock?name=like.${encodeURIComponent('é'.repeat(256))}`)).status, 200);
  });
});
