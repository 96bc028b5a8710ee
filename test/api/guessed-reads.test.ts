// A read by credentials seen before runs as one statement that assumes the caller they resolved to
// last time and checks it (services/data-plane.ts CallerGuess, services/rows/guarded-read.ts).
// Whatever changed since, the answer is the one the long way would give: each case reads once to be
// remembered, changes something, and reads again with the same credentials.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

async function notes(t: TestApp) {
  const d = await dataPlane(t);
  const table = await d.createTable('notes', [{ name: 'body', type: 'text' }, { name: 'owner', type: 'integer', default: '$auth.id' }]);
  const alice = await d.endUser();
  const bob = await d.endUser();
  for (const [u, body] of [[alice, 'a1'], [bob, 'b1'], [alice, 'a2']] as const)
    assert.equal((await d.rest('POST', 'notes', { user: u.token, body: { body } })).status, 201);
  return { d, table, alice, bob };
}

const bodies = (res: { body: any }) => res.body.map((r: { body: string }) => r.body);

/** The same read twice: the second is answered through the remembered caller. */
async function readTwice(d: DataPlane, path: string, opts: Parameters<DataPlane['rest']>[2]) {
  const first = await d.rest('GET', path, opts);
  const second = await d.rest('GET', path, opts);
  assert.deepEqual({ status: second.status, body: second.body }, { status: first.status, body: first.body });
  return second;
}

await describeEngines('guessed reads', (ctx) => {
  test('rows, order, paging, a single row and a single object come back as the long way gives them', async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    assert.equal((await d.policy(table.id, 'SELECT', 'owner = $auth.id')).status, 201);
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=body.desc', { user: alice.token })), ['a2', 'a1']);
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=id&limit=1&offset=1', { user: alice.token })), ['a2']);
    const [first] = (await d.rest('GET', 'notes?select=id&order=id', { user: alice.token })).body;
    assert.deepEqual((await readTwice(d, `notes/${first.id}?select=body`, { user: alice.token })).body, { body: 'a1' });
    const one = await readTwice(d, 'notes?select=b:body&body=eq.a2', { user: alice.token, headers: { accept: 'application/vnd.pgrst.object+json' } });
    assert.deepEqual(one.body, { b: 'a2' });
    assert.equal((await readTwice(d, 'notes?select=body&body=eq.zz', { user: alice.token })).body.length, 0);
    expectError(await readTwice(d, 'notes?select=body', { user: alice.token, headers: { accept: 'application/vnd.pgrst.object+json' } }), 406, 'not_single');
  });

  test('a key revoked since is refused, before its query is even judged', async () => {
    const t = ctx();
    const { d } = await notes(t);
    const k = await d.createKey(['select']);
    assert.equal((await readTwice(d, 'notes?select=body', { key: k.key })).status, 200);
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/keys/${k.key_id}`, { token: d.owner })).status, 204);
    expectError(await d.rest('GET', 'notes?select=body', { key: k.key }), 401, 'invalid_api_key');
    expectError(await d.rest('GET', 'notes?select=nope', { key: k.key }), 401, 'invalid_api_key');
    expectError(await d.rest('GET', 'nowhere', { key: k.key }), 401, 'invalid_api_key');
    expectError(await d.rest('GET', 'notes/1', { key: k.key }), 401, 'invalid_api_key');
  });

  test('a key that expired since is refused', async () => {
    const t = ctx();
    const { d } = await notes(t);
    const k = await d.createKey(['select'], { expires_at: new Date(t.clock.now().getTime() + 30_000).toISOString() });
    assert.equal((await readTwice(d, 'notes?select=body', { key: k.key })).status, 200);
    t.clock.advance(31_000);
    expectError(await d.rest('GET', 'notes?select=body', { key: k.key }), 401, 'invalid_api_key');
  });

  test('a role granted, a logout and a deleted end user act on the next read', async () => {
    const t = ctx();
    const { d, table, alice, bob } = await notes(t);
    assert.equal((await d.policy(table.id, 'SELECT', "owner = $auth.id OR $auth.role = 'admin'")).status, 201);
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=id', { user: alice.token })), ['a1', 'a2']);
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: 'admin' } })).status, 200);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: alice.token })), ['a1', 'b1', 'a2']);
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: null } })).status, 200);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: alice.token })), ['a1', 'a2']);
    const logout = await t.req('POST', `/${d.pid}/auth/logout`, { headers: { 'x-user-token': alice.token } });
    assert.equal(logout.status, 204);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: alice.token })), [], 'anonymous after logout');
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=id', { user: bob.token })), ['b1']);
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/end-users/${bob.id}`, { token: d.owner })).status, 204);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: bob.token })), [], 'anonymous once deleted');
  });

  test("an end user's session that expired since reads as anonymous", async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    assert.equal((await d.policy(table.id, 'SELECT', 'owner = $auth.id')).status, 201);
    // a second before the session's 30 days (config.ts tokenTtlMs) end, remembered with the key's
    // use just recorded: only the session's expiry can fail the guard two seconds later
    t.clock.advance(30 * 24 * 60 * 60 * 1000 - 1000);
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=id', { user: alice.token })), ['a1', 'a2']);
    t.clock.advance(2000);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: alice.token })), []);
  });

  test('a policy or a table changed since is applied', async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    assert.deepEqual(bodies(await readTwice(d, 'notes?select=body&order=id', { user: alice.token })), ['a1', 'b1', 'a2']);
    assert.equal((await d.policy(table.id, 'SELECT', 'owner = $auth.id')).status, 201);
    assert.deepEqual(bodies(await d.rest('GET', 'notes?select=body&order=id', { user: alice.token })), ['a1', 'a2']);
    const renamed = await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body: { rename_columns: { body: 'text' } } });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    expectError(await d.rest('GET', 'notes?select=body', { user: alice.token }), 400);
    assert.deepEqual((await d.rest('GET', 'notes?select=text&order=id', { user: alice.token })).body, [{ text: 'a1' }, { text: 'a2' }]);
  });

  test("a key's last use is still recorded once a minute", async () => {
    const t = ctx();
    const { d } = await notes(t);
    const k = await d.createKey(['select']);
    const lastUsed = async () => {
      const list = (await t.req('GET', `/projects/${d.pid}/keys`, { token: d.owner })).body as { key_id: string; last_used_at: string | null }[];
      return list.find((x) => x.key_id === k.key_id)!.last_used_at;
    };
    await readTwice(d, 'notes?select=body', { key: k.key });
    const first = await lastUsed();
    assert.ok(first);
    t.clock.advance(61_000);
    await readTwice(d, 'notes?select=body', { key: k.key });
    const second = await lastUsed();
    assert.ok(second && Date.parse(second) - Date.parse(first) >= 61_000, `${first} then ${second}`);
  });
}, { GUESSED_READS: 'true' });

