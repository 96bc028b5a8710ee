// Tables of a project (CONTRACT §3) on every engine: definitions over HTTP checked against the real
// database (columns, types, NOT NULL, indexes, unique enforcement), and bad input that changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, expectError, type TestApp } from '../support/app.ts';
import { quoteIdent, UniqueViolation, NotNullViolation, type SqlParam } from '../../src/storage/engine.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TABLE_KEYS = ['columns', 'created_at', 'id', 'name'];
const ID_COLUMN = { name: 'id', type: 'integer', nullable: false, default: null, unique: true, indexed: true, primary_key: true };
const col = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  nullable: true,
  default: null,
  unique: false,
  indexed: false,
  primary_key: false,
  ...extra,
});

const SQL_TYPES: Record<string, Record<string, string>> = {
  sqlite: { text: 'text', integer: 'integer', number: 'real', boolean: 'integer', timestamp: 'text', date: 'text', json: 'text' },
  postgres: {
    text: 'text',
    integer: 'bigint',
    number: 'double precision',
    boolean: 'boolean',
    timestamp: 'timestamp with time zone',
    date: 'date',
    json: 'jsonb',
  },
};

type DbColumn = { name: string; type: string; notnull: boolean };

/** The table's columns as the database sees them. */
async function dbColumns(t: TestApp, pid: string, table: string): Promise<DbColumn[]> {
  const db = await t.engine.project(pid);
  if (t.kind === 'sqlite') {
    const rows = await db.all<{ name: string; type: string; nn: number }>(`SELECT name, type, "notnull" AS nn FROM pragma_table_info(?) ORDER BY cid`, [table]);
    return rows.map((r) => ({ name: r.name, type: r.type.toLowerCase(), notnull: Number(r.nn) === 1 }));
  }
  const rows = await db.all<{ name: string; type: string; nullable: string }>(
    `SELECT column_name AS name, data_type AS type, is_nullable AS nullable FROM information_schema.columns
     WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position`,
    [`p_${pid}`, table],
  );
  return rows.map((r) => ({ name: r.name, type: r.type, notnull: r.nullable === 'NO' }));
}

