// Differential property for the out-of-range rule: extreme row values (±2^63, ±2^53, ±1e308,
// subnormals, dates at 0001-01-01 and 9999-12-31) pushed through integer, number and date
// arithmetic never make a query fail, and both engines give the same answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PolicyError, validatePolicy } from '../../src/policy-language/index.js';
import { testEngines } from '../support/postgres.js';
import { BASE_ROW } from './policy-cases.js';
import { COLUMNS, DEFAULT_AUTH, DEFAULT_NOW, openEngine, type Row } from './policy-harness.js';
import { configureFuzz } from '../support/fuzz.js';

configureFuzz();

const INT_LITERALS = ['0', '1', '-1', '2', '7', '86400', '2147483648', '9007199254740991', '9223372036854775807', '-9223372036854775808'];
const NUM_LITERALS = ['0.5', '2.5', '-3.75', '1e308', '-1e308', '1e-300', '2.2250738585072014e-308', '1e200'];
const DAY_UNITS = ['DAY', 'WEEK', 'MONTH', 'YEAR'];
const UNITS = ['SECOND', 'MINUTE', 'HOUR', ...DAY_UNITS];

const exprs = fc.letrec<{ int: string; num: string; date: string; ts: string }>((tie) => ({
  int: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('qty', 'owner_id', 'LENGTH(name)', 'DATEDIFF(due, created_at)', 'TIMESTAMPDIFF(SECOND, created_at, due)', ...INT_LITERALS),
    fc.tuple(tie('int'), fc.constantFrom('+', '-', '*', '%'), tie('int')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    tie('int').map((a) => `(- ${a})`),
    tie('int').map((a) => `ABS(${a})`),
    fc.tuple(tie('int'), tie('int')).map(([a, d]) => `ROUND(${a}, ${d})`),
  ),
  num: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('price', ...NUM_LITERALS),
    tie('int'),
    fc.tuple(tie('num'), fc.constantFrom('+', '-', '*', '/'), tie('num')).map(([a, o, b]) => `(${a} ${o} ${b})`),
    tie('num').map((a) => `(- ${a})`),
    tie('num').map((a) => `ROUND(${a})`),
    fc.tuple(tie('num'), tie('int')).map(([a, d]) => `ROUND(${a} * 1.0, ${d})`),
    tie('num').map((a) => `FLOOR(${a} * 1.0)`),
  ),
  date: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('due', 'CURDATE()'),
    tie('ts').map((t) => `DATE(${t})`),
    fc.tuple(tie('date'), fc.constantFrom('+', '-'), tie('int'), fc.constantFrom(...DAY_UNITS)).map(([d, o, n, u]) => `(${d} ${o} INTERVAL ${n} ${u})`),
    fc.tuple(tie('date'), tie('int'), fc.constantFrom(...DAY_UNITS)).map(([d, n, u]) => `DATE_SUB(${d}, INTERVAL ${n} ${u})`),
  ),
  ts: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('created_at', 'NOW()'),
    fc.tuple(tie('ts'), fc.constantFrom('+', '-'), tie('int'), fc.constantFrom(...UNITS)).map(([d, o, n, u]) => `(${d} ${o} INTERVAL ${n} ${u})`),
    fc.tuple(tie('date'), tie('int'), fc.constantFrom('SECOND', 'HOUR')).map(([d, n, u]) => `DATE_ADD(${d}, INTERVAL ${n} ${u})`),
  ),
}));

/** a boolean over two values of one type: NULL-ness, order, equality */
const predicate = fc.constantFrom('int', 'num', 'date', 'ts').chain((type) =>
  fc.tuple(exprs[type as 'int'], exprs[type as 'int'], fc.constantFrom('IS NULL', '>', '=', '<=')).map(([a, b, op]) => (op === 'IS NULL' ? `${a} IS NULL` : `${a} ${op} ${b}`)),
);

const SAFE = 2n ** 53n - 1n;
const intValue = fc.oneof(
  fc.constantFrom(0n, 1n, -1n, SAFE, -SAFE, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 31n, 3037000500n),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.bigInt({ min: -100000n, max: 100000n }),
);
const numValue = fc.oneof(
  fc.constantFrom(0, 1, -1, 1e308, -1e308, 1.7976931348623157e308, 2.2250738585072014e-308, 5e-324, 1e-200, 9.99),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const dateValue = fc.oneof(
  fc.constantFrom('0001-01-01', '0001-01-02', '0001-12-31', '9999-12-31', '9999-12-30', '9999-01-31', '2024-02-29'),
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
);
const tsValue = fc.oneof(
  fc.constantFrom('0001-01-01T00:00:00.000Z', '0001-01-01T00:00:00.500Z', '9999-12-31T23:59:59.999Z', '9999-12-31T00:00:00.000Z', '2024-03-10T08:30:00.000Z'),
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString()),
);
const row = fc.record({ qty: intValue, owner_id: intValue, price: numValue, due: dateValue, created_at: tsValue });

const { engines } = await testEngines();
test('differential: extreme values through arithmetic never fail and agree on SQLite and PostgreSQL', { skip: engines.length < 2 && 'PostgreSQL unavailable' }, async () => {
  const [sqlite, postgres] = await Promise.all([openEngine('sqlite'), openEngine('postgres')]);
  try {
    await fc.assert(
      fc.asyncProperty(predicate, row, async (src, values) => {
        try {
          validatePolicy(src, COLUMNS);
        } catch (e) {
          if (e instanceof PolicyError) return; // e.g. the nesting limit
          throw e;
        }
        const r: Row = { ...BASE_ROW, ...values };
        const a = await sqlite.matches(src, r, DEFAULT_AUTH, DEFAULT_NOW);
        const b = await postgres.matches(src, r, DEFAULT_AUTH, DEFAULT_NOW);
        assert.equal(a, b, `engines disagree on ${src}`);
      }),
      { numRuns: Number(process.env.POLICY_FUZZ_RUNS ?? 1500) },
    );
  } finally {
    await Promise.all([sqlite.close(), postgres.close()]);
  }
});
