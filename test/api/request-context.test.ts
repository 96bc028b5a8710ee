// The request context the hooks resolve (ARCHITECTURE principle 14): the owned project of a route
// below /projects/:id and the data-plane caller are looked up once per request, and the checks
// keep their order (credential, then body, then project).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';

/** Counts the calls of `obj[name]` while `run` runs. */
async function counting<T extends object>(obj: T, name: keyof T, run: () => Promise<void>): Promise<number> {
  const original = obj[name] as (...args: unknown[]) => unknown;
  let calls = 0;
  (obj as Record<keyof T, unknown>)[name] = (...args: unknown[]) => {
    calls++;
    return original.apply(obj, args);
  };
  try {
    await run();
  } finally {
    delete (obj as Record<keyof T, unknown>)[name];
  }
  return calls;
}

await describeEngines('request context', (ctx) => {
  const MISSING = 'aaaaaaaaaaaaaaaa';

  test('a route below /projects/:id looks the project up once', async () => {
    const t: TestApp = ctx();
    const { token } = await registerAccount(t);
    const project = await createProject(t, token);
    const calls = [
      ['GET', `/projects/${project.id}`, undefined],
      ['GET', `/projects/${project.id}/tables`, undefined],
      ['POST', `/projects/${project.id}/keys`, { name: 'k', permissions: ['select'] }],
      ['GET', `/projects/${project.id}/auth/templates`, undefined],
    ] as const;
    for (const [method, url, body] of calls) {
      const n = await counting(t.services.projects, 'get', async () => {
        const res = await t.req(method, url, { token, body });
        assert.ok(res.status < 300, `${method} ${url}: ${res.status}`);
      });
      assert.equal(n, 1, `${method} ${url}`);
    }
  });

  test('credential, then body, then project: another owner\'s project is a 404 like a missing one', async () => {
    const t = ctx();
    const owner = await registerAccount(t);
    const other = await registerAccount(t);
    const project = await createProject(t, owner.token);
    const url = (id: string) => `/projects/${id}/tables`;
    const bad = { name: 't', columns: [], colour: 'red' };
    expectError(await t.req('POST', url(project.id), { body: bad }), 401, 'missing_token');
    expectError(await t.req('POST', url(project.id), { token: other.token, body: bad }), 422, 'unknown_field');
    const theirs = expectError(await t.req('POST', url(project.id), { token: other.token, body: { name: 't', columns: [] } }), 404, 'not_found');
    const missing = expectError(await t.req('POST', url(MISSING), { token: other.token, body: { name: 't', columns: [] } }), 404, 'not_found');
    assert.deepEqual(theirs, missing);
    assert.equal(theirs.message, 'No such project.');
  });

  test('the data-plane caller is resolved once per request, and 401s as before', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    await d.createTable('notes', [{ name: 'body', type: 'text' }]);
    for (const method of ['GET', 'HEAD', 'POST']) {
      const n = await counting(t.services.dataPlane, 'resolve', async () => {
        const res = await d.rest(method, 'notes', { body: method === 'POST' ? { body: 'x' } : undefined });
        assert.ok(res.status < 300, `${method}: ${res.status}`);
      });
      // HEAD and POST repeat GET's credentials: on PostgreSQL a guessed read, or a guessed insert of
      // one row (rest.ts), needs no resolving at all
      assert.equal(n, method !== 'GET' && t.config.guessedReads && t.engine.dialect.remote ? 0 : 1, method);
    }
    const none = await d.rest('GET', 'notes', { key: null });
    expectError(none, 401, 'missing_api_key');
    assert.equal(none.headers['www-authenticate'], 'Bearer');
    expectError(await d.rest('GET', 'notes', { key: 'f'.repeat(64) }), 401, 'invalid_api_key');
    const elsewhere = await t.req('GET', `/${MISSING}/rest/notes`, { headers: { authorization: `Bearer ${d.keys.all}` } });
    expectError(elsewhere, 401, 'invalid_api_key');
    // the body is parsed before the credential is checked, as before
    expectError(await d.rest('POST', 'notes', { key: null, rawBody: '{', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
  });
});