/** The rows of `notes` as the owner sees them (no policies), in id order. */
async function stored(t: TestApp, d: DataPlane): Promise<{ body: string; owner: number | null }[]> {
  const table = (await t.req('GET', `/projects/${d.pid}/tables`, { token: d.owner })).body.find((x: { name: string }) => x.name === 'notes');
  const res = await t.req('GET', `/projects/${d.pid}/tables/${table.id}/rows?select=body,owner&order=id`, { token: d.owner });
  assert.equal(res.status, 200);
  return res.body;
}

// A single-row insert by credentials seen before is one statement too: the row is written only where
// the guard holds. Each case makes the credentials known (a read), changes something, and inserts.
await describeEngines('guessed inserts', (ctx) => {
  test('a remembered caller inserts one row with its own defaults, as the long way does', async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    assert.equal((await d.policy(table.id, 'INSERT', 'owner = $auth.id')).status, 201);
    await readTwice(d, 'notes?select=body', { key: d.keys.all, user: alice.token });
    const res = await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'a3' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body, [{ id: res.body[0].id, body: 'a3', owner: alice.id }]);
    const refused = await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'not mine', owner: alice.id + 1000 } });
    expectError(refused, 403, 'rls_violation');
    assert.deepEqual((await stored(t, d)).map((r) => r.body), ['a1', 'b1', 'a2', 'a3']);
  });

  test('a key revoked or expired since writes nothing', async () => {
    const t = ctx();
    const { d } = await notes(t);
    const revoked = await d.createKey(['select', 'insert']);
    const expiring = await d.createKey(['select', 'insert'], { expires_at: new Date(t.clock.now().getTime() + 30_000).toISOString() });
    for (const k of [revoked, expiring]) await readTwice(d, 'notes?select=body', { key: k.key });
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/keys/${revoked.key_id}`, { token: d.owner })).status, 204);
    t.clock.advance(31_000);
    for (const k of [revoked, expiring]) expectError(await d.rest('POST', 'notes', { key: k.key, body: { body: 'ghost' } }), 401, 'invalid_api_key');
    assert.deepEqual((await stored(t, d)).map((r) => r.body), ['a1', 'b1', 'a2']);
  });

  test('a role change, a logout and a deleted end user act on the next insert', async () => {
    const t = ctx();
    const { d, table, alice, bob } = await notes(t);
    assert.equal((await d.policy(table.id, 'INSERT', "$auth.role = 'writer'")).status, 201);
    for (const u of [alice, bob]) await readTwice(d, 'notes?select=body', { key: d.keys.all, user: u.token });
    expectError(await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'before' } }), 403, 'rls_violation');
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: 'writer' } })).status, 200);
    assert.equal((await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'granted' } })).status, 201);
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: null } })).status, 200);
    expectError(await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'cleared' } }), 403, 'rls_violation');
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${bob.id}`, { token: d.owner, body: { role: 'writer' } })).status, 200);
    await d.rest('GET', 'notes?select=body', { key: d.keys.all, user: bob.token }); // remembered as a writer
    assert.equal((await t.req('POST', `/${d.pid}/auth/logout`, { headers: { 'x-user-token': bob.token } })).status, 204);
    expectError(await d.rest('POST', 'notes', { key: d.keys.all, user: bob.token, body: { body: 'logged out' } }), 403, 'rls_violation');
    assert.deepEqual((await stored(t, d)).map((r) => [r.body, r.owner]), [['a1', alice.id], ['b1', bob.id], ['a2', alice.id], ['granted', alice.id]]);
  });

  test('a table changed since is applied, and inserts that are not one plain row take the long way', async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    await readTwice(d, 'notes?select=body', { key: d.keys.all, user: alice.token });
    const renamed = await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body: { rename_columns: { body: 'text' } } });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    expectError(await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { body: 'old name' } }), 400, 'unknown_column');
    assert.equal((await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { text: 'new name' } })).status, 201);
    const bulk = await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: [{ text: 'b1' }, { text: 'b2' }] });
    assert.equal(bulk.status, 201);
    assert.deepEqual(bulk.body.map((r: { owner: number }) => r.owner), [alice.id, alice.id]);
    const explicit = await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { id: 500, text: 'with id' } });
    assert.equal(explicit.status, 201);
    const upsert = await d.rest('POST', 'notes', { key: d.keys.all, user: alice.token, body: { id: 500, text: 'merged' }, headers: { prefer: 'resolution=merge-duplicates' } });
    assert.equal(upsert.status, 201, JSON.stringify(upsert.body));
    const texts = (await d.rest('GET', 'notes?select=text&order=id', { key: d.keys.all })).body.map((r: { text: string }) => r.text);
    assert.deepEqual(texts, ['a1', 'b1', 'a2', 'new name', 'b1', 'b2', 'merged']);
  });
}, { GUESSED_READS: 'true' });

