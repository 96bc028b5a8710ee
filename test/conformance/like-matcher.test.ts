// The SQLite LIKE matcher (bp_like, used by policies and by the REST filters `ilike` and, without
// case folding, `like`): the same
// answers as a reference regular expression, and work linear in the value's length for every
// pattern within LIKE_PATTERN_MAX_CHARS (counted steps, never wall-clock time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { like, likeStats, registerSqliteFunctions } from '../../src/storage/sqlite/sqlite-functions.js';
import { LIKE_PATTERN_MAX_CHARS } from '../../src/lib/like-limits.js';
import { configureFuzz } from '../support/fuzz.js';

configureFuzz();

/** LIKE as an anchored regular expression over (lower-cased) text (backtracking: small inputs only) */
function reference(value: string, pattern: string, fold = true): boolean {
  const p = Array.from(fold ? pattern.toLowerCase() : pattern);
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\' && i + 1 < p.length) re += escape(p[++i]!);
    else if (c === '%') re += '[^]*';
    else if (c === '_') re += '.';
    else re += escape(c);
  }
  return new RegExp(`^${re}$`, 'su').test(fold ? value.toLowerCase() : value);
}
const escape = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

test('the matcher agrees with a reference regular expression', () => {
  const alphabet = fc.constantFrom('a', 'b', 'A', '%', '_', '\\', 'ß', 'İ', '😀', '\n', '.');
  const text = fc.array(alphabet, { maxLength: 12 }).map((a) => a.join(''));
  fc.assert(
    fc.property(text, text, (value, pattern) => {
      assert.equal(like(value, pattern), reference(value, pattern), `${JSON.stringify(value)} LIKE ${JSON.stringify(pattern)}`);
      assert.equal(like(value, pattern, false), reference(value, pattern, false), `${JSON.stringify(value)} LIKE ${JSON.stringify(pattern)} (case-sensitive)`);
    }),
    { numRuns: 20000 },
  );
});

test('without folding, case matters (the REST like); bp_like takes the flag as a third argument', () => {
  assert.equal(like('Write', 'w%', false), false);
  assert.equal(like('Write', 'W%', false), true);
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  const row = db.prepare(`SELECT bp_like('Write', 'w%') AS folded, bp_like('Write', 'w%', 0) AS exact`).get();
  assert.deepEqual(row, { folded: 1, exact: 0 });
});

test('leftmost matches of the middle segments are enough', () => {
  assert.equal(like('abcabcx', '%abc%x'), true);
  assert.equal(like('aab', '%a_b'), true);
  assert.equal(like('ab', '%a%b%'), true);
  assert.equal(like('aba', 'a%a'), true);
  assert.equal(like('a', 'a%a'), false);
  assert.equal(like('xaxbx', '%a_b%'), true);
  assert.equal(like('abab', '%_b'), true);
  assert.equal(like('x'.repeat(40) + 'y', `%${'_'.repeat(40)}y`), true);
  assert.equal(like('x'.repeat(39) + 'y', `%${'_'.repeat(40)}y`), false);
});

/** steps taken to match `value` against `pattern` */
function steps(value: string, pattern: string): number {
  likeStats.steps = 0;
  like(value, pattern);
  return likeStats.steps;
}

test('matching work is linear in the value, whatever the pattern within the bound', () => {
  const m = LIKE_PATTERN_MAX_CHARS;
  // the shapes that make backtracking matchers take O(value x pattern) steps
  const worst = [
    `%${'a'.repeat(m - 2)}b`, // the report: one long literal segment that almost matches everywhere
    `%${'a'.repeat(m - 3)}b%`,
    `%${'_'.repeat(m - 2)}b`,
    `%${'a_'.repeat((m - 2) / 2)}b`,
    `${'%a'.repeat((m - 2) / 2)}%b`,
    `%${'a'.repeat(m / 2 - 1)}%${'a'.repeat(m / 2 - 2)}b`,
    `${'_'.repeat(m - 1)}%`,
    'a'.repeat(m),
  ];
  for (const pattern of worst) {
    assert.ok(Array.from(pattern).length <= m, pattern);
    const n = 20000;
    const [small, large] = [steps('a'.repeat(n), pattern), steps('a'.repeat(2 * n), pattern)];
    // ceil(256 / 32) = 8 words per character, plus reading the value once
    assert.ok(small <= 10 * n + 4 * m, `${small} steps for ${n} characters with ${pattern.slice(0, 12)}...`);
    assert.ok(large <= 2 * small + 4 * m, `steps grew from ${small} to ${large} for twice the value with ${pattern.slice(0, 12)}...`);
  }
});

test('bp_like: a pattern longer than LIKE_PATTERN_MAX_CHARS characters is NULL (matches nothing)', () => {
  const db = new Database(':memory:');
  registerSqliteFunctions(db);
  try {
    const q = db.prepare('SELECT bp_like(?, ?) AS r').pluck();
    const atBound = '%'.repeat(LIKE_PATTERN_MAX_CHARS);
    assert.equal(q.get('x', atBound), 1);
    assert.equal(q.get('x', `${atBound}%`), null);
    // counted in characters, not UTF-16 units
    assert.equal(q.get('😀', '😀'.repeat(LIKE_PATTERN_MAX_CHARS - 1) + '%'), 0);
    assert.equal(q.get('😀', `${'😀'.repeat(LIKE_PATTERN_MAX_CHARS)}%`), null);
  } finally {
    db.close();
  }
});
