// Projects (SPEC 4.2, CONTRACT §0, §2) on every engine: CRUD, ownership isolation on every path
// below /projects/{id}, hostile ids, bad input and dead credentials, each verified against state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeEngines, registerAccount, createProject, expectError, type TestApp, type Reply } from '../support/app.ts';
import pg from 'pg';
import { PostgresEngine } from '../../src/storage/postgres/postgres-engine.ts';

const DAY = 24 * 60 * 60 * 1000;
const PROJECT_KEYS = ['created_at', 'description', 'id', 'name', 'updated_at'];
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const NOTES = { name: 'notes', columns: [{ name: 'body', type: 'text' }] };

/** How many project stores exist (SQLite files or PostgreSQL schemas). */
async function storeCount(t: TestApp): Promise<number> {
  if (t.kind === 'sqlite') return readdirSync(join(t.config.dataDir, 'projects')).filter((f) => f.endsWith('.db')).length;
  const row = await t.engine.platform.get<{ n: number }>(`SELECT count(*) AS n FROM information_schema.schemata WHERE schema_name LIKE 'p\\_%'`);
  return Number(row!.n);
}

async function projectCount(t: TestApp): Promise<number> {
  const row = await t.engine.platform.get<{ n: number }>(`SELECT count(*) AS n FROM ${t.engine.platform.t('projects')}`);
  return Number(row!.n);
}

/** Everything an owner can see: the project list and every project with its tables. */
async function snapshot(t: TestApp, token: string): Promise<unknown> {
  const list = await t.req('GET', '/projects', { token });
  assert.equal(list.status, 200);
  const full = [];
  for (const p of list.body as { id: string }[]) full.push((await t.req('GET', `/projects/${p.id}`, { token })).body);
  return { list: list.body, full, projects: await projectCount(t), stores: await storeCount(t) };
}

/** An owner with a project holding one table. */
async function ownerWithTable(t: TestApp) {
  const owner = await registerAccount(t);
  const project = await createProject(t, owner.token, 'Mine');
  const table = await t.req('POST', `/projects/${project.id}/tables`, { token: owner.token, body: NOTES });
  assert.equal(table.status, 201, JSON.stringify(table.body));
  return { ...owner, project, tableId: table.body.id as string };
}

/** Every route below /projects/{id} with a body that would succeed for the owner. */
function projectPaths(pid: string, tid: string): [string, string, unknown][] {
  return [
    ['GET', `/projects/${pid}`, undefined],
    ['PATCH', `/projects/${pid}`, { name: 'hijacked', description: 'hijacked' }],
    ['GET', `/projects/${pid}/tables`, undefined],
    ['POST', `/projects/${pid}/tables`, { name: 'intruder', columns: [{ name: 'x', type: 'text' }] }],
    ['GET', `/projects/${pid}/tables/${tid}`, undefined],
    ['PATCH', `/projects/${pid}/tables/${tid}`, { name: 'renamed', add_columns: [{ name: 'y', type: 'integer' }] }],
    ['DELETE', `/projects/${pid}/tables/${tid}`, undefined],
    ['DELETE', `/projects/${pid}`, undefined],
  ];
}

