// Row-level security through the passthrough (SPEC 4.4 evaluation rules, CONTRACT §4, §5) and the
// policies API, on every engine.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, registerAccount, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';
import { countStatements } from './rest-statements.ts';
import { COMPILED_FILTERS } from '../../src/services/policies.ts';

await describeEngines('row-level security', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  let table: { id: string };
  let alice: EndUserFixture;
  let bob: EndUserFixture;
  const titles = (res: { body: { title: string }[] }) => res.body.map((r) => r.title).sort();
  const all = async () => titles(await d.rest('GET', 'docs?order=id')); // valid only while no SELECT policy
  const rows = async () => (await (await t.engine.project(d.pid)).all<{ title: string; created_by: number | null }>(`SELECT title, created_by FROM ${(await t.engine.project(d.pid)).t('docs')} ORDER BY id`));

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    table = await d.createTable('docs', [
      { name: 'title', type: 'text' },
      { name: 'created_by', type: 'integer', default: '$auth.id' },
      { name: 'public', type: 'boolean', default: false },
      { name: 'team', type: 'text' },
    ]);
    alice = await d.endUser();
    bob = await d.endUser();
    assert.equal((await d.rest('POST', 'docs', { user: alice.token, body: [{ title: 'a1' }, { title: 'a2', public: true }] })).status, 201);
    assert.equal((await d.rest('POST', 'docs', { user: bob.token, body: { title: 'b1' } })).status, 201);
    assert.equal((await d.rest('POST', 'docs', { body: { title: 'anon' } })).status, 201);
  });

  test('no policies: the table is open to every caller', async () => {
    assert.deepEqual(await all(), ['a1', 'a2', 'anon', 'b1']);
  });

  test('SELECT policy filters rows per caller; anonymous gets only what NULL-safe rules allow', async () => {
    const p = await d.policy(table.id, 'select', 'created_by = $auth.id OR public = TRUE');
    assert.equal(p.status, 201, JSON.stringify(p.body));
    assert.equal(p.body.operation, 'SELECT');
    assert.equal(p.body.enabled, true);
    assert.deepEqual(titles(await d.rest('GET', 'docs', { user: alice.token })), ['a1', 'a2']);
    assert.deepEqual(titles(await d.rest('GET', 'docs', { user: bob.token })), ['a2', 'b1']);
    assert.deepEqual(titles(await d.rest('GET', 'docs')), ['a2']);
    assert.deepEqual(titles(await d.rest('GET', 'docs', { user: 'f'.repeat(64) })), ['a2'], 'an invalid token is anonymous');
    const count = await d.rest('GET', 'docs', { user: bob.token, headers: { prefer: 'count=exact' } });
    assert.equal(count.headers['content-range'], '0-1/2', 'count sees only visible rows');
    const a1 = (await d.rest('GET', 'docs?title=eq.a1', { user: alice.token })).body[0];
    expectError(await d.rest('GET', `docs/${a1.id}`, { user: bob.token }), 404, 'not_found');
    assert.equal((await d.rest('GET', `docs/${a1.id}`, { user: alice.token })).status, 200);
  });

  test('INSERT policy is a post-write check: violations roll back with 403, bulk all-or-nothing', async () => {
    assert.equal((await d.policy(table.id, 'INSERT', 'created_by = $auth.id')).status, 201);
    const before = await rows();
    expectError(await d.rest('POST', 'docs', { user: alice.token, body: { title: 'forged', created_by: bob.id } }), 403, 'rls_violation');
    expectError(await d.rest('POST', 'docs', { body: { title: 'anon2' } }), 403, 'rls_violation');
    expectError(
      await d.rest('POST', 'docs', { user: alice.token, body: [{ title: 'ok' }, { title: 'forged', created_by: bob.id }] }),
      403,
      'rls_violation',
    );
    // three and five rows: more than one statement each (a statement takes a power of two of them)
    for (const n of [3, 5]) {
      const body = [...Array.from({ length: n - 1 }, (_, i) => ({ title: `ok${i}`, created_by: alice.id })), { title: 'forged', created_by: bob.id }];
      expectError(await d.rest('POST', 'docs', { user: alice.token, body }), 403, 'rls_violation');
    }
    assert.deepEqual(await rows(), before, 'nothing written');
    const ok = await d.rest('POST', 'docs', { user: alice.token, body: { title: 'a3' } });
    assert.equal(ok.status, 201);
    assert.equal(ok.body[0].created_by, alice.id);
  });

  test('rows returned after a write pass the SELECT policies', async () => {
    // bob may insert a row for himself; SELECT lets him see it
    const mine = await d.rest('POST', 'docs', { user: bob.token, body: { title: 'b2' } });
    assert.equal(mine.body.length, 1);
    // a SELECT-only-public policy would hide it: use a second table to show the write still succeeds
    const t2 = await d.createTable('inbox', [{ name: 'msg', type: 'text' }, { name: 'to_user', type: 'integer' }]);
    assert.equal((await d.policy(t2.id, 'SELECT', 'to_user = $auth.id')).status, 201);
    const sent = await d.rest('POST', 'inbox', { user: alice.token, body: { msg: 'hi bob', to_user: bob.id } });
    assert.equal(sent.status, 201);
    assert.deepEqual(sent.body, [], 'alice cannot read what she wrote for bob');
    assert.equal((await d.rest('GET', 'inbox', { user: bob.token })).body[0].msg, 'hi bob');
  });

  test('a single object is a row the caller may see: a write whose row SELECT hides is 406 not_single and rolled back', async () => {
    const t3 = await d.createTable('outbox', [{ name: 'msg', type: 'text' }, { name: 'to_user', type: 'integer' }]);
    assert.equal((await d.policy(t3.id, 'SELECT', 'to_user = $auth.id')).status, 201);
    const object = { accept: 'application/vnd.pgrst.object+json' };
    const stored = async () => ((await t.req('GET', `/projects/${d.pid}/tables/${t3.id}/rows?as=owner`, { token: d.owner })).body as { msg: string; to_user: number }[]).map((r) => `${r.msg}:${r.to_user}`).sort();
    // the insert's own statement checks that its row is visible: one statement, no transaction
    let counter = countStatements(t);
    const hidden = expectError(await d.rest('POST', 'outbox', { user: alice.token, body: { msg: 'for bob', to_user: bob.id }, headers: object }), 406, 'not_single');
    assert.equal(hidden.details, 'The result contains 0 rows');
    const failed = counter.stop();
    assert.deepEqual([failed.statements, failed.transactions], [1, 0]);
    assert.deepEqual(await stored(), [], 'the insert failed and left nothing');
    counter = countStatements(t);
    const mine = await d.rest('POST', 'outbox', { user: alice.token, body: { msg: 'note', to_user: alice.id }, headers: object });
    assert.equal(mine.status, 201);
    assert.equal(mine.body.msg, 'note', 'a visible row comes back as the object');
    const passed = counter.stop();
    assert.deepEqual([passed.statements, passed.transactions], [1, 0]);
    const upsert = await d.rest('POST', 'outbox', { user: alice.token, body: { id: mine.body.id, msg: 'for bob', to_user: bob.id }, headers: { ...object, prefer: 'resolution=merge-duplicates' } });
    expectError(upsert, 406, 'not_single');
    assert.deepEqual(await stored(), [`note:${alice.id}`], 'a merge that hides its row is rolled back too');
    expectError(await d.rest('PATCH', 'outbox?msg=eq.note', { user: alice.token, body: { to_user: bob.id }, headers: object }), 406, 'not_single');
    assert.deepEqual(await stored(), [`note:${alice.id}`], 'the update that hid the row was rolled back');
    const minimal = await d.rest('POST', 'outbox', { user: alice.token, body: { msg: 'quiet', to_user: bob.id }, headers: { ...object, prefer: 'return=minimal' } });
    assert.equal(minimal.status, 201, 'return=minimal shows no row: nothing to check');
    assert.deepEqual(await stored(), [`note:${alice.id}`, `quiet:${bob.id}`]);
  });

  test('UPDATE policy: invisible rows are untouchable (404 per row, filtered on the collection); the result is re-checked', async () => {
    assert.equal((await d.policy(table.id, 'UPDATE', 'created_by = $auth.id')).status, 201);
    const b1 = (await d.rest('GET', 'docs?title=eq.b1', { user: bob.token })).body[0];
    expectError(await d.rest('PATCH', `docs/${b1.id}`, { user: alice.token, body: { title: 'hijacked' } }), 404, 'not_found');
    expectError(await d.rest('PUT', `docs/${b1.id}`, { user: alice.token, body: { title: 'hijacked' } }), 404, 'not_found');
    const coll = await d.rest('PATCH', 'docs?title=eq.b1', { user: alice.token, body: { title: 'hijacked' } });
    assert.equal(coll.status, 200);
    assert.deepEqual(coll.body, []);
    const a1 = (await d.rest('GET', 'docs?title=eq.a1', { user: alice.token })).body[0];
    const before = await rows();
    expectError(await d.rest('PATCH', `docs/${a1.id}`, { user: alice.token, body: { created_by: bob.id } }), 403, 'rls_violation');
    assert.deepEqual(await rows(), before, 'the update was rolled back');
    const ok = await d.rest('PATCH', `docs/${a1.id}`, { user: alice.token, body: { title: 'a1 edited' } });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.title, 'a1 edited');
  });

  test('DELETE policy reads the role at request time', async () => {
    assert.equal((await d.policy(table.id, 'DELETE', "created_by = $auth.id AND $auth.role = 'editor'")).status, 201);
    const a3 = (await d.rest('GET', 'docs?title=eq.a3', { user: alice.token })).body[0];
    expectError(await d.rest('DELETE', `docs/${a3.id}`, { user: alice.token }), 404, 'not_found');
    const noop = await d.rest('DELETE', 'docs?title=eq.a3', { user: alice.token, headers: { prefer: 'count=exact' } });
    assert.equal(noop.status, 204);
    assert.equal(noop.headers['content-range'], '*/0');
    const role = await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: 'editor' } });
    assert.equal(role.status, 200);
    assert.equal((await d.rest('DELETE', `docs/${a3.id}`, { user: alice.token })).status, 204, 'the existing token sees the new role');
    expectError(await d.rest('DELETE', `docs/${a3.id}`, { user: alice.token }), 404);
  });

  test('upsert passes both the INSERT and the UPDATE policies', async () => {
    const t3 = await d.createTable('profiles', [
      { name: 'handle', type: 'text', unique: true },
      { name: 'owner', type: 'integer', default: '$auth.id' },
    ]);
    assert.equal((await d.policy(t3.id, 'ALL', 'owner = $auth.id')).status, 201);
    const upsert = (user: string, body: unknown) =>
      d.rest('POST', 'profiles?on_conflict=handle', { user, body, headers: { prefer: 'resolution=merge-duplicates' } });
    assert.equal((await upsert(alice.token, { handle: 'alice' })).status, 201);
    expectError(await upsert(bob.token, { handle: 'alice', owner: bob.id }), 403, 'rls_violation');
    const res = await upsert(alice.token, [{ handle: 'alice' }, { handle: 'alice2' }]);
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.map((r: { handle: string }) => r.handle), ['alice', 'alice2']);
    expectError(await upsert(alice.token, { handle: 'alice', owner: bob.id }), 403, 'rls_violation');
  });

  test('an ALL policy counts for every operation; a disabled policy is ignored', async () => {
    const t4 = await d.createTable('notes4', [{ name: 'owner', type: 'integer', default: '$auth.id' }, { name: 'x', type: 'integer' }]);
    await d.rest('POST', 'notes4', { user: alice.token, body: { x: 1 } });
    await d.rest('POST', 'notes4', { user: bob.token, body: { x: 2 } });
    const p = await d.policy(t4.id, 'all', 'owner = $auth.id');
    assert.equal(p.body.operation, 'ALL');
    assert.deepEqual((await d.rest('GET', 'notes4', { user: alice.token })).body.map((r: { x: number }) => r.x), [1]);
    assert.deepEqual((await d.rest('PATCH', 'notes4?x=gt.0', { user: alice.token, body: { x: 10 } })).body.map((r: { x: number }) => r.x), [10]);
    expectError(await d.rest('POST', 'notes4', { user: alice.token, body: { owner: bob.id, x: 3 } }), 403, 'rls_violation');
    const off = await t.req('PATCH', `/projects/${d.pid}/tables/${t4.id}/rls-policies/${p.body.policy_id}`, { token: d.owner, body: { enabled: false } });
    assert.equal(off.status, 200);
    assert.equal(off.body.enabled, false);
    assert.deepEqual((await d.rest('GET', 'notes4?order=x', { user: alice.token })).body.map((r: { x: number }) => r.x), [2, 10], 'all policies disabled: open');
  });

  test('a stored policy that no longer validates matches no rows (never a 500) and is logged once', async () => {
    const t5 = await d.createTable('legacy', [{ name: 'owner', type: 'integer' }, { name: 'x', type: 'integer' }]);
    await d.rest('POST', 'legacy', { body: [{ owner: alice.id, x: 1 }, { owner: bob.id, x: 2 }] });
    assert.equal((await d.policy(t5.id, 'SELECT', 'owner = $auth.id')).status, 201);
    assert.equal((await d.rest('GET', 'legacy', { user: alice.token })).body.length, 1);
    const renamed = await t.req('PATCH', `/projects/${d.pid}/tables/${t5.id}`, { token: d.owner, body: { rename_columns: { owner: 'owner_id' } } });
    assert.equal(renamed.status, 200);
    for (let i = 0; i < 3; i++) {
      const res = await d.rest('GET', 'legacy', { user: alice.token });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, []);
    }
    const logged = t.warnings.filter((w) => String(w.msg).includes('no longer validates') && w.table === 'legacy');
    assert.equal(logged.length, 1);
    // and writes under such a policy are refused rather than let through
    assert.equal((await d.policy(t5.id, 'INSERT', 'owner_id = $auth.id')).status, 201);
  });

  test('row values that overflow a policy expression make it no match, never a 500', async () => {
    const t6 = await d.createTable('extremes', [{ name: 'i', type: 'integer' }, { name: 'n', type: 'number' }, { name: 'ts', type: 'timestamp' }]);
    await d.rest('POST', 'extremes', { body: [{ i: 2 ** 53 - 1, n: 1e300, ts: '2024-01-01T00:00:00Z' }, { i: 2, n: 2, ts: '2024-01-01T00:00:00Z' }] });
    for (const expr of ['i * i > 0', 'n * n > 0', 'DATE_ADD(ts, INTERVAL i DAY) > NOW()', 'i + 9223372036854775000 > 0']) {
      const p = await d.policy(t6.id, 'SELECT', expr);
      assert.equal(p.status, 201, JSON.stringify(p.body));
      const res = await d.rest('GET', 'extremes?select=i&order=i');
      assert.equal(res.status, 200, `${expr}: ${JSON.stringify(res.body)}`);
      assert.ok(!res.body.some((r: { i: number }) => r.i === 2 ** 53 - 1), `${expr}: the overflowing row does not match`);
      await t.req('DELETE', `/projects/${d.pid}/tables/${t6.id}/rls-policies/${p.body.policy_id}`, { token: d.owner });
    }
  });

  test('a policy that reads the clock is applied at the time of each request, to a caller seen before too; one that does not stays per caller', async () => {
    const timed = await d.createTable('timed', [{ name: 'label', type: 'text' }, { name: 'until', type: 'timestamp' }, { name: 'day', type: 'date' }, { name: 'owner', type: 'integer', default: '$auth.id' }]);
    const now = t.clock.now();
    const today = now.toISOString().slice(0, 10);
    const body = [{ label: 'soon', until: new Date(now.getTime() + 60_000).toISOString(), day: today }];
    assert.equal((await d.rest('POST', 'timed', { user: alice.token, body })).status, 201);
    const labels = async (user: EndUserFixture) => (await d.rest('GET', 'timed?select=label', { user: user.token })).body.map((r: { label: string }) => r.label);
    for (const expression of ['until > NOW() AND owner = $auth.id', 'day >= CURDATE() AND owner = $auth.id']) {
      const p = await d.policy(timed.id, 'SELECT', expression);
      assert.equal(p.status, 201, JSON.stringify(p.body));
      try {
        for (let i = 0; i < 3; i++) assert.deepEqual(await labels(alice), ['soon'], `${expression}: before`);
        assert.deepEqual(await labels(bob), [], `${expression}: another caller`);
        t.clock.advance(2 * 24 * 3600_000);
        assert.deepEqual(await labels(alice), [], `${expression}: once the time has passed`);
        t.clock.advance(-2 * 24 * 3600_000);
        assert.deepEqual(await labels(alice), ['soon'], `${expression}: the clock set back`);
        assert.deepEqual(await labels(bob), [], `${expression}: another caller again`);
      } finally {
        await t.req('DELETE', `/projects/${d.pid}/tables/${timed.id}/rls-policies/${p.body.policy_id}`, { token: d.owner });
      }
    }
  });

  test('compiled filters are kept per caller up to a bound shared by all projects; a caller with other auth values gets its own', async () => {
    const bounded = await d.createTable('bounded', [{ name: 'owner', type: 'integer' }]);
    assert.equal((await d.policy(bounded.id, 'SELECT', 'owner = $auth.id')).status, 201);
    const store = await t.engine.project(d.pid);
    const table = (await t.services.tables.tableInfos(store)).find((x) => x.name === 'bounded')!;
    const rows = (await t.services.policies.enabledByTable(store)).get(table.id)!;
    const auth = (id: number, role: string | null = null) => ({ id, email: `u${id}@example.com`, role, email_verified: false });
    const filter = (a: ReturnType<typeof auth>) => t.services.policies.rowFilters(rows, table, a)('SELECT')!;
    assert.deepEqual(filter(auth(7)).params, filter(auth(7)).params);
    assert.notDeepEqual(filter(auth(7)).params, filter(auth(8)).params, 'another user');
    assert.equal(filter(auth(7, 'admin')).params.length, filter(auth(7)).params.length);
    for (let id = 1; id <= COMPILED_FILTERS + 100; id++) filter(auth(id));
    assert.equal(t.services.policies.compiledFilters, COMPILED_FILTERS);
    assert.equal(Number(filter(auth(COMPILED_FILTERS + 100)).params[0]), COMPILED_FILTERS + 100);
  });

  test('policies API: list, patch, delete; 404 for unknown table, policy and another owner', async () => {
    const list = await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: d.owner });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((p: { operation: string }) => p.operation), ['SELECT', 'INSERT', 'UPDATE', 'DELETE']);
    for (const p of list.body) assert.deepEqual(Object.keys(p).sort(), ['created_at', 'enabled', 'expression', 'name', 'operation', 'policy_id']);
    const pid = list.body[0].policy_id;
    const patched = await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}/rls-policies/${pid}`, { token: d.owner, body: { name: 'readers', expression: 'public = TRUE' } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.expression, 'public = TRUE');
    assert.deepEqual(titles(await d.rest('GET', 'docs', { user: alice.token })), ['a2']);
    expectError(await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}/rls-policies/${pid}`, { token: d.owner, body: { expression: 'nope = 1' } }), 422, 'invalid_expression');
    expectError(await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}/rls-policies/${pid}`, { token: d.owner, body: { operation: 'ALL' } }), 422, 'unknown_field');
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/tables/${table.id}/rls-policies/${pid}`, { token: d.owner })).status, 204);
    expectError(await t.req('DELETE', `/projects/${d.pid}/tables/${table.id}/rls-policies/${pid}`, { token: d.owner }), 404);
    expectError(await t.req('GET', `/projects/${d.pid}/tables/aaaaaaaaaaaaaaaa/rls-policies`, { token: d.owner }), 404);
    expectError(await t.req('POST', `/projects/${d.pid}/tables/nope/rls-policies`, { token: d.owner, body: { name: 'x', operation: 'SELECT', expression: 'TRUE' } }), 404);
    const stranger = await registerAccount(t);
    for (const [m, body] of [['GET', undefined], ['POST', { name: 'x', operation: 'SELECT', expression: 'TRUE' }]] as const) {
      expectError(await t.req(m, `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: stranger.token, body }), 404);
    }
    expectError(await t.req('DELETE', `/projects/${d.pid}/tables/${table.id}/rls-policies/${list.body[1].policy_id}`, { token: stranger.token }), 404);
    expectError(await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rls-policies`), 401);
  });

  const rejected: [string, unknown, number, string, string?][] = [
    ['subquery', { expression: 'created_by IN (SELECT id FROM users)' }, 422, 'invalid_expression', 'SELECT'],
    ['other table', { expression: 'users.id = $auth.id' }, 422, 'invalid_expression', 'users.id'],
    ['unknown column', { expression: 'owner = $auth.id' }, 422, 'invalid_expression', 'owner'],
    ['@variable', { expression: 'created_by = @uid' }, 422, 'invalid_expression', '@uid'],
    ['comment', { expression: 'TRUE -- x' }, 422, 'invalid_expression', '--'],
    ['semicolon', { expression: 'TRUE; DROP TABLE docs' }, 422, 'invalid_expression', ';'],
    ['other function', { expression: 'SLEEP(5) = 0' }, 422, 'invalid_expression', 'SLEEP'],
    ['unknown placeholder', { expression: 'title = $auth.password' }, 422, 'invalid_expression', '$auth.password'],
    ['type mismatch', { expression: "public = 'yes please'" }, 422, 'invalid_expression'],
    ['oversize', { expression: `title = '${'x'.repeat(4100)}'` }, 422, 'invalid_expression'],
    ['too deep', { expression: `${'('.repeat(80)}TRUE${')'.repeat(80)}` }, 422, 'invalid_expression'],
    ['empty', { expression: '' }, 422, 'invalid_expression'],
    ['bad operation', { operation: 'MERGE' }, 422, 'validation_failed'],
    ['missing expression', { expression: undefined }, 422, 'validation_failed'],
    ['wrong type enabled', { enabled: 'yes' }, 422, 'validation_failed'],
    ['unknown field', { using: 'TRUE' }, 422, 'unknown_field'],
    ['empty name', { name: '' }, 422, 'validation_failed'],
  ];
  for (const [name, patch, status, code, offending] of rejected) {
    test(`policy create rejects ${name}`, async () => {
      const before = await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: d.owner });
      const body = { name: 'p', operation: 'SELECT', expression: 'TRUE', ...(patch as object) };
      const err = expectError(await t.req('POST', `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: d.owner, body }), status, code);
      if (offending) {
        assert.equal(err.details.offending, offending);
        assert.equal(typeof err.details.position, 'number');
      }
      const after = await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rls-policies`, { token: d.owner });
      assert.deepEqual(after.body, before.body);
    });
  }
});
