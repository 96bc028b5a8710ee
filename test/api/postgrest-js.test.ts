// Compatibility: the real @supabase/postgrest-js client, pointed at {base}/{project_id}/rest over a
// real socket, reads data, counts and errors the way it does against PostgREST.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { PostgrestClient } from '@supabase/postgrest-js';
import { describeEngines, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane, type EndUserFixture } from '../support/data-plane.ts';

await describeEngines('postgrest-js compatibility', (ctx) => {
  let t: TestApp;
  let d: DataPlane;
  let base: string;
  let alice: EndUserFixture;
  let client: PostgrestClient;

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const table = await d.createTable('tasks', [
      { name: 'title', type: 'text', nullable: false },
      { name: 'done', type: 'boolean', default: false },
      { name: 'rank', type: 'integer' },
      { name: 'slug', type: 'text', unique: true },
      { name: 'owner', type: 'integer', default: '$auth.id' },
    ]);
    await d.policy(table.id, 'ALL', 'owner = $auth.id');
    alice = await d.endUser();
    client = new PostgrestClient(`${base}/${d.pid}/rest`, { headers: { Authorization: `Bearer ${d.keys.all}`, 'X-User-Token': alice.token } });
  });

  after(async () => {
    await t.app.close();
  });

  test('insert single and bulk, with and without select', async () => {
    const one = await client.from('tasks').insert({ title: 'first', rank: 1, slug: 'first' }).select().single();
    assert.equal(one.error, null);
    assert.equal(one.status, 201);
    assert.equal(one.data.title, 'first');
    assert.equal(one.data.owner, alice.id);
    const bulk = await client.from('tasks').insert([
      { title: 'second', rank: 2, slug: 'second' },
      { title: 'third', rank: 3, slug: 'third', done: true },
    ]);
    assert.equal(bulk.error, null);
    assert.equal(bulk.status, 201);
    // CONTRACT §5: representation is the default on POST (PostgREST itself defaults to minimal)
    assert.equal((bulk.data as unknown[] | null)?.length, 2);
  });

  test('select with filters, order, range and count', async () => {
    const res = await client.from('tasks').select('title, rank', { count: 'exact' }).gte('rank', 1).order('rank', { ascending: false }).range(0, 1);
    assert.equal(res.error, null);
    assert.deepEqual(res.data, [
      { title: 'third', rank: 3 },
      { title: 'second', rank: 2 },
    ]);
    assert.equal(res.count, 3);
    const f = await client.from('tasks').select('slug').or('rank.eq.1,done.is.true').order('rank');
    assert.deepEqual(f.data, [{ slug: 'first' }, { slug: 'third' }]);
    const inList = await client.from('tasks').select('slug').in('slug', ['first', 'third']).ilike('title', '%IR%');
    assert.deepEqual(inList.data, [{ slug: 'first' }, { slug: 'third' }]);
    const head = await client.from('tasks').select('*', { count: 'exact', head: true });
    assert.equal(head.count, 3);
    assert.equal(head.data, null);
  });

  test('single and maybeSingle', async () => {
    const s = await client.from('tasks').select('slug').eq('slug', 'second').single();
    assert.deepEqual(s.data, { slug: 'second' });
    const none = await client.from('tasks').select('slug').eq('slug', 'nope').single();
    assert.equal(none.data, null);
    assert.equal(none.status, 406);
    assert.equal(none.error?.code, 'not_single');
    const maybe = await client.from('tasks').select('slug').eq('slug', 'nope').maybeSingle();
    assert.equal(maybe.error, null);
    assert.equal(maybe.data, null);
    const maybeOne = await client.from('tasks').select('slug').eq('slug', 'first').maybeSingle();
    assert.deepEqual(maybeOne.data, { slug: 'first' });
  });

  test('update and delete', async () => {
    const upd = await client.from('tasks').update({ done: true }).eq('slug', 'first').select('slug, done');
    assert.equal(upd.error, null);
    assert.deepEqual(upd.data, [{ slug: 'first', done: true }]);
    const del = await client.from('tasks').delete().eq('slug', 'second');
    assert.equal(del.error, null);
    assert.equal(del.status, 204);
    const delSel = await client.from('tasks').delete().eq('slug', 'third').select('slug');
    assert.deepEqual(delSel.data, [{ slug: 'third' }]);
  });

  test('upsert on a unique column', async () => {
    const up = await client.from('tasks').upsert([{ slug: 'first', title: 'first v2' }, { slug: 'new', title: 'new' }], { onConflict: 'slug' }).select('slug, title').order('slug');
    assert.equal(up.error, null, JSON.stringify(up.error));
    assert.deepEqual(up.data, [
      { slug: 'first', title: 'first v2' },
      { slug: 'new', title: 'new' },
    ]);
    const ignore = await client.from('tasks').upsert({ slug: 'new', title: 'ignored' }, { onConflict: 'slug', ignoreDuplicates: true }).select();
    assert.deepEqual(ignore.data, []);
  });

  test('error shapes reach the client', async () => {
    const unknown = await client.from('tasks').select('nope');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.error?.code, 'unknown_column');
    assert.ok(unknown.error?.message);
    const typed = await client.from('tasks').insert({ title: 'x', rank: 'high' });
    assert.equal(typed.status, 422);
    assert.equal(typed.error?.code, 'invalid_value');
    const dup = await client.from('tasks').insert({ title: 'x', slug: 'new' });
    assert.equal(dup.status, 409);
    const rls = await client.from('tasks').insert({ title: 'x', owner: alice.id + 1000 });
    assert.equal(rls.status, 403);
    assert.equal(rls.error?.code, 'rls_violation');
    const noFilter = await client.from('tasks').delete();
    assert.equal(noFilter.status, 400);
    assert.equal(noFilter.error?.code, 'filter_required');
    const anon = new PostgrestClient(`${base}/${d.pid}/rest`, { headers: { Authorization: `Bearer ${d.keys.all}` } });
    const anonRead = await anon.from('tasks').select('*');
    assert.deepEqual(anonRead.data, [], 'anonymous callers see nothing under owner = $auth.id');
    const badKey = new PostgrestClient(`${base}/${d.pid}/rest`, { headers: { Authorization: `Bearer ${'0'.repeat(64)}` } });
    const denied = await badKey.from('tasks').select('*');
    assert.equal(denied.status, 401);
  });
});
