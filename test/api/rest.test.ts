// The REST passthrough without policies (SPEC 4.5, CONTRACT §5) on every engine: PostgREST
// grammar, the column whitelist, type checks, defaults, Prefer, count, single object, upsert,
// permissions, and bad input that must change nothing.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

const COLUMNS = [
  { name: 'title', type: 'text', nullable: false },
  { name: 'done', type: 'boolean', default: false },
  { name: 'priority', type: 'integer' },
  { name: 'score', type: 'number' },
  { name: 'due', type: 'date' },
  { name: 'at', type: 'timestamp' },
  { name: 'meta', type: 'json' },
  { name: 'owner_id', type: 'integer', default: '$auth.id' },
  { name: 'owner_email', type: 'text', default: '$auth.email' },
  { name: 'created', type: 'timestamp', default: 'now()' },
  { name: 'tag', type: 'text', unique: true },
];

await describeEngines(
  'rest passthrough',
  (ctx) => {
    let t: TestApp;
    let d: DataPlane;
    let alice: { id: number; email: string; token: string };
    const count = async () => (await d.rest('GET', 'tasks?select=id', { headers: { prefer: 'count=exact' } })).headers['content-range'];

    before(async () => {
      t = ctx();
      d = await dataPlane(t);
      await d.createTable('tasks', COLUMNS);
      alice = await d.endUser();
      const seed = [
        { title: 'Write spec', priority: 1, score: 1.5, due: '2026-01-31', at: '2026-01-31T10:00:00Z', meta: { a: 1 }, tag: 'spec' },
        { title: 'write code', priority: 2, score: 2.5, due: '2026-02-28', at: '2026-02-28T10:00:00.123Z', meta: [1, 2], tag: 'code', done: true },
        { title: 'Ship it', priority: 3, score: null, due: null, at: null, meta: null, tag: 'ship' },
        { title: '100% done_ok', priority: null, score: -3, tag: 'pct' },
      ];
      const res = await d.rest('POST', 'tasks', { body: seed, user: alice.token });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });

    test('insert returns the row with defaults filled: literal, now(), $auth.id, $auth.email', async () => {
      const res = await d.rest('POST', 'tasks', { body: { title: 'defaults', tag: 'dflt' }, user: alice.token });
      assert.equal(res.status, 201);
      assert.ok(Array.isArray(res.body));
      const row = res.body[0];
      assert.equal(typeof row.id, 'number');
      assert.equal(row.done, false);
      assert.equal(row.owner_id, alice.id);
      assert.equal(row.owner_email, alice.email);
      assert.match(row.created, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const anon = await d.rest('POST', 'tasks', { body: { title: 'anonymous', tag: 'anon' } });
      assert.equal(anon.body[0].owner_id, null, 'anonymous caller: $auth.id default is NULL');
      assert.equal(anon.body[0].owner_email, null);
      const minimal = await d.rest('POST', 'tasks', { body: { title: 'min', tag: 'min' }, headers: { prefer: 'return=minimal' } });
      assert.equal(minimal.status, 201);
      assert.equal(minimal.body, '');
      assert.equal(minimal.headers['preference-applied'], 'return=minimal');
      await d.rest('DELETE', 'tasks?tag=in.(dflt,anon,min)');
    });

    test('types round-trip exactly on both engines', async () => {
      const res = await d.rest('GET', 'tasks?tag=eq.code');
      assert.equal(res.status, 200);
      const r = res.body[0];
      assert.equal(r.done, true);
      assert.equal(r.priority, 2);
      assert.equal(r.score, 2.5);
      assert.equal(r.due, '2026-02-28');
      assert.equal(r.at, '2026-02-28T10:00:00.123Z');
      assert.deepEqual(r.meta, [1, 2]);
      assert.equal(res.headers['content-range'], '0-0/*');
    });

    test('Accept: text/csv answers the rows as CSV: a header line, quoting where needed, NULL empty, JSON as text', async () => {
      const res = await d.rest('GET', 'tasks?select=title,done,n:priority,due,meta&tag=in.(spec,code,ship)&order=priority', { headers: { accept: 'text/csv' } });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/csv; charset=utf-8');
      assert.equal(res.headers['content-range'], '0-2/*');
      assert.equal(res.body, ['title,done,n,due,meta', 'Write spec,,1,2026-01-31,"{""a"":1}"', 'write code,true,2,2026-02-28,"[1,2]"', 'Ship it,,3,,', ''].join('\n'));
      const empty = await d.rest('GET', 'tasks?select=title&tag=eq.none', { headers: { accept: 'text/csv' } });
      assert.equal(empty.body, 'title\n');
      const quoted = await d.rest('GET', `tasks?select=title&tag=eq.pct`, { headers: { accept: 'text/csv', prefer: 'count=exact' } });
      assert.deepEqual([quoted.body, quoted.headers['content-range']], ['title\n100% done_ok\n', '0-0/1']);
      await d.rest('POST', 'tasks', { body: { title: ' a, "b"\nc', tag: 'csv', meta: 'x' } });
      const csv = await d.rest('GET', 'tasks?select=title,meta&tag=eq.csv', { headers: { accept: 'text/csv' } });
      assert.equal(csv.body, 'title,meta\n" a, ""b""\nc","""x"""\n');
      await d.rest('DELETE', 'tasks?tag=eq.csv');
      // an empty text is "", NULL an empty field
      await d.rest('POST', 'tasks', { body: [{ title: '', tag: 'csv1' }, { title: 'n', tag: 'csv2', owner_email: null }] });
      assert.equal((await d.rest('GET', 'tasks?select=title,owner_email&tag=like.csv*&order=tag', { headers: { accept: 'text/csv' } })).body, 'title,owner_email\n"",\nn,\n');
      await d.rest('DELETE', 'tasks?tag=like.csv*');
      // what the Accept header ranks first: text/csv;q=0 or JSON listed first is JSON
      for (const [accept, csvWanted] of [['text/csv;q=0, application/json', false], ['application/json, text/csv', false], ['text/csv, application/json', true], ['application/json;q=0.5, text/csv', true], ['text/csv, */*', true], ['*/*', false]] as const) {
        const res = await d.rest('GET', 'tasks?select=title&tag=eq.pct', { headers: { accept } });
        assert.equal(String(res.headers['content-type']).startsWith('text/csv'), csvWanted, accept);
      }
    });

    test('instants of the first millennium and the last years round-trip exactly: returned, read, written back', async () => {
      const instants = ['0001-03-04T05:06:07.008Z', '0049-12-31T23:59:59.999Z', '0050-01-01T00:00:00.000Z', '0999-06-15T12:00:00.500Z', '9999-12-31T23:59:59.999Z'];
      const posted = await d.rest('POST', 'tasks', { body: instants.map((at, i) => ({ title: 'era', tag: `era${i}`, at })) });
      assert.deepEqual(posted.body.map((r: { at: string }) => r.at), instants);
      const read = await d.rest('GET', 'tasks?title=eq.era&order=at&select=id,at');
      assert.deepEqual(read.body.map((r: { at: string }) => r.at), instants);
      for (const r of read.body) assert.equal((await d.rest('PATCH', `tasks?id=eq.${r.id}`, { body: { at: r.at } })).body[0].at, r.at);
      assert.equal((await d.rest('GET', 'tasks?title=eq.era&at=lt.0100-01-01&select=at')).body.length, 3);
      await d.rest('DELETE', 'tasks?title=eq.era');
    });

    const filters: [string, string[]][] = [
      ['priority=eq.2', ['code']],
      ['priority=neq.2', ['spec', 'ship']],
      ['priority=gt.1', ['code', 'ship']],
      ['priority=gte.2&priority=lte.2', ['code']],
      ['priority=lt.3', ['spec', 'code']],
      ['priority=in.(1,3)', ['spec', 'ship']],
      ['priority=not.in.(1,3)', ['code']],
      ['priority=is.null', ['pct']],
      ['priority=not.is.null&order=priority.desc', ['ship', 'code', 'spec']],
      ['done=is.true', ['code']],
      ['done=is.false', []], // bulk insert: `done` was sent in one row, so the others hold NULL
      ['done=is.null', ['spec', 'ship', 'pct']],
      ['title=like.*rite*', ['spec', 'code']],
      ['title=like.w*', ['code']],
      ['title=ilike.*RITE*', ['spec', 'code']],
      ['title=like.Write*', ['spec']],
      ['title=eq.write code', ['code']],
      ['title=eq.Write Code', []],
      ['title=like.100\\%*', ['pct']],
      ['title=like.*done\\_ok', ['pct']],
      ['or=(priority.eq.1,tag.eq.ship)', ['spec', 'ship']],
      ['or=(priority.eq.1,and(done.is.true,score.gt.2))', ['spec', 'code']],
      ['not.or=(priority.eq.1,priority.is.null)', ['code', 'ship']],
      ['and=(score.gt.0,score.lt.2)', ['spec']],
      ['due=lt.2026-02-01', ['spec']],
      ['at=gte.2026-02-01T00:00:00Z', ['code']],
      ['at=gt.2026-01-31T09:59:59.999Z&at=lt.2026-01-31T10:00:00.001Z', ['spec']],
      ['score=lt.0', ['pct']],
      ['tag=in.("spec","ship")', ['spec', 'ship']],
      ['title=eq.\'; DROP TABLE tasks; --', []],
      ['title=in.()', []],
    ];
    for (const [qs, tags] of filters) {
      test(`filter ${qs}`, async () => {
        const res = await d.rest('GET', `tasks?select=tag&${qs.includes('order=') ? '' : 'order=id&'}${qs.replace(/ /g, '%20').replace(/%(?![0-9A-F]{2})/g, '%25')}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(res.body.map((r: { tag: string }) => r.tag), tags);
      });
    }

    test('select with aliases, order, limit, offset, Range, count=exact', async () => {
      const res = await d.rest('GET', 'tasks?select=name:title,p:priority&order=priority.desc.nullslast&limit=2&offset=1', { headers: { prefer: 'count=exact' } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, [
        { name: 'write code', p: 2 },
        { name: 'Write spec', p: 1 },
      ]);
      assert.equal(res.headers['content-range'], '1-2/4');
      assert.equal(res.headers['preference-applied'], 'count=exact');
      const ranged = await d.rest('GET', 'tasks?select=tag&order=id', { headers: { range: '1-2' } });
      assert.deepEqual(ranged.body.map((r: { tag: string }) => r.tag), ['code', 'ship']);
      const nullsFirst = await d.rest('GET', 'tasks?select=tag&order=priority.asc.nullsfirst');
      assert.deepEqual(nullsFirst.body.map((r: { tag: string }) => r.tag), ['pct', 'spec', 'code', 'ship']);
      const text = await d.rest('GET', 'tasks?select=title&order=title');
      assert.deepEqual(text.body.map((r: { title: string }) => r.title), ['100% done_ok', 'Ship it', 'Write spec', 'write code'], 'binary string order on both engines');
      const head = await d.rest('HEAD', 'tasks', { headers: { prefer: 'count=exact' } });
      assert.equal(head.status, 200);
      assert.equal(head.headers['content-range'], '0-3/4');
    });

    test('negative offset and malformed limit are 400', async () => {
      expectError(await d.rest('GET', 'tasks?offset=-1'), 400, 'invalid_range');
      expectError(await d.rest('GET', 'tasks?limit=abc'), 400, 'invalid_range');
    });

    test('single object: exactly one row or 406 not_single', async () => {
      const accept = { accept: 'application/vnd.pgrst.object+json' };
      const one = await d.rest('GET', 'tasks?tag=eq.spec', { headers: accept });
      assert.equal(one.status, 200);
      assert.equal(one.body.tag, 'spec');
      const none = expectError(await d.rest('GET', 'tasks?tag=eq.none', { headers: accept }), 406, 'not_single');
      assert.equal(none.details, 'The result contains 0 rows');
      expectError(await d.rest('GET', 'tasks?priority=gt.1', { headers: accept }), 406, 'not_single');
      // a write that would return != 1 row is rolled back
      const before = await count();
      expectError(await d.rest('POST', 'tasks', { body: [{ title: 'a' }, { title: 'b' }], headers: accept }), 406, 'not_single');
      expectError(await d.rest('PATCH', 'tasks?priority=gt.1', { body: { score: 9 }, headers: accept }), 406, 'not_single');
      assert.equal(await count(), before);
      assert.equal((await d.rest('GET', 'tasks?score=eq.9')).body.length, 0);
    });

    test('bulk insert is all-or-nothing', async () => {
      const before = await count();
      const res = await d.rest('POST', 'tasks', { body: [{ title: 'ok 1' }, { title: 'bad', priority: 'high' }, { title: 'ok 2' }] });
      const err = expectError(res, 422, 'invalid_value');
      assert.equal(err.details.column, 'priority');
      expectError(await d.rest('POST', 'tasks', { body: [{ title: 'dup', tag: 'spec' }] }), 409, 'unique_violation');
      expectError(await d.rest('POST', 'tasks', { body: [{ title: 'x', tag: 'same' }, { title: 'y', tag: 'same' }] }), 409, 'unique_violation');
      assert.equal(await count(), before);
      const mixed = await d.rest('POST', 'tasks', { body: [{ title: 'k1', priority: 7 }, { title: 'k2' }] });
      assert.equal(mixed.status, 201);
      assert.equal(mixed.body[1].priority, null, 'a key missing from one row of a bulk insert is NULL');
      assert.equal(mixed.body[1].done, false, 'a column sent in no row takes its default');
      const missingDefault = await d.rest('POST', 'tasks', { body: [{ title: 'k3', priority: 7 }, { title: 'k4' }], headers: { prefer: 'missing=default' } });
      assert.equal(missingDefault.status, 201);
      assert.equal(missingDefault.headers['preference-applied'], 'missing=default');
      await d.rest('DELETE', 'tasks?title=in.(k1,k2,k3,k4)');
    });
  },
);

await describeEngines(
  'rest passthrough page cap',
  (ctx) => {
    test('a page never exceeds MAX_ROWS whatever the client asks', async () => {
      const d = await dataPlane(ctx());
      await d.createTable('items', [{ name: 'n', type: 'integer' }]);
      await d.rest('POST', 'items', { body: [1, 2, 3, 4, 5].map((n) => ({ n })) });
      for (const qs of ['', '?limit=999999999999', '?limit=5']) {
        const res = await d.rest('GET', `items${qs}`, { headers: { prefer: 'count=exact' } });
        assert.equal(res.status, 200);
        assert.equal(res.body.length, 3);
        assert.equal(res.headers['content-range'], '0-2/5');
      }
      const ranged = await d.rest('GET', 'items', { headers: { range: '0-99' } });
      assert.equal(ranged.body.length, 3);
    });
  },
  { MAX_ROWS: '3' },
);