/** The service-created indexes of a table as `unique:<col>` / `index:<col>`, sorted. */
async function dbIndexes(t: TestApp, pid: string, table: string): Promise<string[]> {
  const db = await t.engine.project(pid);
  const rows =
    t.kind === 'sqlite'
      ? await db.all<{ sql: string }>(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`, [table])
      : await db.all<{ sql: string }>(`SELECT indexdef AS sql FROM pg_indexes WHERE schemaname = ? AND tablename = ? AND indexname LIKE 'bp\\_%'`, [
          `p_${pid}`,
          table,
        ]);
  return rows
    .map((r) => {
      const m = /\(\s*"?([a-z0-9_]+)"?\s*\)\s*$/.exec(r.sql);
      return `${/\bUNIQUE\b/i.test(r.sql) ? 'unique' : 'index'}:${m ? m[1] : r.sql}`;
    })
    .sort();
}

/** User tables in the project store, sorted. */
async function dbTables(t: TestApp, pid: string): Promise<string[]> {
  const db = await t.engine.project(pid);
  const rows =
    t.kind === 'sqlite'
      ? await db.all<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`)
      : await db.all<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?`, [`p_${pid}`]);
  return rows
    .map((r) => r.name)
    .filter((n) => !n.startsWith('_bp_') && !n.startsWith('sqlite_'))
    .sort();
}

async function insert(t: TestApp, pid: string, table: string, row: Record<string, SqlParam>): Promise<void> {
  const db = await t.engine.project(pid);
  const cols = Object.keys(row);
  if (cols.length === 0) {
    await db.run(`INSERT INTO ${db.t(table)} DEFAULT VALUES`);
    return;
  }
  await db.run(`INSERT INTO ${db.t(table)} (${cols.map(quoteIdent).join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`, Object.values(row));
}

async function rows(t: TestApp, pid: string, table: string, columns = '*'): Promise<Record<string, unknown>[]> {
  const db = await t.engine.project(pid);
  return db.all(`SELECT ${columns} FROM ${db.t(table)} ORDER BY ${quoteIdent('id')}`);
}

async function setup(t: TestApp) {
  const { token } = await registerAccount(t);
  const project = await createProject(t, token);
  const pid = project.id;
  const base = `/projects/${pid}/tables`;
  return {
    token,
    pid,
    base,
    create: (body: unknown) => t.req('POST', base, { token, body }),
    patch: (id: string, body: unknown) => t.req('PATCH', `${base}/${id}`, { token, body }),
    get: (id: string) => t.req('GET', `${base}/${id}`, { token }),
    list: async () => {
      const res = await t.req('GET', base, { token });
      assert.equal(res.status, 200);
      return res.body as { id: string; name: string }[];
    },
  };
}
type Fixture = Awaited<ReturnType<typeof setup>>;

/** Everything observable about a project's tables: the API view and the database view. */
async function state(t: TestApp, f: Fixture): Promise<unknown> {
  const list = await f.list();
  const db: Record<string, unknown> = {};
  for (const name of await dbTables(t, f.pid)) db[name] = { columns: await dbColumns(t, f.pid, name), indexes: await dbIndexes(t, f.pid, name) };
  const project = await t.req('GET', `/projects/${f.pid}`, { token: f.token });
  return { list, db, tables: project.body.tables };
}

async function rejectsUnique(fn: () => Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(fn, (err: unknown) => err instanceof UniqueViolation, what);
}

await describeEngines('tables', (ctx) => {
  test('create with every column type, defaults and flags: 201 table with the implicit id and every field filled', async () => {
    const t = ctx();
    const f = await setup(t);
    const res = await f.create({
      name: 'every_type',
      columns: [
        { name: 't_text', type: 'text', default: 'hello', unique: true },
        { name: 't_int', type: 'integer', default: 42, indexed: true },
        { name: 't_num', type: 'number', default: 1.5 },
        { name: 't_bool', type: 'boolean', default: false },
        { name: 't_ts', type: 'timestamp', default: '2026-01-01T10:00:00+02:00' },
        { name: 't_date', type: 'date', default: '2028-02-29' },
        { name: 't_json', type: 'json', default: { a: [1, null, 'x'], b: { c: true } } },
        { name: 'created', type: 'timestamp', default: 'now()', nullable: false },
        { name: 'day', type: 'date', default: 'now()' },
        { name: 'owner', type: 'integer', default: '$auth.id', indexed: true },
        { name: 'owner_email', type: 'text', default: '$auth.email' },
        { name: 'required', type: 'text', nullable: false, unique: true, indexed: true },
        { name: 'plain', type: 'json' },
        { name: 'big', type: 'integer', default: Number.MAX_SAFE_INTEGER },
        { name: 'neg', type: 'integer', default: -Number.MAX_SAFE_INTEGER },
        { name: 'empty_text', type: 'text', default: '' },
        { name: 'json_null', type: 'json', default: null },
        { name: 'json_str', type: 'json', default: 'now' },
        { name: '_private', type: 'boolean', default: true },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), TABLE_KEYS);
    assert.match(res.body.id, /^[a-z2-7]{16}$/);
    assert.equal(res.body.name, 'every_type');
    assert.match(res.body.created_at, ISO);
    assert.deepEqual(res.body.columns, [
      ID_COLUMN,
      col('t_text', 'text', { default: 'hello', unique: true }),
      col('t_int', 'integer', { default: 42, indexed: true }),
      col('t_num', 'number', { default: 1.5 }),
      col('t_bool', 'boolean', { default: false }),
      col('t_ts', 'timestamp', { default: '2026-01-01T08:00:00.000Z' }),
      col('t_date', 'date', { default: '2028-02-29' }),
      col('t_json', 'json', { default: { a: [1, null, 'x'], b: { c: true } } }),
      col('created', 'timestamp', { default: 'now()', nullable: false }),
      col('day', 'date', { default: 'now()' }),
      col('owner', 'integer', { default: '$auth.id', indexed: true }),
      col('owner_email', 'text', { default: '$auth.email' }),
      col('required', 'text', { nullable: false, unique: true, indexed: true }),
      col('plain', 'json'),
      col('big', 'integer', { default: Number.MAX_SAFE_INTEGER }),
      col('neg', 'integer', { default: -Number.MAX_SAFE_INTEGER }),
      col('empty_text', 'text', { default: '' }),
      col('json_null', 'json'),
      col('json_str', 'json', { default: 'now' }),
      col('_private', 'boolean', { default: true }),
    ]);
    for (const c of res.body.columns) assert.deepEqual(Object.keys(c).sort(), ['default', 'indexed', 'name', 'nullable', 'primary_key', 'type', 'unique']);

    // GET, list and the project view show the same object
    assert.deepEqual((await f.get(res.body.id)).body, res.body);
    assert.deepEqual(await f.list(), [res.body]);
    assert.deepEqual((await t.req('GET', `/projects/${f.pid}`, { token: f.token })).body.tables, [res.body]);

    // the database has the table with these columns, types, NOT NULLs and indexes
    const types = SQL_TYPES[t.kind]!;
    const cols = await dbColumns(t, f.pid, 'every_type');
    assert.deepEqual(
      cols.map((c) => [c.name, c.type]),
      [['id', types.integer!], ...res.body.columns.slice(1).map((c: { name: string; type: string }) => [c.name, types[c.type]])],
    );
    assert.deepEqual(
      cols.filter((c) => c.notnull && c.name !== 'id').map((c) => c.name),
      ['created', 'required'],
    );
    assert.deepEqual(await dbIndexes(t, f.pid, 'every_type'), ['index:owner', 'index:t_int', 'unique:required', 'unique:t_text']);
    assert.deepEqual(await dbTables(t, f.pid), ['every_type']);

    // rows go in; unique columns reject duplicates; NOT NULL columns reject NULL
    const row = { t_text: 'a', t_int: 1, t_bool: true, t_ts: '2026-01-01T00:00:00.000Z', t_date: '2026-01-01', t_json: '{"k":1}', created: '2026-01-01T00:00:00.000Z', required: 'r1' };
    await insert(t, f.pid, 'every_type', row);
    await rejectsUnique(() => insert(t, f.pid, 'every_type', { ...row, required: 'r2' }), 't_text is unique');
    await rejectsUnique(() => insert(t, f.pid, 'every_type', { ...row, t_text: 'b' }), 'required is unique');
    await insert(t, f.pid, 'every_type', { ...row, t_text: 'b', required: 'r2' }); // t_int is only indexed
    await assert.rejects(
      () => insert(t, f.pid, 'every_type', { ...row, t_text: 'c', required: null }),
      (err: unknown) => err instanceof NotNullViolation,
    );
    await assert.rejects(
      () => insert(t, f.pid, 'every_type', { ...row, t_text: 'd', required: 'r4', created: null }),
      (err: unknown) => err instanceof NotNullViolation,
    );
    const stored = await rows(t, f.pid, 'every_type', 't_text, t_int');
    assert.deepEqual(stored.map((r) => [r.t_text, Number(r.t_int)]), [
      ['a', 1],
      ['b', 1],
    ]);
  });

  test('a table without columns has just id; list is oldest first; get by id', async () => {
    const t = ctx();
    const f = await setup(t);
    assert.deepEqual(await f.list(), []);
    const a = await f.create({ name: 'alpha', columns: [] });
    assert.equal(a.status, 201);
    assert.deepEqual(a.body.columns, [ID_COLUMN]);
    t.clock.advance(1000);
    const b = await f.create({ name: 'beta', columns: [{ name: 'x', type: 'text' }] });
    t.clock.advance(-1000);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
    assert.deepEqual(await f.list(), [a.body, b.body]);
    const got = await f.get(b.body.id);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, b.body);
    await insert(t, f.pid, 'alpha', {});
    assert.deepEqual((await rows(t, f.pid, 'alpha')).map((r) => Number(r.id)), [1]);
  });

  test('text defaults named like Object.prototype members are ordinary literals', async () => {
    const t = ctx();
    const f = await setup(t);
    const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];
    const res = await f.create({ name: 'protos', columns: names.map((v, i) => ({ name: `c${i}`, type: 'text', default: v })) });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body.columns.slice(1).map((c: { default: unknown }) => c.default), names);
    await insert(t, f.pid, 'protos', { c0: 'x' });
    const added = await f.patch(res.body.id, { add_columns: [{ name: 'late', type: 'text', nullable: false, default: 'valueOf' }] });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual((await rows(t, f.pid, 'protos', '"late"')).map((r) => r.late), ['valueOf'], 'backfilled as a literal');
  });

  test('SQL keywords and odd-but-valid names are ordinary table and column names', async () => {
    const t = ctx();
    const f = await setup(t);
    const names = ['select', 'order', 'user', 'table', '_', 'a'.repeat(63), 'x1_2'];
    for (const name of names) {
      const res = await f.create({
        name,
        columns: [
          { name: 'from', type: 'text', unique: true },
          { name: 'where', type: 'integer', indexed: true },
          { name: 'group', type: 'boolean' },
          { name: 'b'.repeat(63), type: 'text' },
        ],
      });
      assert.equal(res.status, 201, `${name}: ${JSON.stringify(res.body)}`);
      await insert(t, f.pid, name, { from: 'f', where: 1, group: true });
      await rejectsUnique(() => insert(t, f.pid, name, { from: 'f' }), `${name}.from is unique`);
    }
    assert.deepEqual(await dbTables(t, f.pid), [...names].sort());
  });

  test('duplicate table name is 409 duplicate_table and changes nothing', async () => {
    const t = ctx();
    const f = await setup(t);
    assert.equal((await f.create({ name: 'dup', columns: [{ name: 'a', type: 'text' }] })).status, 201);
    await insert(t, f.pid, 'dup', { a: 'kept' });
    const before = await state(t, f);
    const err = expectError(await f.create({ name: 'dup', columns: [{ name: 'b', type: 'integer' }] }), 409, 'duplicate_table');
    assert.ok(JSON.stringify(err).includes('dup'));
    assert.deepEqual(await state(t, f), before);
    assert.deepEqual(await rows(t, f.pid, 'dup', 'a'), [{ a: 'kept' }]);
  });

  test('duplicate columns in one create are 409 duplicate_column; no table is created', async () => {
    const t = ctx();
    const f = await setup(t);
    const before = await state(t, f);
    expectError(
      await f.create({ name: 'twice', columns: [{ name: 'a', type: 'text' }, { name: 'b', type: 'text' }, { name: 'a', type: 'integer' }] }),
      409,
      'duplicate_column',
    );
    assert.deepEqual(await state(t, f), before);
    assert.deepEqual(await dbTables(t, f.pid), []);
  });

  test('100 columns are accepted, 101 are 422', async () => {
    const t = ctx();
    const f = await setup(t);
    const cols = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, type: 'integer' }));
    const ok = await f.create({ name: 'wide', columns: cols(100) });
    assert.equal(ok.status, 201);
    assert.equal(ok.body.columns.length, 101);
    assert.equal((await dbColumns(t, f.pid, 'wide')).length, 101);
    const before = await state(t, f);
    expectError(await f.create({ name: 'too_wide', columns: cols(101) }), 422);
    expectError(await f.patch(ok.body.id, { add_columns: [{ name: 'one_more', type: 'text' }] }), 422);
    assert.deepEqual(await state(t, f), before);
  });

  // --- bad create input: 4xx, and the table list and the database are unchanged ------------------
  let shared: Promise<Fixture> | undefined;
  const fixture = (t: TestApp) =>
    (shared ??= (async () => {
      const f = await setup(t);
      assert.equal((await f.create({ name: 'existing', columns: [{ name: 'a', type: 'text', unique: true }] })).status, 201);
      return f;
    })());
  let n = 0;
  const C = (c: Record<string, unknown>) => ({ name: `bad_${++n}`, columns: [c] });
  const badCreate: [string, unknown, number, string][] = [
    ['empty name', { name: '', columns: [] }, 422, 'validation_failed'],
    ['64-char name', { name: 'a'.repeat(64), columns: [] }, 422, 'validation_failed'],
    ['10,000-char name', { name: 'a'.repeat(10_000), columns: [] }, 422, 'validation_failed'],
    ['uppercase name', { name: 'Users', columns: [] }, 422, 'invalid_name'],
    ['leading digit', { name: '1abc', columns: [] }, 422, 'invalid_name'],
    ['SQL in name', { name: 'x; drop table', columns: [] }, 422, 'invalid_name'],
    ['SQL comment in name', { name: 'x--', columns: [] }, 422, 'invalid_name'],
    ['double quotes', { name: '"a"', columns: [] }, 422, 'invalid_name'],
    ['embedded quote', { name: 'a"b', columns: [] }, 422, 'invalid_name'],
    ['backticks', { name: '`a`', columns: [] }, 422, 'invalid_name'],
    ['dash', { name: 'a-b', columns: [] }, 422, 'invalid_name'],
    ['dot', { name: 'public.a', columns: [] }, 422, 'invalid_name'],
    ['space', { name: 'a b', columns: [] }, 422, 'invalid_name'],
    ['leading space', { name: ' a', columns: [] }, 422, 'invalid_name'],
    ['trailing newline', { name: 'a\n', columns: [] }, 422, 'invalid_name'],
    ['Cyrillic look-alike', { name: 't\u0430ble', columns: [] }, 422, 'invalid_name'],
    ['fullwidth letters', { name: 'ｔａｂｌｅ', columns: [] }, 422, 'invalid_name'],
    ['accented letter', { name: 'café', columns: [] }, 422, 'invalid_name'],
    ['reserved _bp_ prefix', { name: '_bp_x', columns: [] }, 422, 'invalid_name'],
    ['internal table _bp_tables', { name: '_bp_tables', columns: [] }, 422, 'invalid_name'],
    ['table named __proto__', { name: '__proto__', columns: [] }, 422, 'invalid_name'],
    ['number name', { name: 5, columns: [] }, 422, 'validation_failed'],
    ['null name', { name: null, columns: [] }, 422, 'validation_failed'],
    ['missing name', { columns: [] }, 422, 'validation_failed'],
    ['missing columns', { name: 'bad' }, 422, 'validation_failed'],
    ['columns an object', { name: 'bad', columns: { a: 'text' } }, 422, 'validation_failed'],
    ['column a string', { name: 'bad', columns: ['a text'] }, 422, 'validation_failed'],
    ['column named id', C({ name: 'id', type: 'integer' }), 422, 'invalid_name'],
    ['column named ID', C({ name: 'ID', type: 'integer' }), 422, 'invalid_name'],
    ['column with _bp_ prefix', C({ name: '_bp_c', type: 'text' }), 422, 'invalid_name'],
    ['column with SQL', C({ name: 'a) ; drop table existing; --', type: 'text' }), 422, 'invalid_name'],
    ['column with quote', C({ name: 'a"', type: 'text' }), 422, 'invalid_name'],
    ['column Cyrillic', C({ name: '\u0430', type: 'text' }), 422, 'invalid_name'],
    ['column named __proto__', C({ name: '__proto__', type: 'text' }), 422, 'invalid_name'],
    ['64-char column', C({ name: 'c'.repeat(64), type: 'text' }), 422, 'validation_failed'],
    ['empty column name', C({ name: '', type: 'text' }), 422, 'validation_failed'],
    ['missing column name', C({ type: 'text' }), 422, 'validation_failed'],
    ['missing type', C({ name: 'a' }), 422, 'validation_failed'],
    ['unknown type', C({ name: 'a', type: 'varchar' }), 422, 'validation_failed'],
    ['upper-case type', C({ name: 'a', type: 'TEXT' }), 422, 'validation_failed'],
    ['SQL type', C({ name: 'a', type: 'text; drop table existing' }), 422, 'validation_failed'],
    ['nullable a string', C({ name: 'a', type: 'text', nullable: 'yes' }), 422, 'validation_failed'],
    ['nullable null', C({ name: 'a', type: 'text', nullable: null }), 422, 'validation_failed'],
    ['unique a number', C({ name: 'a', type: 'text', unique: 1 }), 422, 'validation_failed'],
    ['indexed a string', C({ name: 'a', type: 'text', indexed: 'true' }), 422, 'validation_failed'],
    ['unknown column field', C({ name: 'a', type: 'text', primary_key: true }), 422, 'unknown_field'],
    ['unknown column field length', C({ name: 'a', type: 'text', length: 5 }), 422, 'unknown_field'],
    ['unknown top-level field', { name: 'bad', columns: [], temporary: true }, 422, 'unknown_field'],
    ['101 columns', { name: 'bad', columns: Array.from({ length: 101 }, (_, i) => ({ name: `c${i}`, type: 'text' })) }, 422, 'validation_failed'],
    ['string default for integer', C({ name: 'a', type: 'integer', default: '5' }), 422, 'invalid_default'],
    ['1.5 for integer', C({ name: 'a', type: 'integer', default: 1.5 }), 422, 'invalid_default'],
    ['2^53 for integer', C({ name: 'a', type: 'integer', default: 2 ** 53 }), 422, 'invalid_default'],
    ['boolean for integer', C({ name: 'a', type: 'integer', default: true }), 422, 'invalid_default'],
    ['now() for integer', C({ name: 'a', type: 'integer', default: 'now()' }), 422, 'invalid_default'],
    ['$auth.email for integer', C({ name: 'a', type: 'integer', default: '$auth.email' }), 422, 'invalid_default'],
    ['string for number', C({ name: 'a', type: 'number', default: '1.5' }), 422, 'invalid_default'],
    ['number for boolean', C({ name: 'a', type: 'boolean', default: 1 }), 422, 'invalid_default'],
    ['string for boolean', C({ name: 'a', type: 'boolean', default: 'true' }), 422, 'invalid_default'],
    ['number for text', C({ name: 'a', type: 'text', default: 5 }), 422, 'invalid_default'],
    ['object for text', C({ name: 'a', type: 'text', default: { a: 1 } }), 422, 'invalid_default'],
    ['NUL in text default', C({ name: 'a', type: 'text', default: 'a\u0000b' }), 422, 'nul_character'],
    ['now() for json (markers are reserved strings)', C({ name: 'a', type: 'json', default: 'now()' }), 422, 'invalid_default'],
    ['$auth.id for text', C({ name: 'a', type: 'text', default: '$auth.id' }), 422, 'invalid_default'],
    ['now() for text', C({ name: 'a', type: 'text', default: 'now()' }), 422, 'invalid_default'],
    ['abc for timestamp', C({ name: 'a', type: 'timestamp', default: 'abc' }), 422, 'invalid_default'],
    ['timestamp without zone', C({ name: 'a', type: 'timestamp', default: '2026-01-01T10:00:00' }), 422, 'invalid_default'],
    ['timestamp 2026-02-30', C({ name: 'a', type: 'timestamp', default: '2026-02-30T00:00:00Z' }), 422, 'invalid_default'],
    ['number for timestamp', C({ name: 'a', type: 'timestamp', default: 1767225600000 }), 422, 'invalid_default'],
    ['$auth.id for timestamp', C({ name: 'a', type: 'timestamp', default: '$auth.id' }), 422, 'invalid_default'],
    ['2026-02-30 for date', C({ name: 'a', type: 'date', default: '2026-02-30' }), 422, 'invalid_default'],
    ['2026-02-29 for date', C({ name: 'a', type: 'date', default: '2026-02-29' }), 422, 'invalid_default'],
    ['2026-1-1 for date', C({ name: 'a', type: 'date', default: '2026-1-1' }), 422, 'invalid_default'],
    ['timestamp for date', C({ name: 'a', type: 'date', default: '2026-01-01T00:00:00Z' }), 422, 'invalid_default'],
    ['NUL in json default', C({ name: 'a', type: 'json', default: { k: 'a\u0000' } }), 422, 'nul_character'],
    ['array body', [{ name: 'bad', columns: [] }], 422, 'validation_failed'],
    ['null body', null, 422, 'validation_failed'],
  ];
  for (const [name, body, status, code] of badCreate) {
    test(`create rejects ${name} (${status} ${code}) and changes nothing`, async () => {
      const t = ctx();
      const f = await fixture(t);
      const before = await state(t, f);
      const err = expectError(await f.create(body), status, code);
      if (err.details && typeof err.details === 'object') assert.equal(typeof err.details.field, 'string', 'names the field');
      if (code === 'invalid_default') assert.equal(err.details.field, 'columns[0].default');
      assert.deepEqual(await state(t, f), before);
    });
  }

  test('create rejects an infinite number default (1e999) and malformed JSON; nothing changes', async () => {
    const t = ctx();
    const f = await fixture(t);
    const before = await state(t, f);
    expectError(await t.req('POST', f.base, { token: f.token, rawBody: '{"name":"bad","columns":[{"name":"a","type":"number","default":1e999}]}' }), 422, 'invalid_default');
    expectError(await t.req('POST', f.base, { token: f.token, rawBody: '{"name":"bad","columns":[' }), 400, 'invalid_json');
    expectError(await t.req('POST', f.base, { token: f.token, rawBody: '{"name":"bad","columns":[],"__proto__":{"x":1}}' }), 422, 'unknown_field');
    assert.deepEqual(await state(t, f), before);
  });

  test('engine-specific names (sqlite_*, PostgreSQL system columns) are a clean 422 or work, never a 500', async () => {
    const t = ctx();
    const f = await setup(t);
    const tryCreate = async (body: { name: string; columns: { name: string; type: string }[] }) => {
      const before = await state(t, f);
      const res = await f.create(body);
      if (res.status === 201) {
        await insert(t, f.pid, body.name, Object.fromEntries(body.columns.map((c) => [c.name, 'v'])));
        return;
      }
      try {
        expectError(res, 422);
      } catch (err) {
        throw new Error(`${JSON.stringify(body)}: ${(err as Error).message}`);
      }
      assert.deepEqual(await state(t, f), before);
    };
    await tryCreate({ name: 'sqlite_data', columns: [] });
    await tryCreate({ name: 'sqlite_sequence', columns: [] });
    await tryCreate({ name: 'pg_data', columns: [] });
    for (const c of ['xmin', 'xmax', 'cmin', 'cmax', 'ctid', 'tableoid', 'oid', 'rowid', '_rowid_']) await tryCreate({ name: `t_${c.replace(/_/g, '')}`, columns: [{ name: c, type: 'text' }] });
  });

  // --- alter ---------------------------------------------------------------------------------------
  test('rename table: 200, same id and columns, rows kept, the old name is free', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (await f.create({ name: 'old_name', columns: [{ name: 'a', type: 'text', unique: true }] })).body;
    await insert(t, f.pid, 'old_name', { a: 'row' });
    const res = await f.patch(created.id, { name: 'new_name' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...created, name: 'new_name' });
    assert.deepEqual((await f.get(created.id)).body, res.body);
    assert.deepEqual(await dbTables(t, f.pid), ['new_name']);
    assert.deepEqual(await rows(t, f.pid, 'new_name', 'a'), [{ a: 'row' }]);
    await rejectsUnique(() => insert(t, f.pid, 'new_name', { a: 'row' }), 'unique index follows the rename');
    assert.equal((await f.create({ name: 'old_name', columns: [] })).status, 201);
    // same name is a no-op, not a conflict
    assert.equal((await f.patch(created.id, { name: 'new_name' })).status, 200);
  });

  test('add columns: every type and flag; a literal default fills existing rows', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (await f.create({ name: 'items', columns: [{ name: 'a', type: 'text' }] })).body;
    await insert(t, f.pid, 'items', { a: 'one' });
    await insert(t, f.pid, 'items', { a: 'two' });
    const res = await f.patch(created.id, {
      add_columns: [
        { name: 'qty', type: 'integer', nullable: false, default: 7 },
        { name: 'price', type: 'number', default: 2.5, indexed: true },
        { name: 'tag', type: 'text', unique: true },
        { name: 'ok', type: 'boolean', default: true },
        { name: 'at', type: 'timestamp', default: 'now()' },
        { name: 'on_day', type: 'date', default: '2026-03-01' },
        { name: 'meta', type: 'json', default: { k: 1 } },
        { name: 'who', type: 'integer', default: '$auth.id' },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.columns, [
      ID_COLUMN,
      col('a', 'text'),
      col('qty', 'integer', { nullable: false, default: 7 }),
      col('price', 'number', { default: 2.5, indexed: true }),
      col('tag', 'text', { unique: true }),
      col('ok', 'boolean', { default: true }),
      col('at', 'timestamp', { default: 'now()' }),
      col('on_day', 'date', { default: '2026-03-01' }),
      col('meta', 'json', { default: { k: 1 } }),
      col('who', 'integer', { default: '$auth.id' }),
    ]);
    assert.deepEqual((await f.get(created.id)).body, res.body);
    const types = SQL_TYPES[t.kind]!;
    assert.deepEqual(
      (await dbColumns(t, f.pid, 'items')).map((c) => [c.name, c.type]),
      res.body.columns.map((c: { name: string; type: string }) => [c.name, types[c.type]]),
    );
    assert.deepEqual(await dbIndexes(t, f.pid, 'items'), ['index:price', 'unique:tag']);
    const stored = await rows(t, f.pid, 'items', 'a, qty, price, tag, on_day');
    assert.deepEqual(
      stored.map((r) => [r.a, Number(r.qty), Number(r.price), r.tag, r.on_day]),
      [
        ['one', 7, 2.5, null, '2026-03-01'],
        ['two', 7, 2.5, null, '2026-03-01'],
      ],
    );
    await insert(t, f.pid, 'items', { a: 'three', qty: 1, tag: 'x' });
    await rejectsUnique(() => insert(t, f.pid, 'items', { a: 'four', qty: 1, tag: 'x' }), 'added unique column is enforced');
  });

  test('a non-nullable column added later is NOT NULL in the database too', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (await f.create({ name: 'items', columns: [{ name: 'a', type: 'text' }] })).body;
    await insert(t, f.pid, 'items', { a: 'existing' });
    assert.equal((await f.patch(created.id, { add_columns: [{ name: 'qty', type: 'integer', nullable: false, default: 1 }] })).status, 200);
    const qty = (await dbColumns(t, f.pid, 'items')).find((c) => c.name === 'qty');
    assert.equal(qty?.notnull, true, `qty NOT NULL in the ${t.kind} schema, as for columns created with the table`);
    await assert.rejects(
      () => insert(t, f.pid, 'items', { a: 'new', qty: null }),
      (err: unknown) => err instanceof NotNullViolation,
    );
  });

  test('drop columns: gone from the definition and the database with their indexes; the name can be added again', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (
      await f.create({
        name: 'items',
        columns: [
          { name: 'a', type: 'text', unique: true },
          { name: 'b', type: 'integer', indexed: true },
          { name: 'c', type: 'json' },
        ],
      })
    ).body;
    await insert(t, f.pid, 'items', { a: 'x', b: 1, c: '[1]' });
    const res = await f.patch(created.id, { drop_columns: ['a', 'c'] });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.columns, [ID_COLUMN, col('b', 'integer', { indexed: true })]);
    assert.deepEqual((await f.get(created.id)).body, res.body);
    assert.deepEqual(
      (await dbColumns(t, f.pid, 'items')).map((c) => c.name),
      ['id', 'b'],
    );
    assert.deepEqual(await dbIndexes(t, f.pid, 'items'), ['index:b']);
    const db = await t.engine.project(f.pid);
    await assert.rejects(() => db.all(`SELECT ${quoteIdent('a')} FROM ${db.t('items')}`), 'column a is really gone');
    assert.deepEqual((await rows(t, f.pid, 'items', 'b')).map((r) => Number(r.b)), [1]);
    // re-adding the name gives a fresh, empty column
    const again = await f.patch(created.id, { add_columns: [{ name: 'a', type: 'integer' }] });
    assert.equal(again.status, 200);
    assert.deepEqual(await rows(t, f.pid, 'items', 'a'), [{ a: null }]);
    await insert(t, f.pid, 'items', { a: 5 });
    await insert(t, f.pid, 'items', { a: 5 }); // no longer unique
  });

  test('rename columns: data kept, constraints follow, the old name is free', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (
      await f.create({
        name: 'items',
        columns: [
          { name: 'a', type: 'text', unique: true, nullable: false },
          { name: 'b', type: 'integer', default: 3 },
        ],
      })
    ).body;
    await insert(t, f.pid, 'items', { a: 'kept', b: 9 });
    const res = await f.patch(created.id, { rename_columns: { a: 'title', b: 'count' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.columns, [ID_COLUMN, col('title', 'text', { unique: true, nullable: false }), col('count', 'integer', { default: 3 })]);
    assert.deepEqual(
      (await dbColumns(t, f.pid, 'items')).map((c) => [c.name, c.notnull]),
      [
        ['id', c0NotNull(t)],
        ['title', true],
        ['count', false],
      ],
    );
    const stored = await rows(t, f.pid, 'items', 'title, count');
    assert.deepEqual(stored.map((r) => [r.title, Number(r.count)]), [['kept', 9]]);
    await rejectsUnique(() => insert(t, f.pid, 'items', { title: 'kept' }), 'unique follows the rename');
    const readd = await f.patch(created.id, { add_columns: [{ name: 'a', type: 'text' }] });
    assert.equal(readd.status, 200, 'old name is free');
  });

  test('combined PATCH: rename table, drop, rename and add columns in one request', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (
      await f.create({
        name: 'items',
        columns: [
          { name: 'a', type: 'text', unique: true },
          { name: 'b', type: 'integer' },
          { name: 'c', type: 'boolean' },
        ],
      })
    ).body;
    await insert(t, f.pid, 'items', { a: 'x', b: 2, c: true });
    const res = await f.patch(created.id, {
      name: 'goods',
      drop_columns: ['a'],
      rename_columns: { b: 'amount' },
      add_columns: [
        { name: 'a', type: 'date', default: '2026-01-02' },
        { name: 'b', type: 'text', unique: true },
      ],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.id, created.id);
    assert.equal(res.body.name, 'goods');
    assert.deepEqual(res.body.columns, [ID_COLUMN, col('amount', 'integer'), col('c', 'boolean'), col('a', 'date', { default: '2026-01-02' }), col('b', 'text', { unique: true })]);
    assert.deepEqual((await f.get(created.id)).body, res.body);
    assert.deepEqual(await dbTables(t, f.pid), ['goods']);
    const types = SQL_TYPES[t.kind]!;
    assert.deepEqual(
      (await dbColumns(t, f.pid, 'goods')).map((c) => [c.name, c.type]),
      res.body.columns.map((c: { name: string; type: string }) => [c.name, types[c.type]]),
    );
    assert.deepEqual(await dbIndexes(t, f.pid, 'goods'), ['unique:b']);
    const stored = await rows(t, f.pid, 'goods', 'amount, a, b');
    assert.deepEqual(stored.map((r) => [Number(r.amount), r.a, r.b]), [[2, '2026-01-02', null]]);
  });

  let alterShared: Promise<Fixture & { tableId: string }> | undefined;
  const alterFixture = (t: TestApp) =>
    (alterShared ??= (async () => {
      const f = await setup(t);
      const items = await f.create({
        name: 'items',
        columns: [
          { name: 'a', type: 'text', unique: true },
          { name: 'b', type: 'integer', indexed: true },
          { name: 'c', type: 'text' },
        ],
      });
      assert.equal(items.status, 201);
      assert.equal((await f.create({ name: 'other', columns: [] })).status, 201);
      await insert(t, f.pid, 'items', { a: 'r1', b: 1, c: 'x' });
      await insert(t, f.pid, 'items', { a: 'r2', b: 2, c: 'y' });
      return { ...f, tableId: items.body.id as string };
    })());
  const many = Array.from({ length: 98 }, (_, i) => ({ name: `m${i}`, type: 'text' }));
  const badAlter: [string, unknown, number, string][] = [
    ['drop unknown column', { drop_columns: ['nope'] }, 422, 'unknown_column'],
    ['drop id', { drop_columns: ['id'] }, 422, 'invalid_name'],
    ['drop the same column twice', { drop_columns: ['c', 'c'] }, 422, 'validation_failed'],
    ['drop SQL', { drop_columns: ['a"; drop table other; --'] }, 422, 'unknown_column'],
    ['drop_columns a string', { drop_columns: 'c' }, 422, 'validation_failed'],
    ['rename id', { rename_columns: { id: 'ident' } }, 422, 'invalid_name'],
    ['rename unknown column', { rename_columns: { nope: 'x' } }, 422, 'unknown_column'],
    ['rename to an existing column', { rename_columns: { a: 'b' } }, 409, 'duplicate_column'],
    ['rename two columns to one name', { rename_columns: { a: 'z', b: 'z' } }, 409, 'duplicate_column'],
    ['rename to id', { rename_columns: { a: 'id' } }, 422, 'invalid_name'],
    ['rename to uppercase', { rename_columns: { a: 'Alpha' } }, 422, 'invalid_name'],
    ['rename to _bp_', { rename_columns: { a: '_bp_a' } }, 422, 'invalid_name'],
    ['rename to __proto__', { rename_columns: { a: '__proto__' } }, 422, 'invalid_name'],
    ['rename a __proto__ key', { rename_columns: JSON.parse('{"__proto__": "z"}') }, 422, 'unknown_column'],
    ['rename to a 64-char name', { rename_columns: { a: 'z'.repeat(64) } }, 422, 'validation_failed'],
    ['rename to a number', { rename_columns: { a: 5 } }, 422, 'validation_failed'],
    ['rename_columns an array', { rename_columns: [['a', 'z']] }, 422, 'validation_failed'],
    ['rename a dropped column', { drop_columns: ['c'], rename_columns: { c: 'z' } }, 422, 'unknown_column'],
    ['add an existing column', { add_columns: [{ name: 'a', type: 'text' }] }, 409, 'duplicate_column'],
    ['add the same column twice', { add_columns: [{ name: 'n', type: 'text' }, { name: 'n', type: 'integer' }] }, 409, 'duplicate_column'],
    ['add onto a rename target', { rename_columns: { a: 'n' }, add_columns: [{ name: 'n', type: 'text' }] }, 409, 'duplicate_column'],
    ['add id', { add_columns: [{ name: 'id', type: 'integer' }] }, 422, 'invalid_name'],
    ['add an invalid name', { add_columns: [{ name: 'New Col', type: 'text' }] }, 422, 'invalid_name'],
    ['add __proto__', { add_columns: [{ name: '__proto__', type: 'text' }] }, 422, 'invalid_name'],
    ['add non-nullable without default', { add_columns: [{ name: 'n', type: 'text', nullable: false }] }, 422, 'validation_failed'],
    ['add non-nullable with now()', { add_columns: [{ name: 'n', type: 'timestamp', nullable: false, default: 'now()' }] }, 422, 'validation_failed'],
    ['add non-nullable with $auth.id', { add_columns: [{ name: 'n', type: 'integer', nullable: false, default: '$auth.id' }] }, 422, 'validation_failed'],
    ['add with an invalid default', { add_columns: [{ name: 'n', type: 'integer', default: 'x' }] }, 422, 'invalid_default'],
    ['add an unknown type', { add_columns: [{ name: 'n', type: 'blob' }] }, 422, 'validation_failed'],
    ['add with an unknown field', { add_columns: [{ name: 'n', type: 'text', check: 'n > 0' }] }, 422, 'unknown_field'],
    ['add beyond 100 columns', { add_columns: many }, 422, 'validation_failed'],
    ['add a unique column with a default on existing rows', { add_columns: [{ name: 'n', type: 'integer', default: 5, unique: true }] }, 409, 'unique_violation'],
    ['rename table to an existing name', { name: 'other' }, 409, 'duplicate_table'],
    ['rename table to an invalid name', { name: 'Items' }, 422, 'invalid_name'],
    ['rename table to _bp_tables', { name: '_bp_tables' }, 422, 'invalid_name'],
    ['rename table to __proto__', { name: '__proto__' }, 422, 'invalid_name'],
    ['rename table to a 64-char name', { name: 't'.repeat(64) }, 422, 'validation_failed'],
    ['rename table to null', { name: null }, 422, 'validation_failed'],
    ['unknown field', { name: 'items2', columns: [] }, 422, 'unknown_field'],
    ['valid steps then one bad drop', { name: 'items2', rename_columns: { c: 'cc' }, add_columns: [{ name: 'n', type: 'text' }], drop_columns: ['b', 'nope'] }, 422, 'unknown_column'],
    ['valid steps then a table name clash', { drop_columns: ['c'], rename_columns: { b: 'bb' }, name: 'other' }, 409, 'duplicate_table'],
    ['valid steps then a unique violation', { name: 'items2', drop_columns: ['c'], add_columns: [{ name: 'n', type: 'text', default: 'same', unique: true }] }, 409, 'unique_violation'],
    ['array body', [{ name: 'items2' }], 422, 'validation_failed'],
  ];
  for (const [name, body, status, code] of badAlter) {
    test(`PATCH rejects ${name} (${status} ${code}) and changes nothing`, async () => {
      const t = ctx();
      const f = await alterFixture(t);
      const before = await state(t, f);
      const rowsBefore = await rows(t, f.pid, 'items');
      expectError(await f.patch(f.tableId, body), status, code);
      assert.deepEqual(await state(t, f), before);
      assert.deepEqual(await rows(t, f.pid, 'items'), rowsBefore);
    });
  }

  test('PATCH with malformed JSON is 400 and changes nothing', async () => {
    const t = ctx();
    const f = await alterFixture(t);
    const before = await state(t, f);
    expectError(await t.req('PATCH', `${f.base}/${f.tableId}`, { token: f.token, rawBody: '{"drop_columns": ["a"' }), 400, 'invalid_json');
    assert.deepEqual(await state(t, f), before);
  });

  test('renaming a table or column to an engine-specific name is a clean 422 or works, never a 500', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (await f.create({ name: 'items', columns: [{ name: 'a', type: 'text' }] })).body;
    for (const body of [{ name: 'sqlite_items' }, { rename_columns: { a: 'ctid' } }, { add_columns: [{ name: 'xmin', type: 'integer' }] }]) {
      const before = await state(t, f);
      const res = await f.patch(created.id, body);
      if (res.status === 200) continue;
      try {
        expectError(res, 422);
      } catch (err) {
        throw new Error(`${JSON.stringify(body)}: ${(err as Error).message}`);
      }
      assert.deepEqual(await state(t, f), before);
    }
  });

  // --- delete --------------------------------------------------------------------------------------
  test('delete table: 204, then 404; rows gone; the name can be reused for a fresh table', async () => {
    const t = ctx();
    const f = await setup(t);
    const created = (await f.create({ name: 'gone', columns: [{ name: 'a', type: 'text', unique: true }] })).body;
    const keep = (await f.create({ name: 'keep', columns: [] })).body;
    await insert(t, f.pid, 'gone', { a: 'x' });
    const res = await t.req('DELETE', `${f.base}/${created.id}`, { token: f.token });
    assert.equal(res.status, 204);
    assert.equal(res.body, '');
    expectError(await f.get(created.id), 404, 'not_found');
    expectError(await f.patch(created.id, { name: 'zombie' }), 404, 'not_found');
    expectError(await t.req('DELETE', `${f.base}/${created.id}`, { token: f.token }), 404, 'not_found');
    assert.deepEqual(await f.list(), [keep]);
    assert.deepEqual(await dbTables(t, f.pid), ['keep']);
    const again = await f.create({ name: 'gone', columns: [{ name: 'b', type: 'integer' }] });
    assert.equal(again.status, 201);
    assert.notEqual(again.body.id, created.id);
    assert.deepEqual(await rows(t, f.pid, 'gone'), [], 'the new table is empty');
    assert.deepEqual(
      (await dbColumns(t, f.pid, 'gone')).map((c) => c.name),
      ['id', 'b'],
    );
    expectError(await f.get(created.id), 404, 'not_found');
  });

  test('a table id of another project of the same owner is 404 on get, patch and delete', async () => {
    const t = ctx();
    const f = await setup(t);
    const other = await createProject(t, f.token, 'other');
    const foreign = await t.req('POST', `/projects/${other.id}/tables`, { token: f.token, body: { name: 'foreign', columns: [] } });
    assert.equal(foreign.status, 201);
    const before = await state(t, f);
    expectError(await f.get(foreign.body.id), 404, 'not_found');
    expectError(await f.patch(foreign.body.id, { name: 'stolen' }), 404, 'not_found');
    expectError(await t.req('DELETE', `${f.base}/${foreign.body.id}`, { token: f.token }), 404, 'not_found');
    assert.deepEqual(await state(t, f), before);
    assert.deepEqual((await t.req('GET', `/projects/${other.id}/tables/${foreign.body.id}`, { token: f.token })).body, foreign.body);
  });
});

/** Whether the implicit id column reports NOT NULL (SQLite does not for INTEGER PRIMARY KEY). */
function c0NotNull(t: TestApp): boolean {
  return t.kind === 'postgres';
}