// The supabase-js door (`apikey`, the user's token as the bearer) remembers its callers as well.
await describeEngines('guessed callers on the supabase-js door', (ctx) => {
  const door = (t: TestApp, d: DataPlane, method: string, path: string, key: string, user?: string, body?: unknown) =>
    t.req(method, `/${d.pid}/rest/v1/${path}`, { headers: { apikey: key, ...(user ? { authorization: `Bearer ${user}` } : {}) }, body });

  test('a key revoked since, a logout and a role change act on the next read and insert', async () => {
    const t = ctx();
    const { d, table, alice } = await notes(t);
    assert.equal((await d.policy(table.id, 'SELECT', "owner = $auth.id OR $auth.role = 'admin'")).status, 201);
    const k = await d.createKey(['select', 'insert']);
    for (let i = 0; i < 2; i++) assert.deepEqual(bodies(await door(t, d, 'GET', 'notes?select=body&order=id', k.key, alice.token)), ['a1', 'a2']);
    assert.equal((await t.req('PATCH', `/projects/${d.pid}/end-users/${alice.id}`, { token: d.owner, body: { role: 'admin' } })).status, 200);
    assert.deepEqual(bodies(await door(t, d, 'GET', 'notes?select=body&order=id', k.key, alice.token)), ['a1', 'b1', 'a2']);
    assert.equal((await door(t, d, 'POST', 'notes', k.key, alice.token, { body: 'a3' })).status, 201);
    assert.equal((await t.req('POST', `/${d.pid}/auth/logout`, { headers: { 'x-user-token': alice.token } })).status, 204);
    assert.deepEqual(bodies(await door(t, d, 'GET', 'notes?select=body&order=id', k.key, alice.token)), [], 'anonymous after logout');
    assert.equal((await t.req('DELETE', `/projects/${d.pid}/keys/${k.key_id}`, { token: d.owner })).status, 204);
    expectError(await door(t, d, 'GET', 'notes?select=body', k.key), 401, 'invalid_api_key');
    expectError(await door(t, d, 'POST', 'notes', k.key, undefined, { body: 'ghost' }), 401, 'invalid_api_key');
    assert.deepEqual((await stored(t, d)).map((r) => r.body), ['a1', 'b1', 'a2', 'a3']);
  });
}, { GUESSED_READS: 'true' });
