// A prepared statement run again on the connection that ran it before goes as Bind, Execute and
// Sync only (storage/postgres/prepared-run.ts), with the columns its earlier run described. Its
// answer must be the one pg's own run gives: every column type's value, NULLs, the count of rows a
// write touched; its failures must be the same errors, and leave the connection usable.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { openTestEngine } from '../support/app.ts';
import { testEngines } from '../support/postgres.ts';
import { PreparedRun } from '../../src/storage/postgres/prepared-run.ts';
import { UniqueViolation } from '../../src/storage/engine.ts';

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

test('[postgres] a statement run again on its connection answers as its first runs did, every column type and NULL; writes count their rows', { skip }, async () => {
  const { engine, cleanup } = await openTestEngine('postgres');
  after(cleanup);
  try {
    await engine.createProjectStore('preparedrunaaaaa');
    const db = await engine.data('preparedrunaaaaa', 0);
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
  } finally {
    await engine.close();
  }
});

test('[postgres] a statement that fails when run again the short way fails as through pg, and its connection goes on', { skip }, async () => {
  const { engine, cleanup } = await openTestEngine('postgres');
  after(cleanup);
  try {
    await engine.createProjectStore('preparedrunbbbbb');
    const db = await engine.data('preparedrunbbbbb', 0);
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
  } finally {
    await engine.close();
  }
});
