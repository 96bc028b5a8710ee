// Projects, keys and policies are listed in creation order, even when two are created within one
// millisecond or the clock steps back between them: a creation takes a time strictly after the
// latest in its own list (services/creation-time.ts). Before, such ties fell to the random ids,
// and a policy created second was sometimes listed first. On every engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, registerAccount, createProject, type TestApp } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';

const ms = (iso: string) => Date.parse(iso);

/** Creates three things with the clock stepped a minute back after the first; returns what the list shows. */
async function stepBack<T extends { created_at: string }>(t: TestApp, create: (i: number) => Promise<T>) {
  const first = await create(0);
  t.clock.advance(-60_000);
  try {
    const later = [await create(1), await create(2)];
    return [first, ...later];
  } finally {
    t.clock.advance(60_000);
  }
}

function assertAfterEachOther(made: { created_at: string }[]) {
  assert.equal(ms(made[1]!.created_at), ms(made[0]!.created_at) + 1, 'the clock stepped back: 1 ms after the latest');
  assert.equal(ms(made[2]!.created_at), ms(made[1]!.created_at) + 1);
}

await describeEngines('creation order', (ctx) => {
  test('projects: listed in creation order when the clock steps back; another owner’s list keeps its own times', async () => {
    const t = ctx();
    const a = await registerAccount(t);
    const b = await registerAccount(t);
    const made = await stepBack(t, async (i) => {
      const res = await t.req('POST', '/projects', { token: a.token, body: { name: `p${i}` } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.updated_at, res.body.created_at);
      return res.body as { id: string; created_at: string };
    });
    assertAfterEachOther(made);
    const list = (await t.req('GET', '/projects', { token: a.token })).body as { id: string; created_at: string }[];
    assert.deepEqual(list.map((p) => [p.id, p.created_at]), made.map((p) => [p.id, p.created_at]));
    t.clock.advance(-60_000);
    const other = await createProject(t, b.token, 'theirs');
    t.clock.advance(60_000);
    const theirs = (await t.req('GET', `/projects/${other.id}`, { token: b.token })).body;
    assert.ok(ms(theirs.created_at) < ms(made[0]!.created_at) - 30_000, 'not bumped by another owner’s projects');
  });

  test('keys: listed in creation order when the clock steps back', async () => {
    const t = ctx();
    const owner = await registerAccount(t);
    const p = await createProject(t, owner.token, 'keys');
    const made = await stepBack(t, async (i) => {
      const res = await t.req('POST', `/projects/${p.id}/keys`, { token: owner.token, body: { name: `k${i}`, permissions: ['select'] } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body as { key_id: string; created_at: string };
    });
    assertAfterEachOther(made);
    const list = (await t.req('GET', `/projects/${p.id}/keys`, { token: owner.token })).body as { key_id: string; created_at: string }[];
    assert.deepEqual(list.map((k) => [k.key_id, k.created_at]), made.map((k) => [k.key_id, k.created_at]));
  });

  test('policies: listed in creation order when the clock steps back; another table’s list keeps its own times', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const docs = await d.createTable('docs', [{ name: 'n', type: 'integer' }]);
    const notes = await d.createTable('notes', [{ name: 'n', type: 'integer' }]);
    const made = await stepBack(t, async (i) => {
      const res = await d.policy(docs.id, 'SELECT', `n = ${i}`, { name: `p${i}` });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body as { policy_id: string; created_at: string };
    });
    assertAfterEachOther(made);
    const list = (await t.req('GET', `/projects/${d.pid}/tables/${docs.id}/rls-policies`, { token: d.owner })).body as { policy_id: string; created_at: string }[];
    assert.deepEqual(list.map((p) => [p.policy_id, p.created_at]), made.map((p) => [p.policy_id, p.created_at]));
    t.clock.advance(-60_000);
    const other = await d.policy(notes.id, 'SELECT', 'n = 1');
    t.clock.advance(60_000);
    assert.ok(ms(other.body.created_at) < ms(made[0]!.created_at) - 30_000, 'not bumped by another table’s policies');
  });

  test('many created back to back keep their order', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const docs = await d.createTable('docs', [{ name: 'n', type: 'integer' }]);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await d.policy(docs.id, 'SELECT', `n = ${i}`, { name: `p${i}` })).body.policy_id);
    const list = (await t.req('GET', `/projects/${d.pid}/tables/${docs.id}/rls-policies`, { token: d.owner })).body as { policy_id: string; created_at: string }[];
    assert.deepEqual(list.map((p) => p.policy_id), ids);
    for (let i = 1; i < list.length; i++) assert.ok(ms(list[i]!.created_at) > ms(list[i - 1]!.created_at));
  });
});
