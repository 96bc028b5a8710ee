// PostgreSQL's instants, parsed from their text without Date in the common case (a UTC session):
// the same string as Date's toISOString, for every form the server sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { instant } from '../../src/storage/postgres/postgres-db.ts';

const pad = (n: number, w: number) => String(n).padStart(w, '0');

test('instant(text) is what new Date(text).toISOString() gives: UTC text with 0 to 6 fraction digits, other offsets, odd years', () => {
  const utcText = fc
    .record({ t: fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59) }), micros: fc.integer({ min: 0, max: 999_999 }), digits: fc.integer({ min: 0, max: 6 }) })
    .map(({ t, micros, digits }) => {
      const d = new Date(Math.floor(t / 1000) * 1000);
      const base = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
      // the server drops trailing zeros of the fraction
      const fraction = digits === 0 ? '' : `.${pad(micros, 6).slice(0, digits)}`.replace(/\.?0+$/, '');
      return `${base}${fraction}+00`;
    });
  fc.assert(fc.property(utcText, (text) => instant(text) === new Date(text).toISOString()), { numRuns: 2000, seed: 42 });
  for (const text of ['2026-11-27 01:02:03.12+05:30', '2026-11-27 01:02:03-08', '0099-01-01 00:00:00+00', '2026-11-27 01:02:03.123456+00:00'])
    assert.equal(instant(text), new Date(text).toISOString(), text);
});
