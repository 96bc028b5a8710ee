// Settings are validated once, with a message naming the setting and what it accepts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../src/config.ts';

test('SQLITE_OPEN_PROJECTS: unset or empty is the engine default (null), a whole number from 1 is taken, anything else refused', () => {
  assert.equal(loadConfig({}).sqliteOpenProjects, null);
  assert.equal(loadConfig({ SQLITE_OPEN_PROJECTS: '' }).sqliteOpenProjects, null);
  assert.equal(loadConfig({ SQLITE_OPEN_PROJECTS: '5000' }).sqliteOpenProjects, 5000);
  for (const bad of ['many', '-1', '1.5', '1e3', ' 10'])
    assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: bad }), { message: `SQLITE_OPEN_PROJECTS must be a whole number, got '${bad}'` });
  assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: '0' }), { message: 'SQLITE_OPEN_PROJECTS must be between 1 and 1000000, got 0' });
  assert.throws(() => loadConfig({ SQLITE_OPEN_PROJECTS: '1000001' }), { message: 'SQLITE_OPEN_PROJECTS must be between 1 and 1000000, got 1000001' });
});
