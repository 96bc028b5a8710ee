// The embedded engine keeps a bounded number of project files open and reopens evicted ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEngine } from '../../src/storage/sqlite/sqlite-engine.ts';

test('[sqlite] project files beyond the open limit are closed and reopened on demand, never mid-transaction', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bp-test-'));
  const engine = await SqliteEngine.open({ dataDir: dir, maxOpenProjects: 2 });
  try {
    const ids = ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'cccccccccccccccc'];
    for (const id of ids) await engine.createProjectStore(id);
    const first = await engine.project(ids[0]!);
    // a transaction on the first store stays usable while opening others would evict it
    await first.tx(async (tx) => {
      await engine.project(ids[1]!);
      await engine.project(ids[2]!);
      const row = await tx.get<{ n: number }>(`SELECT count(*) AS n FROM ${tx.t('_bp_tables')}`);
      assert.equal(Number(row!.n), 0);
    });
    for (const id of ids) {
      const db = await engine.project(id);
      assert.ok(await db.get(`SELECT count(*) AS n FROM ${db.t('_bp_tables')}`));
    }
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
