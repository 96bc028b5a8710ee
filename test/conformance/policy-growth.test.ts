// Nesting must cost linearly: each level of a construct adds the same amount of SQL text and the
// same amount of plan, on both engines. A template that copies an operand (instead of binding it
// once) or a planner that inlines a bound operand back into each use doubles the work per level,
// and a 4,000-character policy could then stall the database.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testEngines } from '../support/postgres.js';
import { openEngine } from './policy-harness.js';

/** [type, wrapper around X of that type, the test that ends the expression] */
const WRAPPERS: Array<[string, string, string]> = [
  ['number', 'FLOOR(X * 1.5)', 'X > 0'],
  ['number', '(X + 0.5)', 'X > 0'],
  ['number', '(X - price)', 'X > 0'],
  ['number', '(X / 2.5)', 'X > 0'],
  ['number', 'ROUND(X * 1.0, 2)', 'X > 0'],
  ['number', 'GREATEST(X, price)', 'X > 0'],
  ['number', 'COALESCE(X, price)', 'X > 0'],
  ['integer', '(X * 2)', 'X > 0'],
  ['integer', '(X + qty)', 'X > 0'],
  ['integer', '(- X)', 'X > 0'],
  ['integer', 'ABS(X)', 'X > 0'],
  ['integer', 'ROUND(X, 1)', 'X > 0'],
  ['integer', '(X % 7)', 'X > 0'],
  ['integer', "LOCATE('a', SUBSTRING(name, X))", 'X > 0'],
  ['integer', 'DATEDIFF(due + INTERVAL X DAY, due)', 'X > 0'],
  ['date', 'DATE_ADD(X, INTERVAL 1 DAY)', 'X > CURDATE()'],
  ['date', '(X + INTERVAL 1 MONTH)', 'X > CURDATE()'],
  ['date', 'DATE_SUB(X, INTERVAL qty YEAR)', 'X > CURDATE()'],
  ['timestamp', '(X + INTERVAL 1 SECOND)', 'X > NOW()'],
  ['timestamp', 'DATE_ADD(X, INTERVAL qty MONTH)', 'X > NOW()'],
  ['integer', 'TIMESTAMPDIFF(MONTH, created_at + INTERVAL X DAY, NOW())', 'X > 0'],
  ['text', 'CONCAT(X, name)', "X = 'a'"],
  ['text', 'SUBSTRING(X, 2)', "X = 'a'"],
  ['text', 'LOWER(X)', "X = 'a'"],
  ['text', 'LEFT(X, 3)', "X = 'a'"],
  ['text', "REPLACE(X, 'a', 'b')", "X = 'a'"],
];
const BASE: Record<string, string> = { number: 'price', integer: 'qty', date: 'due', timestamp: 'created_at', text: 'name' };

function nest(wrapper: string, base: string, end: string, depth: number): string {
  let x = base;
  for (let i = 0; i < depth; i++) x = wrapper.replace('X', x);
  return end.replace('X', x);
}

/** the increments between consecutive depths stay the same (within `slack` for plan text) */
function assertLinear(sizes: number[], what: string, slack: number): void {
  const steps = sizes.slice(1).map((s, i) => s - sizes[i]!);
  const [first, last] = [steps[0]!, steps[steps.length - 1]!];
  assert.ok(last <= first * slack + 8, `${what} grows faster than linearly: sizes ${sizes.join(', ')}`);
}

const { engines } = await testEngines();
for (const name of engines) {
  test(`${name}: each nesting level adds the same SQL and plan`, async () => {
    const engine = await openEngine(name);
    try {
      for (const [type, wrapper, end] of WRAPPERS) {
        const exprs = [3, 4, 5, 6, 7].map((d) => nest(wrapper, BASE[type]!, end, d));
        const sqlSizes = exprs.map((e) => engine.compile(e, null, new Date()).sql.length);
        assertLinear(sqlSizes, `${name} SQL of ${wrapper}`, 1);
        const planSizes: number[] = [];
        for (const e of exprs) planSizes.push(await engine.planSize(e));
        assertLinear(planSizes, `${name} plan of ${wrapper}`, 1.2);
      }
    } finally {
      await engine.close();
    }
  });
}
