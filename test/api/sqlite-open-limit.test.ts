// The embedded engine keeps at most SQLITE_OPEN_PROJECTS project files open and closes the least
// recently used beyond it, which can be a file that a request of another project is still using
// (a sign-up across its password hash, a read between its statements). One tenant opening many
// projects must never make another tenant's request fail: the closed connection opens again at its
// next statement (sqlite-db.ts, Reopen). Storage-level cases: test/storage/sqlite-open.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, uniqueEmail } from '../support/app.ts';
import { dataPlane } from '../support/data-plane.ts';

test('[sqlite] with one open project file, requests of two projects interleaved (reads, writes, sign-ups) all succeed', async () => {
  const t = await startTestApp('sqlite', { SQLITE_OPEN_PROJECTS: '1' });
  try {
    const projects = [];
    for (let i = 0; i < 2; i++) {
      const d = await dataPlane(t);
      const table = await d.createTable('notes', [{ name: 'body', type: 'text' }]);
      assert.equal((await d.policy(table.id, 'SELECT', 'true')).status, 201);
      assert.equal((await d.policy(table.id, 'INSERT', 'true')).status, 201);
      projects.push(d);
    }
    const requests = [];
    let writes = 0;
    for (let i = 0; i < 120; i++) {
      const d = projects[i % 2]!;
      if (i % 10 === 0) requests.push(t.req('POST', `/${d.pid}/auth/register`, { body: { email: uniqueEmail('held'), password: 'end user password' } }));
      else if (i % 3 === 0 && ++writes) requests.push(d.rest('POST', 'notes', { body: { body: `n${i}` } }));
      else requests.push(d.rest('GET', 'notes?select=body&order=id'));
    }
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    assert.deepEqual(statuses.filter((s) => ![200, 201].includes(s)), [], 'every request answered');
    assert.ok((t.engine.stats().sqlite?.openProjects ?? 0) <= 1, 'the limit held');
    const written = await Promise.all(projects.map(async (d) => (await d.rest('GET', 'notes?select=body')).body.length));
    assert.equal(written[0]! + written[1]!, writes, 'every answered write is there');
  } finally {
    await t.close();
  }
});
