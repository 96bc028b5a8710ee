// A prepared statement run again on the connection that ran it before goes as Bind, Execute and
// Sync only (storage/postgres/prepared-run.ts), with the columns its earlier run described. Its
// answer must be the one pg's own run gives: every column type's value, NULLs, the count of rows a
// write touched; its failures must be the same errors, and leave the connection usable.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openTestEngine } from '../support/app.ts';
import { PG_ADMIN_URL, testEngines } from '../support/postgres.ts';
import { PreparedRun } from '../../src/storage/postgres/prepared-run.ts';
import { DatabaseUnavailable, QueryTimeout, SchemaMismatch, UniqueViolation, type Db } from '../../src/storage/engine.ts';

const { engines } = await testEngines();
const skip = !engines.includes('postgres') && 'PostgreSQL not reachable';

/** Counts the runs that went the short way while `fn` runs. */
async function shortRuns<T>(fn: () => Promise<T>): Promise<{ result: T; runs: number }> {
  const submit = PreparedRun.prototype.submit;
  let runs = 0;
  PreparedRun.prototype.submit = function (this: PreparedRun, ...args: Parameters<typeof submit>) {
    runs++;
    return submit.apply(this, args);
  };
  try {
    return { result: await fn(), runs };
  } finally {
    PreparedRun.prototype.submit = submit;
  }
}

/** Runs a statement three times: unnamed, prepared through pg, then the short way (checked). */
async function thrice<T>(fn: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < 3; i++) {
    const { result, runs } = await shortRuns(fn);
    out.push(result);
    assert.equal(runs, i === 2 ? 1 : 0, `run ${i + 1}`);
  }
  return out;
}

/** A project's data store on an engine of its own (`env`: settings), closed after the test. */
async function project(id: string, env: Record<string, string> = {}): Promise<Db> {
  const { engine, cleanup } = await openTestEngine('postgres', env);
  after(async () => {
    await engine.close();
    await cleanup();
  });
  await engine.createProjectStore(id);
  return engine.data(id, 0);
}

test('[postgres] a statement run again on its connection answers as its first runs did, every column type and NULL; writes count their rows', { skip }, async () => {
  const db = await project('preparedrunaaaaa');
  await db.run(`CREATE TABLE ${db.t('t')} (id bigserial PRIMARY KEY, i bigint, n double precision, b boolean, ts timestamptz, d date, j jsonb, s text UNIQUE)`);
  await db.run(`INSERT INTO ${db.t('t')} (i, n, b, ts, d, j, s) VALUES (9007199254740991, 0.1, true, '2026-11-27 01:02:03.456789+00', '2026-02-28', '{"a":[1,"x"]}', 'é"\\'), (NULL, NULL, NULL, NULL, NULL, NULL, NULL)`);
  const read = () => db.all(`SELECT id, i, n, b, ts, d, j, s, i::text AS it FROM ${db.t('t')} WHERE id >= ? ORDER BY id`, [1]);
  const first = await read(); // unnamed
  const second = await read(); // prepared, through pg
  const { result: again, runs } = await shortRuns(async () => [await read(), await read()]);
  assert.equal(runs, 2, 'the later runs went the short way');
  assert.deepEqual(second, first);
  for (const rows of again) assert.deepEqual(rows, first);
  assert.deepEqual(first[0], { id: 1, i: 9007199254740991, n: 0.1, b: true, ts: '2026-11-27T01:02:03.456Z', d: '2026-02-28', j: { a: [1, 'x'] }, s: 'é"\\', it: '9007199254740991' });
  assert.deepEqual(first[1], { id: 2, i: null, n: null, b: null, ts: null, d: null, j: null, s: null, it: null });

  const update = () => db.run(`UPDATE ${db.t('t')} SET n = n WHERE id >= ?`, [1]);
  const counts = [await update(), await update(), (await shortRuns(update)).result];
  assert.deepEqual(counts, [{ changes: 2 }, { changes: 2 }, { changes: 2 }]);
  const none = () => db.all(`SELECT id FROM ${db.t('t')} WHERE id > ?`, [100]);
  await none();
  await none();
  assert.deepEqual((await shortRuns(none)).result, []);
});

test('[postgres] a statement that fails when run again the short way fails as through pg, and its connection goes on', { skip }, async () => {
  const db = await project('preparedrunbbbbb');
  await db.run(`CREATE TABLE ${db.t('u')} (id bigserial PRIMARY KEY, s text UNIQUE)`);
  const insert = (s: string) => db.run(`INSERT INTO ${db.t('u')} (s) VALUES (?)`, [s]);
  const divide = (by: number) => db.get('SELECT 1 / ?::int AS x', [by]);
  await insert('a');
  await insert('b');
  await divide(1);
  await divide(1);
  const { runs } = await shortRuns(async () => {
    await assert.rejects(insert('a'), UniqueViolation);
    await assert.rejects(divide(0), /division by zero/);
    assert.deepEqual(await divide(1), { x: 1 });
    await insert('c');
  });
  assert.equal(runs, 4, 'each went the short way');
  assert.deepEqual(await db.all(`SELECT s FROM ${db.t('u')} ORDER BY id`), [{ s: 'a' }, { s: 'b' }, { s: 'c' }]);
});