function expect401(res: Reply, what: string): void {
  try {
    expectError(res, 401);
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`);
  }
  assert.equal(res.headers['www-authenticate'], 'Bearer', what);
}

await describeEngines('projects', (ctx) => {
  test('create: 201 with {id,name,description,created_at,updated_at}; name trimmed; description optional', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const res = await t.req('POST', '/projects', { token, body: { name: '  Shop  ' } });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), PROJECT_KEYS);
    assert.match(res.body.id, /^[a-z2-7]{16}$/);
    assert.equal(res.body.name, 'Shop');
    assert.equal(res.body.description, null);
    assert.match(res.body.created_at, ISO);
    assert.equal(res.body.updated_at, res.body.created_at);
    assert.ok(typeof res.headers['x-request-id'] === 'string');

    const withDesc = await t.req('POST', '/projects', { token, body: { name: 'x'.repeat(100), description: 'd'.repeat(1000) } });
    assert.equal(withDesc.status, 201);
    assert.equal(withDesc.body.name.length, 100);
    assert.equal(withDesc.body.description, 'd'.repeat(1000));
    const nullDesc = await t.req('POST', '/projects', { token, body: { name: 'n', description: null } });
    assert.equal(nullDesc.status, 201);
    assert.equal(nullDesc.body.description, null);
    const emptyDesc = await t.req('POST', '/projects', { token, body: { name: 'e', description: '' } });
    assert.equal(emptyDesc.status, 201);
    assert.equal(emptyDesc.body.description, '');
    assert.notEqual(withDesc.body.id, res.body.id);

    const got = await t.req('GET', `/projects/${res.body.id}`, { token });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, { ...res.body, tables: [] });
    // the store really exists and is empty
    const db = await t.engine.project(res.body.id);
    assert.deepEqual(await db.all(`SELECT id FROM ${db.t('_bp_tables')}`), []);
  });

  test('list: only the caller’s own projects, oldest first', async () => {
    const t = ctx();
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    assert.deepEqual((await t.req('GET', '/projects', { token: a.token })).body, []);
    const a1 = await createProject(t, a.token, 'a1');
    t.clock.advance(1000);
    const a2 = await createProject(t, a.token, 'a2');
    const b1 = await createProject(t, b.token, 'b1');
    t.clock.advance(-1000);
    const listA = await t.req('GET', '/projects', { token: a.token });
    assert.equal(listA.status, 200);
    assert.ok(Array.isArray(listA.body));
    assert.deepEqual(listA.body, [a1, a2]);
    for (const p of listA.body) assert.deepEqual(Object.keys(p).sort(), PROJECT_KEYS);
    assert.deepEqual((await t.req('GET', '/projects', { token: b.token })).body, [b1]);
  });

  test('get includes the project’s tables', async () => {
    const t = ctx();
    const { token, project, tableId } = await ownerWithTable(t);
    const res = await t.req('GET', `/projects/${project.id}`, { token });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), [...PROJECT_KEYS, 'tables'].sort());
    assert.equal(res.body.tables.length, 1);
    assert.equal(res.body.tables[0].id, tableId);
    assert.equal(res.body.tables[0].name, 'notes');
    assert.deepEqual(res.body.tables, (await t.req('GET', `/projects/${project.id}/tables`, { token })).body);
  });

  test('patch: name and description, partial; description null clears; updated_at moves, created_at stays', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const created = (await t.req('POST', '/projects', { token, body: { name: 'Old', description: 'first' } })).body;
    t.clock.advance(5000);
    try {
      const renamed = await t.req('PATCH', `/projects/${created.id}`, { token, body: { name: '  New  ' } });
      assert.equal(renamed.status, 200);
      assert.deepEqual(Object.keys(renamed.body).sort(), PROJECT_KEYS);
      assert.equal(renamed.body.name, 'New');
      assert.equal(renamed.body.description, 'first', 'description untouched');
      assert.equal(renamed.body.created_at, created.created_at);
      assert.ok(Date.parse(renamed.body.updated_at) > Date.parse(created.updated_at), 'updated_at moved');

      const described = await t.req('PATCH', `/projects/${created.id}`, { token, body: { description: 'second' } });
      assert.equal(described.status, 200);
      assert.equal(described.body.name, 'New', 'name untouched');
      assert.equal(described.body.description, 'second');

      const cleared = await t.req('PATCH', `/projects/${created.id}`, { token, body: { description: null } });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.body.description, null);

      const both = await t.req('PATCH', `/projects/${created.id}`, { token, body: { name: 'Both', description: 'd'.repeat(1000) } });
      assert.equal(both.status, 200);
      const { tables, ...stored } = (await t.req('GET', `/projects/${created.id}`, { token })).body;
      assert.deepEqual(tables, []);
      assert.deepEqual(stored, both.body, 'GET shows the patched state');
      assert.equal(stored.name, 'Both');
    } finally {
      t.clock.advance(-5000);
    }
  });

  test('delete: 204, then 404 everywhere, its store and tables are gone, other projects untouched', async () => {
    const t = ctx();
    const { token, project, tableId } = await ownerWithTable(t);
    const keep = await createProject(t, token, 'keep');
    assert.equal((await t.req('POST', `/projects/${keep.id}/tables`, { token, body: NOTES })).status, 201);
    const db = await t.engine.project(project.id);
    await db.run(`INSERT INTO ${db.t('notes')} (body) VALUES (?)`, ['a row']);
    const stores = await storeCount(t);

    const res = await t.req('DELETE', `/projects/${project.id}`, { token });
    assert.equal(res.status, 204);
    assert.equal(res.body, '');
    for (const [method, url, body] of projectPaths(project.id, tableId)) expectError(await t.req(method, url, { token, body }), 404, 'not_found');
    assert.deepEqual(
      ((await t.req('GET', '/projects', { token })).body as { id: string }[]).map((p) => p.id),
      [keep.id],
    );
    await assert.rejects(async () => {
      const gone = await t.engine.project(project.id);
      await gone.all(`SELECT * FROM ${gone.t('_bp_tables')}`);
    }, 'the project store is gone');
    assert.equal(await storeCount(t), stores - 1);
    // the other project is intact
    const kept = await t.req('GET', `/projects/${keep.id}`, { token });
    assert.equal(kept.status, 200);
    assert.deepEqual(kept.body.tables.map((x: { name: string }) => x.name), ['notes']);
  });

  const badCreate: [string, unknown, number, string][] = [
    ['missing name', {}, 422, 'validation_failed'],
    ['missing name with description', { description: 'x' }, 422, 'validation_failed'],
    ['empty name', { name: '' }, 422, 'validation_failed'],
    ['blank name', { name: '   ' }, 422, 'validation_failed'],
    ['tab and newline name', { name: '\t\n' }, 422, 'validation_failed'],
    ['101-char name', { name: 'n'.repeat(101) }, 422, 'validation_failed'],
    ['10,000-char name', { name: 'n'.repeat(10_000) }, 422, 'validation_failed'],
    ['number name', { name: 42 }, 422, 'validation_failed'],
    ['null name', { name: null }, 422, 'validation_failed'],
    ['boolean name', { name: true }, 422, 'validation_failed'],
    ['array name', { name: ['a'] }, 422, 'validation_failed'],
    ['object name', { name: { first: 'a' } }, 422, 'validation_failed'],
    ['number description', { name: 'a', description: 5 }, 422, 'validation_failed'],
    ['object description', { name: 'a', description: {} }, 422, 'validation_failed'],
    ['1001-char description', { name: 'a', description: 'd'.repeat(1001) }, 422, 'validation_failed'],
    ['10,000-char description', { name: 'a', description: 'd'.repeat(10_000) }, 422, 'validation_failed'],
    ['unknown field', { name: 'a', owner_id: 'someone-else' }, 422, 'unknown_field'],
    ['unknown field id', { name: 'a', id: 'aaaaaaaaaaaaaaaa' }, 422, 'unknown_field'],
    ['array body', [{ name: 'a' }], 422, 'validation_failed'],
    ['empty array body', [], 422, 'validation_failed'],
    ['null body', null, 422, 'validation_failed'],
    ['string body', 'a', 422, 'validation_failed'],
    ['number body', 1, 422, 'validation_failed'],
  ];
  for (const [name, body, status, code] of badCreate) {
    test(`create rejects ${name}`, async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      await createProject(t, token, 'existing');
      const before = await snapshot(t, token);
      const err = expectError(await t.req('POST', '/projects', { token, body }), status, code);
      if (code === 'unknown_field') assert.equal(err.details.field, (Object.keys(body as object).find((k) => k !== 'name')));
      if (code === 'validation_failed' && typeof body === 'object' && body !== null && !Array.isArray(body)) {
        assert.ok(['name', 'description'].includes(err.details.field), `names the field: ${JSON.stringify(err.details)}`);
      }
      assert.deepEqual(await snapshot(t, token), before, 'nothing created');
    });
  }

  const malformed: [string, string][] = [
    ['truncated', '{"name": "a",'],
    ['single quotes', "{'name': 'a'}"],
    ['trailing comma', '{"name": "a",}'],
    ['bare word', 'name=a'],
    ['two documents', '{"name":"a"}{"name":"b"}'],
  ];
  for (const [name, rawBody] of malformed) {
    test(`create and patch reject malformed JSON (${name}) with 400 invalid_json`, async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const p = await createProject(t, token, 'existing');
      const before = await snapshot(t, token);
      expectError(await t.req('POST', '/projects', { token, rawBody }), 400, 'invalid_json');
      expectError(await t.req('PATCH', `/projects/${p.id}`, { token, rawBody }), 400, 'invalid_json');
      assert.deepEqual(await snapshot(t, token), before);
    });
  }

  test('names are counted in characters: 100 characters outside the BMP are accepted', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const name = '😀'.repeat(100);
    const res = await t.req('POST', '/projects', { token, body: { name, description: '🚀'.repeat(1000) } });
    assert.equal(res.status, 201, `100 characters, 1000 characters: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.name, name);
    const p = await createProject(t, token, 'plain');
    const patched = await t.req('PATCH', `/projects/${p.id}`, { token, body: { name: 'é'.repeat(60) + '😀'.repeat(40) } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    expectError(await t.req('POST', '/projects', { token, body: { name: '😀'.repeat(101) } }), 422, 'validation_failed');
  });

  test('a NUL character in name or description is a clean 4xx or stored exactly, never a 500', async () => {
    const t = ctx();
    const { token } = await registerAccount(t);
    const p = await createProject(t, token, 'existing');
    for (const body of [{ name: 'a\u0000b' }, { name: 'ok', description: 'x\u0000y' }]) {
      const before = await snapshot(t, token);
      const res = await t.req('POST', '/projects', { token, body });
      if (res.status === 201) {
        const got = await t.req('GET', `/projects/${res.body.id}`, { token });
        assert.equal(got.body.name, body.name);
        assert.equal(got.body.description, body.description ?? null);
        await t.req('DELETE', `/projects/${res.body.id}`, { token });
      } else {
        expectError(res, 422);
        assert.deepEqual(await snapshot(t, token), before, 'nothing created');
      }
      const patched = await t.req('PATCH', `/projects/${p.id}`, { token, body });
      if (patched.status !== 200) expectError(patched, 422);
    }
  });

  const badPatch: [string, unknown, number, string][] = [
    ['empty name', { name: '' }, 422, 'validation_failed'],
    ['blank name', { name: '    ' }, 422, 'validation_failed'],
    ['101-char name', { name: 'n'.repeat(101) }, 422, 'validation_failed'],
    ['10,000-char name', { name: 'n'.repeat(10_000) }, 422, 'validation_failed'],
    ['null name', { name: null }, 422, 'validation_failed'],
    ['number name', { name: 7 }, 422, 'validation_failed'],
    ['1001-char description', { description: 'd'.repeat(1001) }, 422, 'validation_failed'],
    ['array description', { description: ['d'] }, 422, 'validation_failed'],
    ['valid name with bad description', { name: 'fine', description: 9 }, 422, 'validation_failed'],
    ['blank name with valid description', { name: ' ', description: 'fine' }, 422, 'validation_failed'],
    ['unknown field', { name: 'fine', owner_id: 'x' }, 422, 'unknown_field'],
    ['read-only field', { created_at: '2000-01-01T00:00:00.000Z' }, 422, 'unknown_field'],
    ['array body', [{ name: 'fine' }], 422, 'validation_failed'],
    ['null body', null, 422, 'validation_failed'],
  ];
  for (const [name, body, status, code] of badPatch) {
    test(`patch rejects ${name} and changes nothing`, async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const p = (await t.req('POST', '/projects', { token, body: { name: 'Stable', description: 'kept' } })).body;
      const before = await snapshot(t, token);
      expectError(await t.req('PATCH', `/projects/${p.id}`, { token, body }), status, code);
      assert.deepEqual(await snapshot(t, token), before);
    });
  }

  test('another owner’s project is 404 not_found on every path below /projects/{id} and nothing changes', async () => {
    const t = ctx();
    const victim = await ownerWithTable(t);
    const intruder = await ownerWithTable(t);
    const db = await t.engine.project(victim.project.id);
    await db.run(`INSERT INTO ${db.t('notes')} (body) VALUES (?)`, ['secret']);
    const victimBefore = await snapshot(t, victim.token);
    const intruderBefore = await snapshot(t, intruder.token);
    const ghostBody = expectError(await t.req('GET', '/projects/aaaaaaaaaaaaaaaa', { token: intruder.token }), 404, 'not_found');

    for (const [method, url, body] of projectPaths(victim.project.id, victim.tableId)) {
      const res = await t.req(method, url, { token: intruder.token, body });
      const err = expectError(res, 404, 'not_found');
      assert.equal(JSON.stringify(res.body).includes('notes'), false, `${method} ${url} leaks nothing`);
      if (method === 'GET' && url === `/projects/${victim.project.id}`) assert.deepEqual(err, ghostBody, 'same answer as a missing project');
    }
    // the victim's table id through the intruder's own project
    for (const [method, url, body] of projectPaths(intruder.project.id, victim.tableId).slice(4, 7)) {
      expectError(await t.req(method, url, { token: intruder.token, body }), 404, 'not_found');
    }
    assert.deepEqual(await snapshot(t, victim.token), victimBefore, 'victim unchanged');
    assert.deepEqual(await snapshot(t, intruder.token), intruderBefore, 'intruder unchanged');
    assert.deepEqual(await db.all(`SELECT body FROM ${db.t('notes')}`), [{ body: 'secret' }]);
  });

  const hostileIds: [string, string][] = [
    ['well-formed but unknown', 'aaaaaaaaaaaaaaaa'],
    ['SQL injection', "'; drop table x; --"],
    ['SQL tautology', "x' OR '1'='1"],
    ['path traversal', '../'],
    ['double traversal', '../../auth/me'],
    ['NUL', 'abc\u0000def'],
    ['unicode', 'проект-🚀'],
    ['fullwidth', 'ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐ'],
    ['top-level word', 'projects'],
    ['percent', '%'],
    ['one too short', 'aaaaaaaaaaaaaaa'],
  ];
  for (const [name, raw] of hostileIds) {
    test(`id ${name} is 404 on every project and table path`, async () => {
      const t = ctx();
      const me = await ownerWithTable(t);
      const before = await snapshot(t, me.token);
      const id = encodeURIComponent(raw);
      // as project id
      for (const [method, url, body] of projectPaths(id, me.tableId)) expectError(await t.req(method, url, { token: me.token, body }), 404, 'not_found');
      // as table id in an own project
      for (const [method, url, body] of projectPaths(me.project.id, id).slice(4, 7)) {
        expectError(await t.req(method, url, { token: me.token, body }), 404, 'not_found');
      }
      assert.deepEqual(await snapshot(t, me.token), before);
    });
  }

  test('an upper-cased real id is 404 (ids are exact)', async () => {
    const t = ctx();
    const me = await ownerWithTable(t);
    expectError(await t.req('GET', `/projects/${me.project.id.toUpperCase()}`, { token: me.token }), 404, 'not_found');
    expectError(await t.req('GET', `/projects/${me.project.id}/tables/${me.tableId.toUpperCase()}`, { token: me.token }), 404, 'not_found');
  });

  test('very long ids are 404 not_found in the flat error shape', async () => {
    const t = ctx();
    const me = await ownerWithTable(t);
    const before = await snapshot(t, me.token);
    for (const raw of ['a'.repeat(101), 'a'.repeat(5000), `${"'; drop table x; --".repeat(20)}`]) {
      const id = encodeURIComponent(raw);
      for (const [method, url, body] of [...projectPaths(id, me.tableId), ...projectPaths(me.project.id, id).slice(4, 7)]) {
        const res = await t.req(method, url, { token: me.token, body });
        try {
          expectError(res, 404, 'not_found');
        } catch (err) {
          throw new Error(`${method} ${url.slice(0, 60)}…: ${(err as Error).message.slice(0, 300)}`);
        }
        assert.ok(typeof res.headers['x-request-id'] === 'string', 'X-Request-Id present');
      }
    }
    assert.deepEqual(await snapshot(t, me.token), before);
  });

  test('missing, random, malformed, logged-out and expired tokens are 401 on every project path; nothing changes', async () => {
    const t = ctx();
    const me = await ownerWithTable(t);
    const second = (await t.req('POST', '/auth/login', { body: { email: me.account.email, password: me.password } })).body.token as string;
    assert.equal((await t.req('POST', '/auth/logout', { token: second })).status, 204);
    const before = await snapshot(t, me.token);
    const paths: [string, string, unknown][] = [
      ['GET', '/projects', undefined],
      ['POST', '/projects', { name: 'sneaky' }],
      ...projectPaths(me.project.id, me.tableId),
    ];
    const dead: [string, string | undefined][] = [
      ['missing', undefined],
      ['random', 'f'.repeat(64)],
      ['malformed', "' OR 1=1 --"],
      ['logged out', second],
      ['other scheme', undefined],
    ];
    for (const [what, token] of dead) {
      for (const [method, url, body] of paths) {
        const headers = what === 'other scheme' ? { authorization: `Basic ${me.token}` } : undefined;
        expect401(await t.req(method, url, { token, body, headers }), `${what} ${method} ${url}`);
      }
    }
    t.clock.advance(30 * DAY + 60_000);
    try {
      for (const [method, url, body] of paths) expect401(await t.req(method, url, { token: me.token, body }), `expired ${method} ${url}`);
    } finally {
      t.clock.advance(-(30 * DAY + 60_000));
    }
    assert.deepEqual(await snapshot(t, me.token), before, 'nothing changed and the live token still works');
  });
});

