// POST /projects/{id}/tables/{table_id}/rls-policies/validate: the console's live check of a policy
// expression, with create's validator and 422, storing nothing; on every engine.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, registerAccount, createProject, type TestApp } from '../support/app.ts';

await describeEngines('policy expression validation', (ctx) => {
  let t: TestApp;
  let owner: string;
  let pid: string;
  let tableId: string;
  let url: string;

  before(async () => {
    t = ctx();
    owner = (await registerAccount(t)).token;
    pid = (await createProject(t, owner)).id;
    const table = await t.req('POST', `/projects/${pid}/tables`, { token: owner, body: { name: 'docs', columns: [{ name: 'owner_id', type: 'integer' }, { name: 'meta', type: 'json' }] } });
    tableId = table.body.id;
    url = `/projects/${pid}/tables/${tableId}/rls-policies/validate`;
  });

  test('a valid expression answers 200 { valid: true } and stores nothing', async () => {
    const res = await t.req('POST', url, { token: owner, body: { expression: 'owner_id = $auth.id OR $auth.role = \'admin\'' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { valid: true });
    assert.deepEqual((await t.req('GET', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: owner })).body, []);
  });

  const invalid: [string, string, string, number][] = [
    ['an unknown placeholder', 'owner_id = $auth.foo', '$auth.foo', 11],
    ['an unknown column', 'owner = $auth.id', 'owner', 0],
    ['a subquery keyword', 'owner_id IN (SELECT 1)', 'SELECT', 13],
    ['a type mismatch', 'meta = 5', 'meta = 5', 0],
    ['an empty expression', '', '', 0],
  ];
  for (const [what, expression, offending, position] of invalid) {
    test(`${what} is 422 invalid_expression naming the offending part and its position, as create says`, async () => {
      const body = expectError(await t.req('POST', url, { token: owner, body: { expression } }), 422, 'invalid_expression');
      assert.equal(body.details.offending, offending);
      assert.equal(body.details.position, position);
      const created = expectError(await t.req('POST', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: owner, body: { name: 'p', operation: 'ALL', expression } }), 422, 'invalid_expression');
      assert.deepEqual(created.details, body.details);
    });
  }

  test('bad bodies are 422 and change nothing', async () => {
    expectError(await t.req('POST', url, { token: owner, body: {} }), 422);
    expectError(await t.req('POST', url, { token: owner, body: { expression: 5 } }), 422);
    expectError(await t.req('POST', url, { token: owner, body: { expression: 'true', operation: 'ALL' } }), 422, 'unknown_field');
    expectError(await t.req('POST', url, { token: owner, rawBody: '{"expression":' }), 400, 'invalid_json');
    assert.deepEqual((await t.req('GET', `/projects/${pid}/tables/${tableId}/rls-policies`, { token: owner })).body, []);
  });

  test('needs the owner: no token 401, another owner 404, unknown table 404', async () => {
    expectError(await t.req('POST', url, { body: { expression: 'true' } }), 401);
    const other = (await registerAccount(t)).token;
    expectError(await t.req('POST', url, { token: other, body: { expression: 'true' } }), 404);
    expectError(await t.req('POST', `/projects/${pid}/tables/${'a'.repeat(16)}/rls-policies/validate`, { token: owner, body: { expression: 'true' } }), 404);
  });
});
