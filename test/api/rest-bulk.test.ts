// Writes with explicit ids on PostgreSQL: concurrent requests take turns before moving a table's id
// sequence, so that none sets it back below another's ids.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEngines, type TestApp } from '../support/app.ts';
import { dataPlane, type DataPlane } from '../support/data-plane.ts';

await describeEngines('rest passthrough bulk writes', (ctx, kind) => {
  let t: TestApp;
  let d: DataPlane;

  before(async () => {
    t = ctx();
    d = await dataPlane(t);
  });

  if (kind === 'postgres')
    test('PostgreSQL: requests with explicit ids take turns on the table before moving its id sequence', async () => {
      await d.createTable('turns', [{ name: 'n', type: 'integer' }]);
      const db = await t.engine.project(d.pid);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const holder = db.tx(async (tx) => {
        await tx.get('SELECT pg_advisory_xact_lock(hashtext(?))', [`baseplate:ids:${db.t('turns')}`]);
        await held;
      });
      let done = false;
      const insert = d.rest('POST', 'turns', { body: { id: 10, n: 1 } }).finally(() => (done = true));
      // not timed: the request must be seen waiting for the lock before it may finish
      for (;;) {
        assert.equal(done, false, 'the insert did not wait for the lock');
        const waiting = await db.get<{ n: number }>(`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
        if (Number(waiting!.n) > 0) break;
        await sleep(10);
      }
      release();
      await holder;
      assert.equal((await insert).status, 201);
      assert.deepEqual((await d.rest('POST', 'turns?select=id', { body: { n: 2 } })).body, [{ id: 11 }]);
    });
});
