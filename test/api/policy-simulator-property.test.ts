// The policy simulator against the passthrough, property-based (fast-check, the suite's fixed seed;
// FUZZ_SEED=random explores, SIM_FUZZ_RUNS sets the count): for random small tables, policies
// (enabled or not, some no longer valid) and callers (anonymous, end users with roles), the
// simulator's `allowed` is exactly what the passthrough does as that caller with an all-permission
// key: SELECT returns the row; DELETE and PATCH by id answer 204/200 rather than 404 (and a refused
// PATCH is 403 exactly when only the post-write check failed); POST answers 201 rather than 403,
// storing the candidate the simulator showed under the id it announced. Every write is undone
// through the owner's routes, so each case keeps its own data. On both engines.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeEngines, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';
import { configureFuzz } from '../support/fuzz.ts';

configureFuzz();
const RUNS = Number(process.env.SIM_FUZZ_RUNS ?? 12);

const EXPRESSIONS = [
  'a > 2',
  'a IS NULL',
  'a <= 1 OR c',
  'owner = $auth.id',
  'owner = $auth.id OR c',
  "b = 'x'",
  "b LIKE 'x%'",
  'NOT c',
  'c IS TRUE',
  "$auth.role = 'admin'",
  "$auth.role = 'admin' OR owner = $auth.id",
  'id > 2',
  'id % 2 = 0',
  'a + owner > 3',
  "$auth.email LIKE '%@example.com' AND a > 0",
  'COALESCE(a, 0) = 0',
  "b IN ('x', 'y')",
  'a BETWEEN 1 AND 4',
  '$auth.id IS NULL',
  'LENGTH(b) > 1',
];

