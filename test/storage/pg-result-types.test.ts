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
  for (const text of ['2026-11-27 01:02:03.12+05:30', '2026-11-27 01:02:03-08', '2026-11-27 01:02:03.123456+00:00'])
    assert.equal(instant(text), new Date(text).toISOString(), text);
});

test('instant(text) of years 0001-0999 is the year written, where Date reads a two-digit year as 19xx or 20xx', () => {
  for (const [text, iso] of [
    ['0001-03-04 05:06:07.008+00', '0001-03-04T05:06:07.008Z'],
    ['0049-12-31 23:59:59.999+00', '0049-12-31T23:59:59.999Z'],
    ['0099-01-01 00:00:00+00', '0099-01-01T00:00:00.000Z'],
    ['0999-06-15 12:00:00.5+00', '0999-06-15T12:00:00.500Z'],
  ])
    assert.equal(instant(text), iso, text);
});
