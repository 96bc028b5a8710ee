// Coercion of value text to column types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBoolean, parseDate, parseInteger, parseNumber, parseTimestamp } from '../../src/rest-query/values.ts';

test('parseInteger', async (t) => {
  const cases: [string, ReturnType<typeof parseInteger>][] = [
    ['0', 0],
    ['-0', 0],
    ['+12', 12],
    [' 42 ', 42],
    ['007', 7],
    ['9007199254740991', 9007199254740991],
    ['-9007199254740991', -9007199254740991],
    ['9007199254740992', 'integer_out_of_range'],
    ['1'.repeat(400), 'integer_out_of_range'],
    ['', 'not_an_integer'],
    ['-', 'not_an_integer'],
    ['1.0', 'not_an_integer'],
    ['1e2', 'not_an_integer'],
    ['0x1f', 'not_an_integer'],
    ['1_000', 'not_an_integer'],
    ['١٢', 'not_an_integer'], // non-ASCII digits
    ['12abc', 'not_an_integer'],
    ['Infinity', 'not_an_integer'],
  ];
  for (const [input, want] of cases) await t.test(JSON.stringify(input), () => assert.equal(parseInteger(input), want));
});

test('parseNumber', async (t) => {
  const cases: [string, number | null][] = [
    ['1', 1],
    ['-1.25', -1.25],
    ['+.5', 0.5],
    ['5.', 5],
    ['1e3', 1000],
    ['1E-3', 0.001],
    ['-0', 0],
    [' 2.5 ', 2.5],
    ['1e-400', 0],
    ['1e400', null],
    ['NaN', null],
    ['Infinity', null],
    ['-Infinity', null],
    ['0x10', null],
    ['', null],
    ['.', null],
    ['e5', null],
    ['1e', null],
    ['1e+', null],
    ['1.2.3', null],
    ['1,5', null],
    ['--1', null],
  ];
  for (const [input, want] of cases) await t.test(JSON.stringify(input), () => assert.equal(parseNumber(input), want));
});

test('parseBoolean', async (t) => {
  const cases: [string, boolean | null][] = [
    ['true', true],
    ['TRUE', true],
    ['t', true],
    ['1', true],
    ['false', false],
    ['F', false],
    ['0', false],
    [' true ', true],
    ['yes', null],
    ['on', null],
    ['', null],
    ['2', null],
    ['truee', null],
  ];
  for (const [input, want] of cases) await t.test(JSON.stringify(input), () => assert.equal(parseBoolean(input), want));
});

test('parseDate', async (t) => {
  const cases: [string, string | null][] = [
    ['2024-01-31', '2024-01-31'],
    ['2024-02-29', '2024-02-29'],
    ['2000-02-29', '2000-02-29'],
    [' 1999-12-31 ', '1999-12-31'],
    ['0001-01-01', '0001-01-01'],
    ['9999-12-31', '9999-12-31'],
    ['1900-02-29', null],
    ['2023-02-29', null],
    ['2024-04-31', null],
    ['2024-13-01', null],
    ['2024-00-10', null],
    ['2024-01-00', null],
    ['0000-01-01', null],
    ['24-01-01', null],
    ['2024/01/01', null],
    ['2024-01-01T00:00:00Z', null],
    ['20240101', null],
    ['+2024-01-01', null],
    ['', null],
  ];
  for (const [input, want] of cases) await t.test(JSON.stringify(input), () => assert.equal(parseDate(input), want));
});

test('parseTimestamp', async (t) => {
  const cases: [string, string | null][] = [
    ['2024-01-02T03:04:05Z', '2024-01-02T03:04:05.000Z'],
    ['2024-01-02t03:04:05z', '2024-01-02T03:04:05.000Z'],
    ['2024-01-02T03:04:05', '2024-01-02T03:04:05.000Z'], // no offset: UTC
    ['2024-01-02 03:04:05', '2024-01-02T03:04:05.000Z'],
    ['2024-01-02T03:04Z', '2024-01-02T03:04:00.000Z'],
    ['2024-01-02', '2024-01-02T00:00:00.000Z'],
    ['2024-01-02T03:04:05.1Z', '2024-01-02T03:04:05.100Z'],
    ['2024-01-02T03:04:05.123456789Z', '2024-01-02T03:04:05.123Z'], // truncated
    ['2024-01-02T03:04:05,5Z', '2024-01-02T03:04:05.500Z'],
    ['2024-01-02T03:04:05+02:00', '2024-01-02T01:04:05.000Z'],
    ['2024-01-02T03:04:05-0530', '2024-01-02T08:34:05.000Z'],
    ['2024-01-02T03:04:05+02', '2024-01-02T01:04:05.000Z'],
    ['2024-01-01T00:30:00+01:00', '2023-12-31T23:30:00.000Z'],
    ['0099-06-01T00:00:00Z', '0099-06-01T00:00:00.000Z'], // two-digit years are not 19xx
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['9999-12-31T23:59:59-01:00', null], // normalises beyond year 9999
    ['0001-01-01T00:00:00+01:00', null],
    ['2024-01-02T24:00:00Z', null],
    ['2024-01-02T23:60:00Z', null],
    ['2024-01-02T23:59:60Z', null],
    ['2024-02-30T00:00:00Z', null],
    ['2024-01-02T03:04:05+16:00', null],
    ['2024-01-02T03:04:05+02:60', null],
    ['2024-01-02T03:04:05+2', null],
    ['2024-01-02T03:04:05ZZ', null],
    ['2024-01-02T03:04:05.Z', null],
    ['2024-01-02T3:04:05Z', null],
    ['2024-01-02T03:04:05 02:00', null],
    ['2024-01-02X03:04:05Z', null],
    ['2024-01-02T', null],
    ['now', null],
    ['1704164645', null],
    ['', null],
  ];
  for (const [input, want] of cases) await t.test(JSON.stringify(input), () => assert.equal(parseTimestamp(input), want));
});
