// Small pure helpers of the email path: the per-IP rate-limit key and the sender display name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ipKey } from '../../src/lib/client-ip.ts';
import { displayName } from '../../src/email/mailer.ts';

const KEYS: Array<[string, string]> = [
  ['203.0.113.7', '203.0.113.7'],
  ['::ffff:203.0.113.7', '203.0.113.7'],
  ['::FFFF:203.0.113.7', '203.0.113.7'],
  ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
  ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
  ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
  ['2001:DB8:0001:0002::', '2001:db8:1:2::/64'],
  ['2001:db8::1', '2001:db8:0:0::/64'],
  ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
  ['::1', '0:0:0:0::/64'],
];
for (const [ip, key] of KEYS) test(`ipKey(${ip}) = ${key}`, () => assert.equal(ipKey(ip), key));

const NAMES: Array<[string, string]> = [
  ['Example App', 'Example App'],
  ['', ''],
  ['A, B <x@y>', '"A, B <x@y>"'],
  ['Support: team', '"Support: team"'],
  ['Tom "T" \\ x', '"Tom \\"T\\" \\\\ x"'],
  ['Line\u2028break\u0000', 'Line break'],
  ['Ünïcode', '"Ünïcode"'],
];
for (const [name, out] of NAMES) test(`displayName(${JSON.stringify(name)}) = ${out}`, () => assert.equal(displayName(name), out));
