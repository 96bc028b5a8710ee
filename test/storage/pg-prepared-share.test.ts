// On a fresh PostgreSQL pool (no statement of other tests on its connections): a statement is
// prepared the second time it runs; a project sending ever new statements takes at most its share
// (64) of a connection's named prepared statements, another project's are still named on the same
// connection, and one whose share holds an earlier schema version's statements gets a new
// connection after enough unnamed ones (storage/postgres/prepared-names.ts). Statements run one
// after the other, so each project's run on its own lane's connection (pool-lanes.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openTestEngine } from '../support/app.ts';
import { testEngines } from '../support/postgres.ts';
import type { Db } from '../../src/storage/engine.ts';
import { laneOf } from '../../src/storage/postgres/pool-lanes.ts';
import { PostgresEngine } from '../../src/storage/postgres/postgres-engine.ts';

/** Runs a statement twice: the first run is never prepared (postgres-db.ts PgDb.prepares). */
const twice = async <T>(run: () => Promise<T>): Promise<T> => (await run(), run());

/** A project id whose lane is the same as `other`'s, in a pool of `lanes`. */
function sameLane(other: string, lanes: number, prefix: string): string {
  const lane = laneOf(PostgresEngine.schemaOf(other), lanes);
  for (let i = 0; ; i++) {
    const id = `${prefix}${i.toString(36)}`;
    if (laneOf(PostgresEngine.schemaOf(id), lanes) === lane) return id;
  }
}

const { engines } = await testEngines();

test('[postgres] a project takes at most 64 of a connection\'s prepared statements; another project still gets its own', { skip: !engines.includes('postgres') && 'PostgreSQL not reachable' }, async () => {
  const { engine, cleanup } = await openTestEngine('postgres');
  try {
    const a = 'prepshareaaaaaaa';
    const b = sameLane(a, engine.stats().pool!.max, 'prepsharebbbb');
    for (const pid of [a, b]) await engine.createProjectStore(pid);
    const [dbA, dbB] = [await engine.data(a, 0), await engine.data(b, 0)];
    // one after the other, each project's lane hands out the same idle connection each time (the two
    // projects share a lane); each probe, run twice, counts
    // the statements prepared on it that read each project's schema (a pattern spelled so that the
    // probe's own text does not match it)
    const reads = (pid: string) => `'%FROM ' || chr(34) || 'p_${pid}' || chr(34) || '%'`;
    const probe = (db: Db, tag: string) =>
      twice(async () => (await db.get<{ pid: number; a: number; b: number }>(
        `SELECT pg_backend_pid() AS pid,
           (SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE ${reads(a)})::int AS a,
           (SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE ${reads(b)})::int AS b,
           (SELECT version FROM ${db.t('_bp_meta')} WHERE id = ?) AS ${tag}`,
        [1],
      ))!);
    const first = await probe(dbA, 'a0');
    let last = first;
    for (let i = 1; i < 300; i++) last = await probe(dbA, `a${i}`);
    assert.equal(last.pid, first.pid, 'one connection');
    assert.equal(last.a, 64, "300 texts of one project: its share is named, the rest ran unnamed");
    for (let i = 0; i < 10; i++) last = await probe(dbB, `b${i}`);
    assert.equal(last.pid, first.pid);
    assert.equal(last.b, 10, "the other project's are named on the same connection");
    // more of the first project's at the same version do not replace the connection
    for (let i = 300; i < 4400; i++) last = await probe(dbA, `a${i}`);
    assert.equal(last.pid, first.pid, 'beyond its share at the same version: the connection stays');
    // at a later schema version, its share holds the earlier one's: unnamed ones replace it
    const later = await engine.data(a, 1);
    for (let i = 0; i < 4100; i++) last = await probe(later, `c${i}`);
    assert.notEqual(last.pid, first.pid, 'a new connection, which lets the earlier version go');
    assert.ok(last.a > 0 && last.a <= 64, `${last.a} named on it`);
  } finally {
    await engine.close();
    await cleanup();
  }
});

