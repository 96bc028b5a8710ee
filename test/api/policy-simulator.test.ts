// The policy simulator, POST /projects/{id}/tables/{table_id}/simulate (issue [G]): per row and
// stage, which policies matched (TRUE, FALSE or NULL) and why a row is allowed, hidden or refused,
// exactly as the passthrough decides; bad input answered with a flat 4xx; and nothing ever written
// (rows, id generators, keys, users, the schema version). On every engine. The differential test
// against the passthrough over random tables and policies is policy-simulator-property.test.ts.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, registerAccount, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';

interface SimRow {
  id: number;
  exists: boolean;
  row: Record<string, unknown> | null;
  after?: Record<string, unknown>;
  allowed: boolean;
  stages: Record<string, { open: boolean; passed: boolean; results: Record<string, boolean | null> }>;
  reason: string;
}

await describeEngines('policy simulator', (ctx, kind) => {
  let t: TestApp;
  let d: DataPlane;
  let docs: { id: string };
  let alice: EndUserFixture;
  let bob: EndUserFixture;
  const policy: Record<string, string> = {};
  const simulate = (body: unknown, opts: { table?: string; token?: string; pid?: string } = {}) =>
    t.req('POST', `/projects/${opts.pid ?? d.pid}/tables/${opts.table ?? docs.id}/simulate`, { token: opts.token ?? d.owner, body });
  const rowsOf = async (body: unknown): Promise<SimRow[]> => {
    const res = await simulate(body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.rows;
  };
  const visibleTo = async (user?: EndUserFixture) => (await d.rest('GET', 'docs?select=id', { user: user?.token })).body.map((r: { id: number }) => r.id);
  const allowedIds = (rows: SimRow[]) => rows.filter((r) => r.allowed).map((r) => r.id);

  /** Everything a simulation could touch: the rows, the id generator, keys, users, sessions, the schema version. */
  const snapshot = async () => {
    const db = await t.engine.project(d.pid);
    const read = (sql: string, params: (string | number)[] = []) => db.all(sql, params);
    const generator = kind === 'sqlite' ? `SELECT * FROM sqlite_sequence` : `SELECT last_value, is_called FROM ${(await db.get<{ s: string }>(`SELECT pg_get_serial_sequence(?, 'id') AS s`, [db.t('docs')]))!.s}`;
    return {
      rows: await read(`SELECT * FROM ${db.t('docs')} ORDER BY id`),
      generator: await read(generator),
      keys: await read(`SELECT id, last_used_at FROM ${db.t('_bp_keys')} ORDER BY id`),
      users: await read(`SELECT * FROM ${db.t('_bp_users')} ORDER BY id`),
      sessions: await read(`SELECT token_hash, expires_at FROM ${db.t('_bp_user_sessions')} ORDER BY token_hash`),
      version: await read(`SELECT version FROM ${db.t('_bp_meta')}`),
    };
  };

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    alice = await d.endUser();
    bob = await d.endUser();
    docs = await d.createTable('docs', [
      { name: 'title', type: 'text' },
      { name: 'n', type: 'integer' },
      { name: 'created_by', type: 'integer', default: '$auth.id' },
      { name: 'public', type: 'boolean', default: false },
      { name: 'legacy', type: 'integer' },
    ]);
    const rows = [
      { title: 'a1', n: 1, created_by: alice.id, public: false },
      { title: 'a2', n: 2, created_by: alice.id, public: true },
      { title: 'b1', n: 3, created_by: bob.id, public: false },
      { title: 'nobody', n: 4, created_by: null, public: false },
      { title: 'b2', n: 5, created_by: bob.id, public: true },
    ];
    assert.equal((await t.req('POST', `/projects/${d.pid}/tables/${docs.id}/rows`, { token: d.owner, body: rows })).status, 201);
    const add = async (key: string, operation: string, expression: string, extra: Record<string, unknown> = {}) => {
      const res = await d.policy(docs.id, operation, expression, { name: key, ...extra });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      policy[key] = res.body.policy_id;
    };
    await add('own or public', 'SELECT', 'created_by = $auth.id OR public');
    await add('broken', 'SELECT', 'legacy = 1');
    await add('insert own', 'INSERT', 'created_by = $auth.id');
    await add('update own', 'UPDATE', 'created_by = $auth.id');
    await add('admins delete', 'DELETE', "$auth.role = 'admin'");
    await add('off', 'ALL', 'n > 100', { enabled: false });
    // the column goes: 'broken' no longer validates and matches no rows
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/tables/${docs.id}`, { token: d.owner, body: { drop_columns: ['legacy'] } })).status, 200);
  });

  test('SELECT: the answer names the caller and every policy; allowed rows are exactly those the passthrough returns', async () => {
    const res = await simulate({ as: `end_user:${alice.id}`, operation: 'select' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.operation, 'SELECT');
    assert.equal(res.body.as, `end_user:${alice.id}`);
    assert.deepEqual(res.body.auth, { id: alice.id, email: alice.email, role: null, email_verified: false });
    assert.deepEqual(res.body.stages, ['select']);
    const byName = Object.fromEntries(res.body.policies.map((p: { name: string }) => [p.name, p]));
    assert.deepEqual(Object.keys(byName), ['own or public', 'broken', 'insert own', 'update own', 'admins delete', 'off']);
    assert.deepEqual(byName['own or public'].stages, ['select']);
    assert.deepEqual(byName['insert own'].stages, [], 'another operation');
    assert.deepEqual(byName.off.stages, [], 'disabled');
    assert.equal(byName.off.enabled, false);
    assert.equal(byName.broken.valid, false);
    assert.equal(byName.broken.error.code, 'invalid_expression');
    assert.equal(byName.broken.error.details.offending, 'legacy');
    assert.equal(byName['own or public'].valid, true);
    assert.equal(byName['own or public'].error, null);
    for (const user of [undefined, alice, bob]) {
      const rows = await rowsOf({ as: user ? `end_user:${user.id}` : 'anonymous', operation: 'SELECT' });
      assert.deepEqual(rows.map((r) => r.id), [1, 2, 3, 4, 5]);
      assert.deepEqual(allowedIds(rows), await visibleTo(user), `as ${user?.email ?? 'anonymous'}`);
    }
  });

  test('NULL is reported apart from FALSE, with the reason naming the stage and the policies', async () => {
    const [a1, a2, b1] = await rowsOf({ as: 'anonymous', operation: 'SELECT', row_ids: [1, 2, 3] });
    assert.deepEqual(a1!.stages.select, { open: false, passed: false, results: { [policy['own or public']!]: null, [policy.broken!]: false } });
    assert.equal(a1!.reason, "Hidden: no SELECT policy matched: 'own or public' was NULL (anonymous caller: $auth.* is NULL), 'broken' no longer validates, so it matches no row.");
    assert.deepEqual(a2!.stages.select!.results, { [policy['own or public']!]: true, [policy.broken!]: false });
    assert.equal(a2!.reason, "Visible: SELECT policy 'own or public' matched.");
    const [asBob] = await rowsOf({ as: `end_user:${bob.id}`, operation: 'SELECT', row_ids: [1] });
    assert.equal(asBob!.stages.select!.results[policy['own or public']!], false, 'an end user: FALSE, not NULL');
    assert.match(asBob!.reason, /^Hidden: no SELECT policy matched: 'own or public' was false, /);
    assert.equal(b1!.allowed, false);
  });

  test('filter and limit pick the first rows by id of a kind; row_ids keep their order and report missing rows', async () => {
    const as = `end_user:${bob.id}`;
    const visible = await visibleTo(bob);
    assert.deepEqual((await rowsOf({ as, operation: 'SELECT', filter: 'visible' })).map((r) => r.id), visible);
    assert.deepEqual((await rowsOf({ as, operation: 'SELECT', filter: 'visible', limit: 1 })).map((r) => r.id), visible.slice(0, 1));
    const hidden = await rowsOf({ as, operation: 'SELECT', filter: 'hidden' });
    assert.deepEqual(hidden.map((r) => r.id), [1, 2, 3, 4, 5].filter((id) => !visible.includes(id)));
    assert.ok(hidden.every((r) => !r.allowed));
    assert.deepEqual((await rowsOf({ as, operation: 'SELECT', filter: 'all', limit: 2 })).map((r) => r.id), [1, 2]);
    assert.deepEqual(await rowsOf({ as, operation: 'SELECT', row_ids: [] }), []);
    assert.deepEqual((await rowsOf({ as, operation: 'SELECT', row_ids: [3, 1, 2] })).map((r) => r.id), [3, 1, 2]);
    const picked = await rowsOf({ as, operation: 'SELECT', row_ids: [5, 999, 1, 5] });
    assert.deepEqual(picked.map((r) => [r.id, r.exists]), [[5, true], [999, false], [1, true]]);
    assert.deepEqual(picked[1], { id: 999, exists: false, row: null, allowed: false, stages: {}, reason: 'No row with id 999 exists.' });
    assert.deepEqual(picked[0]!.row, { id: 5, title: 'b2', n: 5, created_by: bob.id, public: true });
  });

  test('UPDATE: SELECT and UPDATE policies choose the rows, the UPDATE policies check the row after the patch', async () => {
    const as = `end_user:${alice.id}`;
    const res = await simulate({ as, operation: 'Update', values: { title: 'edited' } });
    assert.deepEqual(res.body.stages, ['select', 'update', 'check']);
    const rows: SimRow[] = res.body.rows;
    assert.deepEqual(allowedIds(rows), [1, 2]);
    assert.deepEqual(rows[0]!.after, { ...rows[0]!.row, title: 'edited' });
    assert.equal(rows[0]!.reason, "Allowed: SELECT policy 'own or public' matched; UPDATE policy 'update own' matched; UPDATE policy 'update own' matched the row after the update.");
    assert.match(rows[4]!.reason, /^Not touched: no UPDATE policy matched the row: 'update own' was false \(the passthrough answers 404/);
    const forged = await rowsOf({ as, operation: 'UPDATE', values: { created_by: bob.id }, row_ids: [1] });
    assert.equal(forged[0]!.allowed, false);
    assert.deepEqual(forged[0]!.stages.check!.results, { [policy['update own']!]: false });
    assert.match(forged[0]!.reason, /^Refused with 403 rls_violation: no UPDATE policy matched the row after the update/);
    // the passthrough agrees: 403 for the forged patch, 404 for a row the caller may not update
    expectError(await d.rest('PATCH', 'docs/1', { user: alice.token, body: { created_by: bob.id } }), 403, 'rls_violation');
    expectError(await d.rest('PATCH', 'docs/5', { user: alice.token, body: { title: 'edited' } }), 404, 'not_found');
    const unchanged = await rowsOf({ as, operation: 'UPDATE', row_ids: [1] });
    assert.deepEqual(unchanged[0]!.after, unchanged[0]!.row, 'without values the check reads the row as it is');
  });

  test('DELETE reads the role now: a role change shows at once', async () => {
    const as = `end_user:${bob.id}`;
    assert.deepEqual(allowedIds(await rowsOf({ as, operation: 'DELETE' })), []);
    const role = await t.req('PATCH', `/projects/${d.pid}/end-users/${bob.id}`, { token: d.owner, body: { role: 'admin' } });
    assert.equal(role.status, 200);
    const rows = await rowsOf({ as, operation: 'delete' });
    assert.deepEqual(allowedIds(rows), await visibleTo(bob), 'admins delete what they can see');
    assert.match(rows[0]!.reason, /^Not touched: the caller cannot see the row, no SELECT policy matched: 'own or public' was false/);
    await t.req('PATCH', `/projects/${d.pid}/end-users/${bob.id}`, { token: d.owner, body: { role: null } });
  });

  test('INSERT: the candidate as it would be stored (defaults, $auth.*, the next id), checked by the INSERT policies', async () => {
    const res = await simulate({ as: `end_user:${alice.id}`, operation: 'insert', values: { title: 'new' } });
    assert.deepEqual(res.body.stages, ['check']);
    const [row] = res.body.rows as SimRow[];
    assert.equal(row!.exists, false);
    assert.deepEqual(row!.row, { id: row!.id, title: 'new', n: null, created_by: alice.id, public: false });
    assert.equal(row!.allowed, true);
    assert.equal(row!.reason, "Allowed: INSERT policy 'insert own' matched the new row.");
    const [anon] = await rowsOf({ as: 'anonymous', operation: 'INSERT', values: { title: 'new' } });
    assert.equal(anon!.stages.check!.results[policy['insert own']!], null);
    assert.match(anon!.reason, /^Refused with 403 rls_violation: no INSERT policy matched the new row: 'insert own' was NULL \(anonymous caller/);
    const [explicit] = await rowsOf({ as: `end_user:${alice.id}`, operation: 'INSERT', values: { id: 77, title: 'x', created_by: bob.id } });
    assert.deepEqual([explicit!.id, explicit!.allowed], [77, false]);
    // the real insert gets the id the simulation announced: nothing advanced the generator
    const real = await d.rest('POST', 'docs', { user: alice.token, body: { title: 'new' } });
    assert.equal(real.status, 201);
    assert.equal(real.body[0].id, row!.id);
    await t.req('DELETE', `/projects/${d.pid}/tables/${docs.id}/rows/${row!.id}`, { token: d.owner });
  });

  test('a stage whose policies are all disabled is open', async () => {
    const open = await d.createTable('open', [{ name: 'x', type: 'integer' }]);
    assert.equal((await d.policy(open.id, 'SELECT', 'x > 0', { enabled: false })).status, 201);
    await t.req('POST', `/projects/${d.pid}/tables/${open.id}/rows`, { token: d.owner, body: { x: -1 } });
    const res = await simulate({ as: 'anonymous', operation: 'SELECT' }, { table: open.id });
    assert.deepEqual(res.body.rows[0].stages.select, { open: true, passed: true, results: {} });
    assert.equal(res.body.rows[0].reason, 'Visible: no SELECT policy is enabled.');
  });

  test('a table without columns: the candidate is its id alone, a patch-less UPDATE checks the row as it is', async () => {
    const bare = await d.createTable('bare', []);
    assert.equal((await d.policy(bare.id, 'ALL', 'id > 1')).status, 201);
    await t.req('POST', `/projects/${d.pid}/tables/${bare.id}/rows`, { token: d.owner, body: [{}, {}] });
    const [candidate] = (await simulate({ as: 'anonymous', operation: 'INSERT', values: {} }, { table: bare.id })).body.rows;
    assert.deepEqual([candidate.row, candidate.allowed], [{ id: 3 }, true]);
    const rows: SimRow[] = (await simulate({ as: 'anonymous', operation: 'UPDATE' }, { table: bare.id })).body.rows;
    assert.deepEqual(rows.map((r) => [r.id, r.allowed, r.after]), [[1, false, { id: 1 }], [2, true, { id: 2 }]]);
  });

  test('nothing is ever written: rows, the id generator, keys, users and the schema version stay as they were', async () => {
    const before = await snapshot();
    const callers = ['anonymous', `end_user:${alice.id}`, `end_user:${bob.id}`];
    for (const as of callers) {
      for (const body of [
        { operation: 'SELECT' },
        { operation: 'SELECT', filter: 'hidden', limit: 100 },
        { operation: 'UPDATE', values: { title: 'changed', created_by: bob.id } },
        { operation: 'DELETE', row_ids: [1, 2, 3, 4, 5, 6] },
        { operation: 'INSERT', values: { title: 'candidate' } },
        { operation: 'INSERT', values: { id: 4000, title: 'explicit id' } },
      ]) {
        assert.equal((await simulate({ as, ...body })).status, 200);
      }
    }
    assert.deepEqual(await snapshot(), before);
  });

  test('bad input is a flat 4xx that changes nothing', async () => {
    const before = await snapshot();
    const as = `end_user:${alice.id}`;
    const cases: [unknown, number, string, string?][] = [
      [{ operation: 'SELECT' }, 422, 'validation_failed', 'as'],
      [{ as }, 422, 'validation_failed', 'operation'],
      [{ as: 'owner', operation: 'SELECT' }, 422, 'validation_failed', 'as'],
      [{ as: 'admin', operation: 'SELECT' }, 422, 'validation_failed', 'as'],
      [{ as: 'end_user:0', operation: 'SELECT' }, 422, 'validation_failed', 'as'],
      [{ as: 'end_user:99999', operation: 'SELECT' }, 404, 'not_found'],
      [{ as, operation: 'MERGE' }, 422, 'validation_failed', 'operation'],
      [{ as, operation: 'SELECT', colour: 'red' }, 422, 'unknown_field', 'colour'],
      [{ as, operation: 'SELECT', row_ids: Array.from({ length: 101 }, (_, i) => i + 1) }, 422, 'validation_failed', 'row_ids'],
      [{ as, operation: 'SELECT', row_ids: [1.5] }, 422, 'validation_failed', 'row_ids[0]'],
      [{ as, operation: 'SELECT', row_ids: [0] }, 422, 'validation_failed', 'row_ids[0]'],
      [{ as, operation: 'SELECT', row_ids: [1], filter: 'visible' }, 422, 'validation_failed', 'filter'],
      [{ as, operation: 'SELECT', filter: 'seen' }, 422, 'validation_failed', 'filter'],
      [{ as, operation: 'SELECT', limit: 0 }, 422, 'validation_failed', 'limit'],
      [{ as, operation: 'SELECT', limit: 101 }, 422, 'validation_failed', 'limit'],
      [{ as, operation: 'SELECT', values: { title: 'x' } }, 422, 'validation_failed', 'values'],
      [{ as, operation: 'DELETE', values: { title: 'x' } }, 422, 'validation_failed', 'values'],
      [{ as, operation: 'INSERT' }, 422, 'validation_failed', 'values'],
      [{ as, operation: 'INSERT', values: { title: 'x' }, row_ids: [1] }, 422, 'validation_failed', 'row_ids'],
      [{ as, operation: 'INSERT', values: { title: 'x' }, limit: 5 }, 422, 'validation_failed', 'limit'],
      [{ as, operation: 'INSERT', values: [{ title: 'x' }] }, 422, 'validation_failed', 'values'],
      [{ as, operation: 'INSERT', values: { colour: 'red' } }, 400, 'unknown_column'],
      [{ as, operation: 'INSERT', values: { n: 'five' } }, 422, 'invalid_value'],
      [{ as, operation: 'INSERT', values: { id: 2 ** 53 } }, 422, 'invalid_value'],
      [{ as, operation: 'UPDATE', values: { id: 3 } }, 422, 'read_only_column'],
      [{ as, operation: 'UPDATE', values: { public: 'yes' } }, 422, 'invalid_value'],
      ['not an object', 422, 'validation_failed'],
    ];
    for (const [body, status, code, field] of cases) {
      const err = expectError(await simulate(body), status, code);
      if (field !== undefined) assert.equal(err.details.field, field, JSON.stringify(body));
    }
    expectError(await t.req('POST', `/projects/${d.pid}/tables/${docs.id}/simulate`, { token: d.owner, rawBody: '{"as":' }), 400, 'invalid_json');
    // `allowed` is a list, as everywhere else (README, Request bodies)
    assert.deepEqual(expectError(await simulate({ as, operation: 'ALL' }), 422, 'validation_failed').details.allowed, ['SELECT', 'INSERT', 'UPDATE', 'DELETE']);
    assert.deepEqual(await snapshot(), before);
  });

  test('policies that together bind more values than the engine accepts: 400 query_too_complex, never a 500', async () => {
    // each policy binds 1,990 literals (4,000 characters); the simulator binds each several times
    // (every stage it takes part in, twice per truth), the passthrough's PATCH four times
    const weighty = await d.createTable('weighty', [{ name: 'n', type: 'integer' }]);
    const base = `/projects/${d.pid}/tables/${weighty.id}`;
    assert.equal((await t.req('POST', `${base}/rows`, { token: d.owner, body: [{ n: 1 }, { n: 2 }] })).status, 201);
    const expression = `n IN (${Array(1990).fill('1').join(',')})`;
    for (let i = 0; i < 9; i++) assert.equal((await d.policy(weighty.id, 'ALL', expression)).status, 201);
    const err = expectError(await simulate({ as: 'anonymous', operation: 'UPDATE', filter: 'visible', values: { n: 1 } }, { table: weighty.id }), 400, 'query_too_complex');
    assert.equal(err.details.reason, 'too_many_bound_values');
    expectError(await d.rest('PATCH', 'weighty?n=eq.1', { body: { n: 1 } }), 400, 'query_too_complex');
    assert.deepEqual((await t.req('GET', `${base}/rows?select=n&order=id`, { token: d.owner })).body, [{ n: 1 }, { n: 2 }], 'unchanged, and the store still answers');
  });

  test("another owner's project, another project's table or end user reach nothing", async () => {
    const stranger = await registerAccount(t);
    const other = await dataPlane(t);
    const theirTable = await other.createTable('docs', [{ name: 'title', type: 'text' }]);
    for (let i = 0; i < 3; i++) await other.endUser();
    const theirs = (await other.endUser()).id;
    assert.ok(theirs > bob.id);
    const body = { as: 'anonymous', operation: 'SELECT' };
    expectError(await simulate(body, { token: stranger.token }), 404, 'not_found');
    expectError(await simulate(body, { table: theirTable.id }), 404, 'not_found');
    expectError(await simulate(body, { table: docs.id, pid: other.pid, token: other.owner }), 404, 'not_found');
    expectError(await simulate(body, { table: 'nosuchtable00000' }), 404, 'not_found');
    expectError(await simulate({ as: `end_user:${theirs}`, operation: 'SELECT' }), 404, 'not_found');
    expectError(await t.req('POST', `/projects/${d.pid}/tables/${docs.id}/simulate`, { body }), 401, 'missing_token');
  });
});

// The simulator's statements and the owner's row routes are bounded as the passthrough's are: a
// policy that makes every row expensive ends at the statement timeout (the embedded engine's
// deadline applies only to statements run through the project's gated store). Nothing is timed: a
// scan of every row under such a policy takes far longer than the timeout.
const ROWS = 8000;
const HEAVY_POLICY = Array.from({ length: 90 }, (_, i) => `body LIKE '%${'ab'.repeat(8)}${i}%'`).join(' OR ');

await describeEngines(
  'policy simulator and owner rows under the statement timeout',
  (ctx) => {
    let d: DataPlane;
    let heavy: { id: string };
    before(async () => {
      d = await dataPlane(ctx());
      heavy = await d.createTable('heavy', [{ name: 'body', type: 'text' }]);
      for (let start = 0; start < ROWS; start += 2000) {
        const rows = Array.from({ length: 2000 }, (_, i) => ({ body: `${start + i} `.padEnd(400, 'abcdefghij') }));
        assert.equal((await d.rest('POST', 'heavy', { body: rows, headers: { prefer: 'return=minimal' } })).status, 201);
      }
      assert.equal((await d.policy(heavy.id, 'SELECT', HEAVY_POLICY)).status, 201);
    });

    test("a scan for the visible rows under an expensive policy ends with 503 query_timeout, on the simulator and the owner's rows", async () => {
      const t = ctx();
      const base = `/projects/${d.pid}/tables/${heavy.id}`;
      expectError(await t.req('POST', `${base}/simulate`, { token: d.owner, body: { as: 'anonymous', operation: 'SELECT', filter: 'visible' } }), 503, 'query_timeout');
      expectError(await t.req('GET', `${base}/rows?as=anonymous`, { token: d.owner }), 503, 'query_timeout');
    });
  },
  { STATEMENT_TIMEOUT_MS: '300' },
);
