// A request reads its project's schema version, builds its statements for it, and runs them; the
// table's owner may change the table in between (another request, maybe on another node). A
// statement that no longer fits (a column gone or of another type, a prepared statement whose rows
// would change shape) is answered 503 write_conflict (schema_changed, with Retry-After), never a
// 500 (a guessed read, whose guard sees the change, takes the long way instead and is answered for
// the table as it is); the retry runs against the table as it is. The race is made certain here: the change is
// committed right after the request has read the schema, before it takes its store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEngines, expectError } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import type { Engine } from '../../src/storage/engine.ts';

/** Runs `change` once, the next time the engine hands out a project's data store. */
function changeBeforeNextStatement(engine: Engine, change: () => Promise<void>): void {
  const data = engine.data.bind(engine);
  engine.data = async (...args) => {
    engine.data = data;
    await change();
    return data(...args);
  };
}

await describeEngines('a table changed while a request runs', (ctx) => {
  test('reads, filters and writes naming a column dropped meanwhile answer 503 write_conflict; the retry is answered for the table as it is', async () => {
    const t = ctx();
    const d = await dataPlane(t);
    const table = await d.createTable('items', [{ name: 'x', type: 'integer' }, { name: 'y', type: 'text' }]);
    const alter = async (body: unknown) => {
      const res = await t.req('PATCH', `/projects/${d.pid}/tables/${table.id}`, { token: d.owner, body });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    const requests: [string, () => ReturnType<typeof d.rest>][] = [
      ['a read of the column', () => d.rest('GET', 'items?select=x,y&order=id')],
      ['a filter on it', () => d.rest('GET', 'items?x=eq.1&select=y')],
      ['an insert', () => d.rest('POST', 'items', { body: { x: 3, y: 'c' } })],
      ['an update', () => d.rest('PATCH', 'items?y=eq.a', { body: { x: 4 } })],
    ];
    for (const [what, send] of requests) {
      assert.equal((await d.rest('POST', 'items', { body: [{ x: 1, y: 'a' }, { x: 2, y: 'b' }] })).status, 201);
      for (let i = 0; i < 2; i++) assert.ok((await send()).status < 300, what); // (prepared, where the engine prepares)
      changeBeforeNextStatement(t.engine, () => alter({ drop_columns: ['x'] }));
      const raced = await send();
      // (a guessed read or insert, whose guard sees the change, takes the long way instead and is
      // answered for the table as it is; an update is never guessed)
      if (what === 'an update' || !(raced.status === 400 && raced.body.code === 'unknown_column')) {
        expectError(raced, 503, 'write_conflict');
        assert.equal(raced.body.details.reason, 'schema_changed', what);
        assert.ok(Number(raced.headers['retry-after']) >= 1, `${what}: Retry-After`);
      }
      const retried = await send();
      assert.ok(retried.status >= 400 && retried.status < 500, `${what}, retried: ${retried.status} ${JSON.stringify(retried.body)}`);
      await alter({ add_columns: [{ name: 'x', type: 'integer' }] });
    }
  });
});
