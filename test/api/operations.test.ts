// Operations: secrets never reach the logs, and /health tells when the database is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, uniqueEmail } from '../support/app.ts';
import { testEngines } from '../support/postgres.ts';

const { engines, skipReason } = await testEngines();

for (const kind of engines) {
  test(`[${kind}] tokens, keys and passwords never appear in the logs, even at trace level`, async () => {
    const lines: string[] = [];
    const t = await startTestApp(kind, { LOG_LEVEL: 'trace' }, { write: (l) => void lines.push(l) });
    try {
      const password = 'very secret password';
      const email = uniqueEmail('logs');
      const reg = await t.req('POST', '/auth/register', { body: { name: 'L', email, password } });
      const token = reg.body.token as string;
      await t.req('POST', '/auth/login', { body: { email, password: 'wrong password 123' } });
      const project = (await t.req('POST', '/projects', { token, body: { name: 'p' } })).body;
      await t.req('POST', `/projects/${project.id}/tables`, { token, body: { name: 'n', columns: [{ name: 'b', type: 'text' }] } });
      const key = (await t.req('POST', `/projects/${project.id}/keys`, { token, body: { name: 'k', permissions: ['select'] } })).body.key as string;
      const user = (await t.req('POST', `/${project.id}/auth/register`, { body: { email: uniqueEmail('eu'), password } })).body.token as string;
      await t.req('GET', `/${project.id}/rest/n`, { headers: { authorization: `Bearer ${key}`, 'x-user-token': user } });
      await t.req('GET', `/${project.id}/rest/n`, { headers: { authorization: `Bearer ${key.slice(0, 63)}0` } });
      await t.req('PATCH', '/auth/me', { token, body: { password: 'another secret pass', current_password: password } });
      const all = lines.join('');
      assert.ok(all.length > 0, 'something was logged');
      for (const secret of [token, key, user, password, 'another secret pass', 'wrong password 123']) {
        assert.ok(!all.includes(secret), `a secret leaked into the logs: ${secret.slice(0, 6)}…`);
      }
    } finally {
      await t.close();
    }
  });

  test(`[${kind}] GET /health answers 503 once the database is unreachable`, async () => {
    const t = await startTestApp(kind);
    assert.equal((await t.req('GET', '/health')).status, 200);
    await t.engine.close();
    const res = await t.req('GET', '/health');
    assert.equal(res.status, 503);
    assert.deepEqual(res.body, { status: 'unavailable' });
    // the engine is already closed; close the rest without it
    await t.app.close();
    await t.close().catch(() => undefined);
  });
}
if (skipReason) test('operations [postgres]', { skip: skipReason }, () => undefined);