/** Column values by the index of their owner among the case's users (null: none). */
const value = {
  a: fc.option(fc.integer({ min: -3, max: 6 }), { nil: null }),
  b: fc.option(fc.constantFrom('x', 'y', 'xy', '', 'X'), { nil: null }),
  c: fc.option(fc.boolean(), { nil: null }),
  owner: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }),
};
type Values = { a?: number | null; b?: string | null; c?: boolean | null; owner?: number | null };
const rowArb = fc.record(value);
const partialArb = fc.record(value, { requiredKeys: [] });
const caseArb = fc.record({
  rows: fc.array(rowArb, { maxLength: 5 }),
  policies: fc.array(
    fc.record({ operation: fc.constantFrom('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'ALL'), expression: fc.constantFrom(...EXPRESSIONS), enabled: fc.boolean() }),
    { maxLength: 4 },
  ),
  /** a policy on a column dropped afterwards: it no longer validates and matches no rows */
  broken: fc.option(fc.constantFrom('SELECT', 'INSERT', 'UPDATE', 'DELETE', 'ALL'), { nil: null }),
  patch: partialArb.filter((p) => Object.keys(p).length > 0),
  candidate: partialArb,
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

interface SimRow {
  id: number;
  row: Record<string, unknown>;
  allowed: boolean;
  stages: Record<string, { passed: boolean }>;
}

await describeEngines('policy simulator agrees with the passthrough (property)', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  let users: EndUserFixture[];
  let table = 0;

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    users = [await d.endUser(), await d.endUser(), await d.endUser()];
    for (const [i, role] of [[0, 'admin'], [2, 'editor']] as const) {
      assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${users[i]!.id}`, { token: d.owner, body: { role } })).status, 200);
    }
  });

  /** Owner index → end-user id, for stored values. */
  const stored = (v: Values) => ('owner' in v ? { ...v, owner: v.owner === null ? null : users[v.owner!]!.id } : { ...v });

  async function setUp(c: Case): Promise<{ id: string; name: string; base: string }> {
    const name = `t${++table}`;
    const columns = [{ name: 'a', type: 'integer' }, { name: 'b', type: 'text' }, { name: 'c', type: 'boolean' }, { name: 'owner', type: 'integer', default: '$auth.id' }];
    const created = await d.createTable(name, c.broken ? [...columns, { name: 'gone', type: 'integer' }] : columns);
    const base = `/projects/${d.pid}/tables/${created.id}`;
    if (c.rows.length) assert.equal((await t.req('POST', `${base}/rows`, { token: d.owner, body: c.rows.map(stored) })).status, 201);
    for (const p of c.policies) assert.equal((await d.policy(created.id, p.operation, p.expression, { enabled: p.enabled })).status, 201);
    if (c.broken) {
      assert.equal((await d.policy(created.id, c.broken, 'gone = 1')).status, 201);
      assert.equal((await t.req('PATCH', `/projects/${d.pid}/tables/${created.id}`, { token: d.owner, body: { drop_columns: ['gone'] } })).status, 200);
    }
    return { id: created.id, name, base };
  }

  const simulate = async (base: string, body: Record<string, unknown>): Promise<SimRow[]> => {
    const res = await t.req('POST', `${base}/simulate`, { token: d.owner, body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.rows;
  };
  const ownerRows = async (base: string) => (await t.req('GET', `${base}/rows?order=id`, { token: d.owner })).body as Record<string, unknown>[];
  /** Puts a row back as it was (an undone DELETE or PATCH), through the owner's routes. */
  const restore = async (base: string, row: Record<string, unknown>, deleted: boolean) => {
    const res = deleted
      ? await t.req('POST', `${base}/rows`, { token: d.owner, body: row })
      : await t.req('PUT', `${base}/rows/${row.id}`, { token: d.owner, body: { ...row, id: undefined } });
    assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
  };

  async function checkCaller(c: Case, tb: { name: string; base: string }, user: EndUserFixture | null): Promise<void> {
    const as = user ? `end_user:${user.id}` : 'anonymous';
    const rest = (method: string, path: string, body?: unknown) => d.rest(method, `${tb.name}${path}`, { user: user?.token, body, headers: { prefer: 'return=minimal' } });
    const label = `${as} on ${JSON.stringify(c)}`;
    const rows = await ownerRows(tb.base);
    const ids = rows.map((r) => r.id as number);

    const select = await simulate(tb.base, { as, operation: 'SELECT', limit: 100 });
    const seen = (await d.rest('GET', `${tb.name}?select=id`, { user: user?.token })).body.map((r: { id: number }) => r.id);
    assert.deepEqual(select.filter((r) => r.allowed).map((r) => r.id), seen, `SELECT ${label}`);
    assert.deepEqual((await simulate(tb.base, { as, operation: 'SELECT', filter: 'visible', limit: 100 })).map((r) => r.id), seen, `visible ${label}`);

    if (ids.length) {
      for (const r of await simulate(tb.base, { as, operation: 'DELETE', row_ids: ids })) {
        const res = await rest('DELETE', `/${r.id}`);
        assert.equal(res.status, r.allowed ? 204 : 404, `DELETE ${r.id} ${label}`);
        if (res.status === 204) await restore(tb.base, r.row, true);
      }
      const patch = stored(c.patch);
      for (const r of await simulate(tb.base, { as, operation: 'UPDATE', row_ids: ids, values: patch })) {
        const res = await rest('PATCH', `/${r.id}`, patch);
        const refusedByCheck = r.stages.select!.passed && r.stages.update!.passed && !r.allowed;
        assert.equal(res.status, r.allowed ? 204 : refusedByCheck ? 403 : 404, `PATCH ${r.id} ${JSON.stringify(patch)} ${label}`);
        if (res.status === 204) await restore(tb.base, r.row, false);
      }
    }

    const candidate = stored(c.candidate);
    const [insert] = await simulate(tb.base, { as, operation: 'INSERT', values: candidate });
    const res = await rest('POST', '', candidate);
    assert.equal(res.status, insert!.allowed ? 201 : 403, `INSERT ${JSON.stringify(candidate)} ${label}`);
    if (res.status === 201) {
      const got = await t.req('GET', `${tb.base}/rows/${insert!.id}`, { token: d.owner });
      assert.deepEqual(got.body, insert!.row, `the stored row is the candidate, under the announced id (${label})`);
      assert.equal((await t.req('DELETE', `${tb.base}/rows/${insert!.id}`, { token: d.owner })).status, 204);
    }
    assert.deepEqual(await ownerRows(tb.base), rows, `every write was undone (${label})`);
  }

  test('for random tables, policies and callers the simulator decides as the passthrough does', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const tb = await setUp(c);
        try {
          for (const user of [null, ...users]) await checkCaller(c, tb, user);
        } finally {
          // a failing case is shrunk through many more: each takes a table of its own and gives it back
          await t.req('DELETE', `/projects/${d.pid}/tables/${tb.id}`, { token: d.owner });
        }
      }),
      { numRuns: RUNS },
    );
  });
});
