// How the failed-login throttle and the email rate limit key their subjects: the client's IP key
// (IPv6 by /64, IPv4-mapped as IPv4, any spelling of one address alike) and the keyed digest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { ipKey } from '../../src/lib/client-ip.ts';
import { SecretBox } from '../../src/lib/secret-box.ts';
import { subjectDigest } from '../../src/lib/tokens.ts';

const KEYS: Array<[string, string]> = [
  ['198.51.100.7', '198.51.100.7'],
  ['::ffff:198.51.100.7', '198.51.100.7'],
  ['::ffff:c633:6407', '198.51.100.7'],
  ['0:0:0:0:0:ffff:198.51.100.7', '198.51.100.7'],
  ['2001:db8:1:1::1', '2001:db8:1:1::/64'],
  ['2001:0db8:0001:0001:dead:beef:0:1', '2001:db8:1:1::/64'],
  ['2001:db8:0:1:2:3:1.2.3.4', '2001:db8:0:1::/64'],
  ['2001:db8::1:2:3:1.2.3.4', '2001:db8:0:1::/64'],
  ['2001:db8::1.2.3.4', '2001:db8:0:0::/64'],
  ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  ['::', '0:0:0:0::/64'],
  ['not an address', 'not an address'],
];
for (const [ip, key] of KEYS) test(`ipKey(${ip}) = ${key}`, () => assert.equal(ipKey(ip), key));

test('SecretBox.mac: HMAC-SHA-256 under an HKDF key of the master key and context; the same for every box with that key', () => {
  const master = randomBytes(32);
  const mac = new SecretBox(master).mac('rate-limit subjects');
  const key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'baseplate mac: rate-limit subjects', 32));
  assert.equal(mac('a@example.com'), createHmac('sha256', key).update('a@example.com').digest('hex'));
  assert.equal(new SecretBox(Buffer.from(master)).mac('rate-limit subjects')('a@example.com'), mac('a@example.com'), 'every node with the key agrees');
  assert.notEqual(new SecretBox(randomBytes(32)).mac('rate-limit subjects')('a@example.com'), mac('a@example.com'));
  assert.notEqual(new SecretBox(master).mac('another context')('a@example.com'), mac('a@example.com'));
  assert.throws(() => new SecretBox(master).mac(''), TypeError);
});

test('subjectDigest joins its parts unambiguously before the keyed digest', () => {
  const digest = subjectDigest(new SecretBox(randomBytes(32)).mac('rate-limit subjects'));
  assert.match(digest('a@example.com', '198.51.100.7'), /^[0-9a-f]{64}$/);
  assert.notEqual(digest('a@example.com1', '98.51.100.7'), digest('a@example.com', '198.51.100.7'));
  assert.equal(digest('a@example.com', '198.51.100.7'), digest('a@example.com', '198.51.100.7'));
});
