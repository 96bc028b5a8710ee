// Values from outside an HTTP body (a function's context.db calls) meet the same text rules as a
// body's: no NUL, no unpaired surrogate, whatever the nesting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkValue } from '../../src/services/column-values.ts';

test('text and json values: NUL and unpaired surrogates refused with their reason; pairs and escaped text kept', () => {
  assert.deepEqual(checkValue('text', 'a\u0000b'), { ok: false, reason: 'nul_character' });
  for (const bad of ['a\uD800b', '\uDC00', 'x\uD83D', '\uDE00\uD83D'])
    assert.deepEqual(checkValue('text', bad), { ok: false, reason: 'unpaired_surrogate' }, JSON.stringify(bad));
  assert.deepEqual(checkValue('text', 'a\u{1F600}b'), { ok: true, value: 'a\u{1F600}b' });
  assert.deepEqual(checkValue('text', '\\ud800'), { ok: true, value: '\\ud800' }, 'a backslash and letters are text');
  assert.deepEqual(checkValue('json', { k: ['x', { deep: 'a\uD800' }] }), { ok: false, reason: 'unpaired_surrogate' });
  assert.deepEqual(checkValue('json', { ['k\uDFFF']: 1 }), { ok: false, reason: 'unpaired_surrogate' }, 'a key too');
  const fine = { k: ['\u{1F600}', '\\ud800'] };
  assert.deepEqual(checkValue('json', fine), { ok: true, value: fine });
});
