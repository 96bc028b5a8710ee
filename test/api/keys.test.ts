// Project API keys (SPEC 4.3, 5; CONTRACT §0, §4) on every engine: creation and validation, secrets
// shown once and stored only as a hash, revocation, ownership isolation, and the key in use on the
// REST passthrough (expiry, revocation, other project, permissions, last_used_at).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp, type Reply } from '../support/app.ts';

const HOUR = 60 * 60 * 1000;
const KEY_FIELDS = ['created_at', 'expires_at', 'key_id', 'key_prefix', 'last_used_at', 'name', 'permissions'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HEX64 = /^[0-9a-f]{64}$/;
const NOTES = { name: 'notes', columns: [{ name: 'body', type: 'text' }] };
const ALL = ['select', 'insert', 'update', 'delete', 'function'];

/** An owner with a project holding the `notes` table. */
async function ownerWithNotes(t: TestApp) {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, 'Keys');
  const table = await t.req('POST', `/projects/${project.id}/tables`, { token: owner.token, body: NOTES });
  assert.equal(table.status, 201, JSON.stringify(table.body));
  return { ...owner, pid: project.id };
}

async function createKey(t: TestApp, token: string, pid: string, body: Record<string, unknown> = {}) {
  const res = await t.req('POST', `/projects/${pid}/keys`, { token, body: { name: 'backend', permissions: ['select'], ...body } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { key_id: string; key: string; key_prefix: string; permissions: string[]; expires_at: string | null; last_used_at: string | null };
}

async function keyRows(t: TestApp, pid: string): Promise<Record<string, unknown>[]> {
  const db = await t.engine.project(pid);
  return db.all<Record<string, unknown>>(`SELECT * FROM ${db.t('_bp_keys')}`);
}

/** The passthrough with an API key (Authorization header only, no platform token). */
function rest(t: TestApp, method: string, pid: string, key: string | undefined, path = 'notes', body?: unknown): Promise<Reply> {
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  return t.req(method, `/${pid}/rest/${path}`, { headers, body });
}

function expect401(res: Reply, what: string): void {
  try {
    expectError(res, 401);
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
  assert.equal(res.headers['www-authenticate'], 'Bearer', what);
}

await describeEngines('api keys', (ctx) => {
  test('create: 201 with the fields and a 64-hex key shown once; prefix is its first 8 characters', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const res = await t.req('POST', `/projects/${pid}/keys`, { token, body: { name: '  server  ', permissions: ['select', 'insert'] } });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), [...KEY_FIELDS, 'key'].sort());
    assert.match(res.body.key, HEX64);
    assert.equal(res.body.key_prefix, res.body.key.slice(0, 8));
    assert.match(res.body.key_id, /^[a-z2-7]{16}$/);
    assert.equal(res.body.name, 'server');
    assert.deepEqual(res.body.permissions, ['select', 'insert']);
    assert.equal(res.body.expires_at, null);
    assert.equal(res.body.last_used_at, null);
    assert.match(res.body.created_at, ISO);
    assert.ok(typeof res.headers['x-request-id'] === 'string');

    const second = await createKey(t, token, pid);
    assert.notEqual(second.key, res.body.key);
    assert.notEqual(second.key_id, res.body.key_id);

    const list = await t.req('GET', `/projects/${pid}/keys`, { token });
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    assert.equal(list.body.length, 2);
    const { key: _secret, ...listed } = res.body;
    assert.deepEqual(
      list.body.find((k: { key_id: string }) => k.key_id === listed.key_id),
      listed,
      'list items are the create reply without the key',
    );
    for (const item of list.body) assert.deepEqual(Object.keys(item).sort(), KEY_FIELDS);
    const text = JSON.stringify(list.body);
    assert.ok(!/[0-9a-f]{64}/i.test(text), 'no 64-hex value in the list');
    assert.ok(!text.includes(res.body.key) && !text.includes(second.key));
  });

  test('the store holds only a hash of the key, never the plaintext', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const k = await createKey(t, token, pid);
    const rows = await keyRows(t, pid);
    assert.equal(rows.length, 1);
    const values = Object.values(rows[0]!).map((v) => String(v));
    assert.ok(
      values.every((v) => !v.includes(k.key) && !v.toLowerCase().includes(k.key)),
      'plaintext key stored',
    );
    assert.ok(values.some((v) => HEX64.test(v)), 'a digest is stored');
  });

  test('every permission alone and combined is stored and returned as given', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const sets = [...ALL.map((p) => [p]), ['insert', 'select'], ['delete', 'update', 'function'], ALL, [...ALL].reverse()];
    const ids: string[] = [];
    for (const permissions of sets) {
      const k = await createKey(t, token, pid, { permissions });
      assert.deepEqual(k.permissions, permissions);
      ids.push(k.key_id);
    }
    const list = (await t.req('GET', `/projects/${pid}/keys`, { token })).body as { key_id: string; permissions: string[] }[];
    assert.equal(list.length, sets.length);
    for (const [i, id] of ids.entries()) assert.deepEqual(list.find((k) => k.key_id === id)?.permissions, sets[i]);
  });

  const badCreates: [string, unknown][] = [
    ['empty permissions', { name: 'k', permissions: [] }],
    ['duplicate permission', { name: 'k', permissions: ['select', 'select'] }],
    ['unknown permission admin', { name: 'k', permissions: ['admin'] }],
    ['upper-case SELECT', { name: 'k', permissions: ['SELECT'] }],
    ['empty-string permission', { name: 'k', permissions: [''] }],
    ['padded permission', { name: 'k', permissions: [' select'] }],
    ['injection permission', { name: 'k', permissions: ["select'; DROP TABLE _bp_keys; --"] }],
    ['short injection permission', { name: 'k', permissions: ["' OR 1=1 --"] }],
    ['permissions as a string', { name: 'k', permissions: 'select' }],
    ['permissions as an object', { name: 'k', permissions: { select: true } }],
    ['permissions null', { name: 'k', permissions: null }],
    ['number in permissions', { name: 'k', permissions: ['select', 1] }],
    ['six permissions', { name: 'k', permissions: [...ALL, 'select'] }],
    ['missing permissions', { name: 'k' }],
    ['missing name', { permissions: ['select'] }],
    ['empty name', { name: '', permissions: ['select'] }],
    ['blank name', { name: '    ', permissions: ['select'] }],
    ['101-char name', { name: 'n'.repeat(101), permissions: ['select'] }],
    ['name not a string', { name: 5, permissions: ['select'] }],
    ['expires_at in the past', { name: 'k', permissions: ['select'], expires_at: '2001-01-01T00:00:00.000Z' }],
    ['expires_at malformed', { name: 'k', permissions: ['select'], expires_at: 'tomorrow' }],
    ['expires_at a date only', { name: 'k', permissions: ['select'], expires_at: '2099-01-01' }],
    ['expires_at month 13', { name: 'k', permissions: ['select'], expires_at: '2099-13-01T00:00:00Z' }],
    ['expires_at February 30', { name: 'k', permissions: ['select'], expires_at: '2099-02-30T00:00:00Z' }],
    ['expires_at a number', { name: 'k', permissions: ['select'], expires_at: 4102444800000 }],
    ['expires_at injection', { name: 'k', permissions: ['select'], expires_at: "2099-01-01T00:00:00Z'; --" }],
    ['unknown field', { name: 'k', permissions: ['select'], admin: true }],
    ['array body', [{ name: 'k', permissions: ['select'] }]],
  ];
  for (const [what, body] of badCreates) {
    test(`create rejects ${what} with 422 and creates nothing`, async () => {
      const t = ctx();
      const { token, pid } = await ownerWithNotes(t);
      const err = expectError(await t.req('POST', `/projects/${pid}/keys`, { token, body }), 422);
      if (what === 'unknown field') assert.deepEqual([err.code, err.details.field], ['unknown_field', 'admin']);
      if (what.startsWith('expires_at')) assert.equal(err.details.field, 'expires_at');
      assert.deepEqual((await t.req('GET', `/projects/${pid}/keys`, { token })).body, []);
      assert.equal((await keyRows(t, pid)).length, 0);
    });
  }

  test('expires_at in the future is stored and returned as an ISO UTC instant; null never expires', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const future = await createKey(t, token, pid, { expires_at: '2099-06-01T12:00:00+02:00' });
    assert.equal(future.expires_at, '2099-06-01T10:00:00.000Z');
    const never = await createKey(t, token, pid, { expires_at: null });
    assert.equal(never.expires_at, null);
    const list = (await t.req('GET', `/projects/${pid}/keys`, { token })).body as { key_id: string; expires_at: string | null }[];
    assert.equal(list.find((k) => k.key_id === future.key_id)?.expires_at, '2099-06-01T10:00:00.000Z');
    assert.equal(list.find((k) => k.key_id === never.key_id)?.expires_at, null);
    t.clock.advance(3650 * 24 * HOUR);
    try {
      assert.equal((await rest(t, 'GET', pid, never.key)).status, 200, 'a key without expiry works ten years on');
    } finally {
      t.clock.advance(-3650 * 24 * HOUR);
    }
  });

  test('revoke: 204, then 404; unknown and malformed key ids are 404; the key stops working at once', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const k = await createKey(t, token, pid);
    const keep = await createKey(t, token, pid, { name: 'keep' });
    assert.equal((await rest(t, 'GET', pid, k.key)).status, 200);
    const res = await t.req('DELETE', `/projects/${pid}/keys/${k.key_id}`, { token });
    assert.equal(res.status, 204);
    assert.equal(res.body, '');
    expect401(await rest(t, 'GET', pid, k.key), 'revoked key');
    expectError(await t.req('DELETE', `/projects/${pid}/keys/${k.key_id}`, { token }), 404, 'not_found');
    for (const id of ['aaaaaaaaaaaaaaaa', 'nope', 'AAAAAAAAAAAAAAAA', k.key, k.key_prefix, "x'%20OR%20'1'='1", '%2e%2e']) {
      expectError(await t.req('DELETE', `/projects/${pid}/keys/${id}`, { token }), 404, 'not_found');
    }
    const list = (await t.req('GET', `/projects/${pid}/keys`, { token })).body;
    assert.deepEqual(
      list.map((x: { key_id: string }) => x.key_id),
      [keep.key_id],
    );
    assert.equal((await rest(t, 'GET', pid, keep.key)).status, 200, 'the other key lives on');
  });

  test("another owner's project is 404 on list, create and revoke; nothing changes there", async () => {
    const t = ctx();
    const me = await ownerWithNotes(t);
    const other = await ownerWithNotes(t);
    const theirs = await createKey(t, other.token, other.pid);
    expectError(await t.req('GET', `/projects/${other.pid}/keys`, { token: me.token }), 404, 'not_found');
    expectError(await t.req('POST', `/projects/${other.pid}/keys`, { token: me.token, body: { name: 'x', permissions: ['select'] } }), 404, 'not_found');
    expectError(await t.req('DELETE', `/projects/${other.pid}/keys/${theirs.key_id}`, { token: me.token }), 404, 'not_found');
    // the key id of another project under my own project
    expectError(await t.req('DELETE', `/projects/${me.pid}/keys/${theirs.key_id}`, { token: me.token }), 404, 'not_found');
    // unknown project ids
    for (const pid of ['aaaaaaaaaaaaaaaa', 'nope']) {
      expectError(await t.req('GET', `/projects/${pid}/keys`, { token: me.token }), 404, 'not_found');
      expectError(await t.req('POST', `/projects/${pid}/keys`, { token: me.token, body: { name: 'x', permissions: ['select'] } }), 404, 'not_found');
    }
    const list = (await t.req('GET', `/projects/${other.pid}/keys`, { token: other.token })).body;
    assert.deepEqual(
      list.map((x: { key_id: string }) => x.key_id),
      [theirs.key_id],
    );
    assert.equal((await rest(t, 'GET', other.pid, theirs.key)).status, 200, 'their key still works on their project');
  });

  test('key routes need a valid platform token: missing, random or an API key are 401', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const k = await createKey(t, token, pid);
    const calls: [string, string, unknown][] = [
      ['GET', `/projects/${pid}/keys`, undefined],
      ['POST', `/projects/${pid}/keys`, { name: 'x', permissions: ['select'] }],
      ['DELETE', `/projects/${pid}/keys/${k.key_id}`, undefined],
    ];
    for (const bad of [undefined, 'f'.repeat(64), k.key]) {
      for (const [method, url, body] of calls) expect401(await t.req(method, url, { token: bad, body }), `${bad === k.key ? 'api key' : String(bad)} ${method} ${url}`);
    }
    expect401(await t.req('POST', `/projects/${pid}/keys`, { body: { name: 'x', permissions: ['admin'] } }), 'no token, unknown permission');
    assert.equal((await keyRows(t, pid)).length, 1, 'nothing created or revoked');
    assert.equal((await rest(t, 'GET', pid, k.key)).status, 200);
  });

  test('authentication comes before body validation: without a valid token a schema-failing body is 401, not 422', async () => {
    const t = ctx();
    const { pid } = await ownerWithNotes(t);
    expect401(await t.req('POST', `/projects/${pid}/keys`, { body: { nope: 1 } }), 'no token, body failing the schema');
    expect401(await t.req('POST', `/projects/${pid}/keys`, { token: 'f'.repeat(64), body: { name: 'x', permissions: [] } }), 'random token, empty permissions');
    assert.equal((await keyRows(t, pid)).length, 0);
  });

  test('the key in use: valid 200; missing, malformed, random, wrong scheme and platform tokens are 401 with WWW-Authenticate', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const k = await createKey(t, token, pid);
    const ok = await rest(t, 'GET', pid, k.key);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, []);
    expect401(await rest(t, 'GET', pid, undefined), 'missing Authorization');
    for (const bad of ['f'.repeat(64), k.key.toUpperCase(), `${k.key}0`, k.key.slice(0, 63), k.key_prefix, k.key_id, "' OR 1=1 --", token]) {
      expect401(await rest(t, 'GET', pid, bad), `bad key ${bad}`);
    }
    expect401(await t.req('GET', `/${pid}/rest/notes`, { headers: { authorization: `Basic ${k.key}` } }), 'Basic scheme');
    expect401(await t.req('GET', `/${pid}/rest/notes`, { headers: { authorization: 'Bearer' } }), 'Bearer without key');
    expect401(await t.req('GET', `/${pid}/rest/notes`, { headers: { 'x-api-key': k.key } }), 'key in another header');
    // a key never works as a platform token
    expect401(await t.req('GET', '/auth/me', { token: k.key }), 'key on /auth/me');
    expect401(await t.req('GET', `/projects/${pid}`, { token: k.key }), 'key on the project');
  });

  test('an expired key is 401 at once; a key is good until its expiry', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const inOneHour = new Date(t.clock.now().getTime() + HOUR).toISOString();
    const k = await createKey(t, token, pid, { expires_at: inOneHour });
    assert.equal(k.expires_at, inOneHour);
    t.clock.advance(HOUR - 60_000);
    try {
      assert.equal((await rest(t, 'GET', pid, k.key)).status, 200);
      t.clock.advance(HOUR + 60_000);
      expect401(await rest(t, 'GET', pid, k.key), 'expired key');
    } finally {
      t.clock.advance(-2 * HOUR);
    }
    // the listing still shows it, with its expiry
    const list = (await t.req('GET', `/projects/${pid}/keys`, { token })).body;
    assert.equal(list[0].expires_at, inOneHour);
  });

  test('a key of project A is 401 on project B, and on an unknown project', async () => {
    const t = ctx();
    const me = await ownerWithNotes(t);
    const second = await createProject(t, me.token, 'B');
    assert.equal((await t.req('POST', `/projects/${second.id}/tables`, { token: me.token, body: NOTES })).status, 201);
    const keyA = await createKey(t, me.token, me.pid, { permissions: ALL });
    const keyB = await createKey(t, me.token, second.id);
    expect401(await rest(t, 'GET', second.id, keyA.key), 'A key on B');
    expect401(await rest(t, 'POST', second.id, keyA.key, 'notes', { body: 'x' }), 'A key writes B');
    expect401(await rest(t, 'GET', me.pid, keyB.key), 'B key on A');
    expect401(await rest(t, 'GET', 'aaaaaaaaaaaaaaaa', keyA.key), 'unknown project');
    expect401(await rest(t, 'GET', 'nope', keyA.key), 'malformed project');
    assert.equal((await rest(t, 'GET', second.id, keyB.key)).status, 200);
    const rows = await rest(t, 'GET', second.id, keyB.key);
    assert.deepEqual(rows.body, [], 'nothing was written to B');
  });

  test('permissions gate the methods: a missing permission is 403 insufficient_permission, nothing changes', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const full = await createKey(t, token, pid, { permissions: ALL });
    const seeded = await rest(t, 'POST', pid, full.key, 'notes', { body: 'seed' });
    assert.equal(seeded.status, 201, JSON.stringify(seeded.body));
    const snapshot = async () => (await rest(t, 'GET', pid, full.key, 'notes?order=id')).body;
    const before = await snapshot();
    assert.equal(before.length, 1);
    const id = before[0].id;

    const calls: [string, string, string, unknown][] = [
      ['select', 'GET', 'notes', undefined],
      ['select', 'GET', `notes/${id}`, undefined],
      ['insert', 'POST', 'notes', { body: 'new' }],
      ['update', 'PATCH', `notes?id=eq.${id}`, { body: 'changed' }],
      ['update', 'PATCH', `notes/${id}`, { body: 'changed' }],
      ['update', 'PUT', `notes/${id}`, { body: 'changed' }],
      ['delete', 'DELETE', `notes?id=eq.${id}`, undefined],
      ['delete', 'DELETE', `notes/${id}`, undefined],
    ];
    for (const perms of [['select'], ['insert'], ['update'], ['delete'], ['function']]) {
      const k = await createKey(t, token, pid, { name: perms.join('+'), permissions: perms });
      for (const [needed, method, path, body] of calls) {
        if (perms.includes(needed)) continue;
        const res = await rest(t, method, pid, k.key, path, body);
        const err = expectError(res, 403, 'insufficient_permission');
        assert.ok(err, `${perms} ${method} ${path}`);
      }
    }
    assert.deepEqual(await snapshot(), before, 'no forbidden call changed anything');

    // each permission alone allows its own method
    const sel = await createKey(t, token, pid, { permissions: ['select'] });
    assert.equal((await rest(t, 'GET', pid, sel.key, `notes/${id}`)).status, 200);
    const ins = await createKey(t, token, pid, { permissions: ['insert'] });
    const inserted = await rest(t, 'POST', pid, ins.key, 'notes', { body: 'by insert key' });
    assert.ok(inserted.status === 201 || inserted.status === 204, `insert-only key: ${inserted.status} ${JSON.stringify(inserted.body)}`);
    assert.ok(!JSON.stringify(inserted.body ?? '').includes('by insert key'), 'no rows returned without select');
    const upd = await createKey(t, token, pid, { permissions: ['update'] });
    const updated = await rest(t, 'PATCH', pid, upd.key, `notes?id=eq.${id}`, { body: 'by update key' });
    assert.ok(updated.status < 300, `update-only key: ${updated.status} ${JSON.stringify(updated.body)}`);
    const after = await snapshot();
    assert.deepEqual(
      after.map((r: { body: string }) => r.body),
      ['by update key', 'by insert key'],
    );
    const del = await createKey(t, token, pid, { permissions: ['delete'] });
    const deleted = await rest(t, 'DELETE', pid, del.key, `notes?id=eq.${id}`);
    assert.ok(deleted.status < 300, `delete-only key: ${deleted.status}`);
    assert.equal((await snapshot()).length, 1);
  });

  test('last_used_at is null until the key is used, then set; a failed credential does not touch other keys', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const used = await createKey(t, token, pid, { name: 'used' });
    const idle = await createKey(t, token, pid, { name: 'idle' });
    const before = (await t.req('GET', `/projects/${pid}/keys`, { token })).body;
    assert.deepEqual(
      before.map((k: { last_used_at: string | null }) => k.last_used_at),
      [null, null],
    );
    const t0 = t.clock.now().getTime();
    assert.equal((await rest(t, 'GET', pid, used.key)).status, 200);
    expect401(await rest(t, 'GET', pid, 'f'.repeat(64)), 'random');
    type Listed = { key_id: string; last_used_at: string | null };
    const byId = async (id: string) => ((await t.req('GET', `/projects/${pid}/keys`, { token })).body as Listed[]).find((k) => k.key_id === id)!;
    const usedNow = (await byId(used.key_id)).last_used_at!;
    assert.match(usedNow, ISO);
    assert.ok(Math.abs(Date.parse(usedNow) - t0) < 5000);
    assert.equal((await byId(idle.key_id)).last_used_at, null);
    // a key lacking the permission was still presented: last use recorded, request refused
    const insertOnly = await createKey(t, token, pid, { name: 'insert-only', permissions: ['insert'] });
    expectError(await rest(t, 'GET', pid, insertOnly.key), 403, 'insufficient_permission');
    assert.match((await byId(insertOnly.key_id)).last_used_at ?? '', ISO);
    // use again much later: the timestamp moves
    t.clock.advance(HOUR);
    try {
      assert.equal((await rest(t, 'GET', pid, used.key)).status, 200);
      assert.ok(Date.parse((await byId(used.key_id)).last_used_at!) >= t0 + HOUR - 5000, 'last_used_at moved forward');
    } finally {
      t.clock.advance(-HOUR);
    }
  });

  test('deleting the project kills its keys', async () => {
    const t = ctx();
    const { token, pid } = await ownerWithNotes(t);
    const k = await createKey(t, token, pid);
    assert.equal((await t.req('DELETE', `/projects/${pid}`, { token })).status, 204);
    expect401(await rest(t, 'GET', pid, k.key), 'key of a deleted project');
  });
});