test('[postgres] a statement the server could not parse gives its place in the share back; one that failed while running keeps it, as the server does', { skip: !engines.includes('postgres') && 'PostgreSQL not reachable' }, async () => {
  const { engine, cleanup } = await openTestEngine('postgres');
  try {
    const pid = 'prepsharecccccccc';
    await engine.createProjectStore(pid);
    const db = await engine.data(pid, 0);
    const named = async () =>
      (await db.get<{ n: number }>(`SELECT (SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%' || 'non' || 'ce' || '%')::int AS n, ? AS probe`, [1]))!.n;
    await db.get(`SELECT ? AS nonce_once FROM ${db.t('_bp_meta')}`, [1]);
    assert.equal(await named(), 0, 'a statement that ran once is not prepared');
    for (let i = 0; i < 10; i++) await twice(() => db.get(`SELECT ? AS nonce${i} FROM ${db.t('_bp_meta')}`, [1]));
    assert.equal(await named(), 10);
    for (let k = 0; k < 2; k++) await assert.rejects(db.get(`SELECT nope AS nonce_bad FROM ${db.t('_bp_meta')} WHERE id = ?`, [1]));
    assert.equal(await named(), 10, 'not parsed: the server holds nothing under its name');
    // a relation named by a value: parsed, then 42P01 (the class of a parse error) while running
    for (let k = 0; k < 2; k++) await assert.rejects(db.get(`SELECT ?::text::regclass AS nonce_rel FROM ${db.t('_bp_meta')}`, ['nowhere']));
    assert.equal(await named(), 11, 'parsed, then failed while running: the server keeps it');
    // the share counts what the server holds: 64 in all, whatever failed on the way
    for (let i = 10; i < 100; i++) await twice(() => db.get(`SELECT ? AS nonce${i} FROM ${db.t('_bp_meta')}`, [1]));
    const total = (await db.get<{ n: number }>(`SELECT count(*)::int AS n, ? AS probe2 FROM pg_prepared_statements WHERE statement LIKE ${"'%FROM ' || chr(34) || 'p_"}${pid}${"' || chr(34) || '%'"}`, [1]))!.n;
    assert.equal(total + 1, 64, 'with the counting probe above, which reads no table: 64');
  } finally {
    await engine.close();
    await cleanup();
  }
});

test('[postgres] a statement whose text the process has forgotten since still runs under its name on a connection that holds it', { skip: !engines.includes('postgres') && 'PostgreSQL not reachable' }, async () => {
  const { engine, cleanup } = await openTestEngine('postgres');
  try {
    const pid = 'prepshareddddddd';
    await engine.createProjectStore(pid);
    const db = await engine.data(pid, 0);
    const sql = `SELECT ? AS evicted FROM ${db.t('_bp_meta')}`;
    // executions of the prepared statement (PostgreSQL 14+ counts its plans); the pattern is spelled so that this probe does not match it
    const runs = async () =>
      (await db.get<{ n: number }>(`SELECT coalesce(sum(generic_plans + custom_plans), 0)::int AS n, ? AS probe FROM pg_prepared_statements WHERE statement LIKE '%AS evic' || 'ted%'`, [1]))!.n;
    await db.get(sql, [1]);
    assert.equal(await runs(), 0, 'the first run is not prepared');
    await db.get(sql, [1]);
    assert.equal(await runs(), 1, 'the second is');
    // more texts than the process remembers (4,096), each once: the first one's text is forgotten
    for (let i = 0; i < 4100; i++) await db.get(`SELECT ? AS other${i}`, [1]);
    await db.get(sql, [1]);
    assert.equal(await runs(), 2, 'run again under its name, not parsed and planned again unnamed');
  } finally {
    await engine.close();
    await cleanup();
  }
});
