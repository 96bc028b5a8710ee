// Every rejected expression throws PolicyError naming the offending part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyError, validatePolicy } from '../../src/policy-language/index.js';
import { COLUMNS } from './policy-harness.js';
import { POLICY_REJECTIONS } from './policy-rejections.js';

test('the rejection table is large enough', () => {
  assert.ok(POLICY_REJECTIONS.length >= 100, `${POLICY_REJECTIONS.length} rejections`);
});

for (const r of POLICY_REJECTIONS) {
  const label = r.expr.length > 80 ? `${r.expr.slice(0, 80)}... (${r.expr.length} chars)` : r.expr;
  test(`rejects: ${label}`, () => {
    let caught: unknown;
    try {
      validatePolicy(r.expr, COLUMNS);
    } catch (e) {
      caught = e;
    }
    assert.ok(caught instanceof PolicyError, `expected a PolicyError, got ${String(caught)}`);
    assert.equal(caught.offending, r.offending, `message: ${caught.message}`);
    if (r.position !== undefined) assert.equal(caught.position, r.position, `message: ${caught.message}`);
    assert.ok(caught.message.length > 0 && !caught.message.includes('\n'));
    // the message names the offending part (when it is printable)
    if (r.offending.trim() !== '' && !/[\u0000-\u001f]/.test(r.offending) && r.offending.length < 60) {
      assert.ok(caught.message.includes(r.offending), `message "${caught.message}" should name ${r.offending}`);
    }
  });
}