// A project's store is dropped before its row is deleted: a drop that fails (here a time-out behind
// another session's lock on one of its tables) leaves the project to delete again, never a store
// that nodes which remember the project would go on serving after its row was gone.
await describeEngines(
  'deleting a project whose store cannot be dropped yet',
  (ctx, kind) => {
    test('the delete fails with 503, the project is still there, and a second delete succeeds once the lock is gone', { skip: kind !== 'postgres' && 'a lock held on a table: PostgreSQL' }, async () => {
      const t = ctx();
      const { token } = await registerAccount(t);
      const project = await createProject(t, token, 'locked');
      assert.equal((await t.req('POST', `/projects/${project.id}/tables`, { token, body: { name: 'notes', columns: [{ name: 'body', type: 'text' }] } })).status, 201);
      const locker = new pg.Client({ connectionString: t.config.databaseUrl! });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE ${PostgresEngine.schemaOf(project.id)}.notes IN ACCESS SHARE MODE`);
        const refused = await t.req('DELETE', `/projects/${project.id}`, { token });
        assert.equal(refused.status, 503, JSON.stringify(refused.body));
        assert.equal((await t.req('GET', `/projects/${project.id}`, { token })).status, 200, 'the project is still there');
        await locker.query('ROLLBACK');
        assert.equal((await t.req('DELETE', `/projects/${project.id}`, { token })).status, 204);
        expectError(await t.req('GET', `/projects/${project.id}`, { token }), 404, 'not_found');
      } finally {
        await locker.end();
      }
    });
  },
  { STATEMENT_TIMEOUT_MS: '1000' },
);
