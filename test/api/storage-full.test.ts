// The embedded engine on a full disk: writes answer 507 storage_full, reads go on. SQLite answers
// SQLITE_FULL both for a write that fails with ENOSPC and for a file at its max_page_count, so a
// project file capped at its current size stands in for a full disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, expectError } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';
import type { SqliteDb } from '../../src/storage/sqlite/sqlite-db.ts';

test('[sqlite] a full disk answers writes with 507 storage_full; reads keep working', async () => {
  const t = await startTestApp('sqlite');
  try {
    const d = await dataPlane(t);
    await d.createTable('notes', [{ name: 'body', type: 'text' }]);
    assert.equal((await d.rest('POST', 'notes', { body: { body: 'before' } })).status, 201);
    assert.equal((await d.rest('GET', 'notes')).status, 200); // the key's last use is recorded now, not during the test

    const raw = ((await t.engine.project(d.pid)) as SqliteDb).raw;
    const pages = raw.pragma('page_count', { simple: true }) as number;
    raw.pragma(`max_page_count = ${pages}`);

    const single = await d.rest('POST', 'notes', { body: { body: 'x'.repeat(20000) } });
    const err = expectError(single, 507, 'storage_full');
    assert.equal(err.details, null);
    assert.match(String(single.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    // a bulk insert in one transaction: nothing of it is written
    const bulk = await d.rest('POST', 'notes', { body: Array.from({ length: 50 }, (_, i) => ({ body: `${i} ${'y'.repeat(2000)}` })) });
    expectError(bulk, 507, 'storage_full');

    const read = await d.rest('GET', 'notes?select=body');
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, [{ body: 'before' }]);
    assert.equal((await t.req('GET', '/health')).status, 200);
  } finally {
    await t.close();
  }
});