test('[postgres] the short way: RETURNING rows of a write, a column named __proto__, parameters encoded as pg encodes them, errors traced to their caller', { skip }, async () => {
  const db = await project('preparedrunccccc');
  await db.run(`CREATE TABLE ${db.t('r')} (id bigserial PRIMARY KEY, v text)`);
  let n = 0;
  const inserted = await thrice(() => db.all(`INSERT INTO ${db.t('r')} (v) SELECT x FROM unnest(ARRAY[?, ?]) AS x RETURNING id, v`, [`a${++n}`, `b${n}`]));
  assert.deepEqual(inserted[2], [{ id: 5, v: 'a3' }, { id: 6, v: 'b3' }]);
  const deleted = await thrice(() => db.run(`DELETE FROM ${db.t('r')} WHERE id <= ?`, [2 * ++n - 6]));
  assert.deepEqual(deleted, [{ changes: 2 }, { changes: 2 }, { changes: 2 }]);

  const [, viaPg, short] = await thrice(() => db.all('SELECT ?::jsonb AS "__proto__", 1 AS k', ['{"admin":true}']));
  assert.deepEqual(short, viaPg);
  assert.ok(Object.hasOwn(short![0]!, '__proto__'), 'an own key');
  assert.equal(Object.getPrototypeOf(short![0]), Object.prototype, 'not the prototype');
  assert.equal((short![0] as { admin?: boolean }).admin, undefined);

  const encoded = await thrice(() => db.get('SELECT ?::text IS NULL AS missing, ?::int[] AS a, ?::boolean AS b, ?::numeric AS n', [undefined as never, [1, 2] as never, true, 12345678901234567890n]));
  assert.deepEqual(encoded[2], encoded[0]);
  assert.deepEqual(encoded[2], { missing: true, a: [1, 2], b: true, n: '12345678901234567890' });

  const stacks: string[] = [];
  for (const by of [0, 0, 1, 0]) await db.get('SELECT 1 / ?::int AS x', [by]).catch((e: Error) => stacks.push(String(e.stack)));
  assert.equal(stacks.length, 3);
  assert.match(stacks[2]!, /postgres-db\.ts/, 'the short way\'s error names the code that ran the statement');
});

const sleeper = (db: Db) => (seconds: number) => db.get<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(?) AS z', [seconds]);

test('[postgres] the short way past the statement timeout fails as a query timeout, and its connection goes on', { skip }, async () => {
  const sleep = sleeper(await project('preparedrundddd', { STATEMENT_TIMEOUT_MS: '300' }));
  const first = await sleep(0);
  await sleep(0);
  const { result, runs } = await shortRuns(() => sleep(2).then(() => 'answered', (err) => err));
  assert.equal(runs, 1);
  assert.ok(result instanceof QueryTimeout, String(result));
  assert.equal((await sleep(0))!.pid, first!.pid, 'the same connection');
});

test('[postgres] the short way without an answer in time (PG_QUERY_TIMEOUT_MS) or on a connection that ends: 503, the connection replaced', { skip }, async () => {
  const sleep = sleeper(await project('preparedruneeee', { STATEMENT_TIMEOUT_MS: '0', PG_QUERY_TIMEOUT_MS: '500' }));
  const first = await sleep(0);
  await sleep(0);
  const { result, runs } = await shortRuns(() => sleep(3).then(() => 'answered', (err) => err));
  assert.equal(runs, 1);
  assert.ok(result instanceof DatabaseUnavailable, String(result));
  const second = await sleep(0);
  assert.notEqual(second!.pid, first!.pid, 'the connection that timed out was discarded');

  await sleep(0);
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    const pending = shortRuns(() => sleep(2).then(() => 'answered', (err) => err));
    await new Promise((r) => setTimeout(r, 100));
    await admin.query('SELECT pg_terminate_backend($1)', [second!.pid]);
    const ended = await pending;
    assert.equal(ended.runs, 1);
    assert.ok(ended.result instanceof DatabaseUnavailable, String(ended.result));
    assert.notEqual((await sleep(0))!.pid, second!.pid);
  } finally {
    await admin.end();
  }
});

test('[postgres] a statement prepared before its table was altered, run after (a request that read the schema version just before): a schema mismatch, not an unknown error', { skip }, async () => {
  const db = await project('preparedrunffff');
  await db.run(`CREATE TABLE ${db.t('a')} (id bigserial PRIMARY KEY, x integer)`);
  await db.run(`INSERT INTO ${db.t('a')} (x) VALUES (1)`);
  const read = () => db.all(`SELECT * FROM ${db.t('a')} WHERE id > ?`, [0]);
  await thrice(read);
  // the owner's change, committed between the request's schema read and its statement
  await db.tx(async (tx) => {
    await tx.run(`ALTER TABLE ${db.t('a')} DROP COLUMN x`);
    await tx.run(`ALTER TABLE ${db.t('a')} ADD COLUMN x text`);
  });
  for (const run of [read, () => shortRuns(read)]) await assert.rejects(run(), SchemaMismatch);
});
