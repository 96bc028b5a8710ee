// SSRF guard: address classification edges, host syntax, and send-time resolution with a fake resolver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkHost,
  HostRejected,
  isPublicAddress,
  resolvePublicHost,
  systemResolver,
  type HostKind,
  type HostRejectReason,
  type Resolver,
} from '../../src/lib/net-guard.ts';

function expectRejected(fn: () => unknown, reason: HostRejectReason, label: string) {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof HostRejected, `${label}: expected HostRejected, got ${String(e)}`);
    assert.equal(e.reason, reason, `${label}: reason (${e.message})`);
    return true;
  });
}

async function expectRejectedAsync(p: Promise<unknown>, reason: HostRejectReason, label: string) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof HostRejected, `${label}: expected HostRejected, got ${String(e)}`);
    assert.equal(e.reason, reason, `${label}: reason (${e.message})`);
    return true;
  });
}

const ADDRESSES: [string, boolean][] = [
  // IPv4: each reserved block with its edges
  ['8.8.8.8', true], ['1.1.1.1', true], ['0.0.0.0', false], ['0.255.255.255', false], ['1.0.0.0', true],
  ['9.255.255.255', true], ['10.0.0.0', false], ['10.255.255.255', false], ['11.0.0.0', true],
  ['100.63.255.255', true], ['100.64.0.0', false], ['100.127.255.255', false], ['100.128.0.0', true],
  ['126.255.255.255', true], ['127.0.0.1', false], ['127.255.255.255', false], ['128.0.0.0', true],
  ['169.253.255.255', true], ['169.254.0.0', false], ['169.254.169.254', false], ['169.255.0.0', true],
  ['172.15.255.255', true], ['172.16.0.0', false], ['172.31.255.255', false], ['172.32.0.0', true],
  ['191.255.255.255', true], ['192.0.0.0', false], ['192.0.0.255', false], ['192.0.1.0', true],
  ['192.0.2.0', false], ['192.0.2.255', false], ['192.0.3.0', true], ['192.88.98.255', true],
  ['192.88.99.1', false], ['192.88.100.0', true], ['192.167.255.255', true], ['192.168.0.0', false],
  ['192.168.255.255', false], ['192.169.0.0', true], ['198.17.255.255', true], ['198.18.0.0', false],
  ['198.19.255.255', false], ['198.20.0.0', true], ['198.51.99.255', true], ['198.51.100.0', false],
  ['198.51.100.255', false], ['198.51.101.0', true], ['203.0.112.255', true], ['203.0.113.0', false],
  ['203.0.113.255', false], ['203.0.114.0', true], ['223.255.255.255', true], ['224.0.0.0', false],
  ['239.255.255.255', false], ['240.0.0.0', false], ['255.255.255.255', false],
  // IPv4 spellings that are not strict dotted quads are never "public"
  ['127.1', false], ['1.2.3.04', false], ['2130706433', false], ['0x7f.0.0.1', false], ['8.8.8.8.', false],
  // IPv6 basics and non-2000::/3 space
  ['::', false], ['::1', false], ['0:0:0:0:0:0:0:1', false], ['2606:4700:4700::1111', true],
  ['2001:4860:4860::8888', true], ['2A00:1450:4001:81B::200E', true], ['1fff:ffff::1', false],
  ['4000::1', false], ['100::1', false], ['100::ffff:ffff:ffff:ffff', false],
  ['fc00::1', false], ['fd12:3456:789a::1', false], ['fe80::1', false], ['febf::1', false],
  ['fec0::1', false], ['ff02::1', false], ['ff0e::1', false],
  // IPv4-mapped / IPv4-compatible judge the embedded address
  ['::ffff:127.0.0.1', false], ['::FFFF:7F00:1', false], ['::ffff:10.1.2.3', false],
  ['::ffff:169.254.169.254', false], ['::ffff:8.8.8.8', true], ['::ffff:808:808', true],
  ['0:0:0:0:0:ffff:c0a8:0101', false], ['::127.0.0.1', false], ['::8.8.8.8', true], ['::ffff:0:8.8.8.8', false],
  // NAT64
  ['64:ff9b::8.8.8.8', true], ['64:ff9b::a00:1', false], ['64:ff9b::127.0.0.1', false],
  ['64:ff9b:1::8.8.8.8', false], ['64:ff9b:1:ffff::1', false],
  // 2001::/23, documentation, 6to4
  ['2001::1', false], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false], ['2001:1ff:ffff::1', false],
  ['2001:200::1', true], ['2001:db8::1', false], ['2001:db8:ffff::1', false], ['2001:db9::1', true],
  ['2002:0808:0808::1', true], ['2002:7f00:0001::1', false], ['2002:c0a8:0101::1', false], ['2002:a9fe:a9fe::', false],
  ['3fff::1', false], ['3fff:fff::1', false], ['3fff:1000::1', true],
  // not addresses at all
  ['', false], ['[::1]', false], ['fe80::1%eth0', false], ['2606:4700:4700::1111%1', false], ['example.com', false],
  ['1::2::3', false], [':::', false],
];

for (const [ip, expected] of ADDRESSES) {
  test(`isPublicAddress(${JSON.stringify(ip)}) = ${expected}`, () => {
    assert.equal(isPublicAddress(ip), expected);
  });
}

const long63 = 'a'.repeat(63);
// 4 labels of 63 + 3 dots = 255 > 253; trim to exactly 253
const name253 = `${long63}.${long63}.${long63}.${'b'.repeat(61)}`;

const ACCEPTED: [string, string, HostKind][] = [
  ['smtp.example.com', 'smtp.example.com', 'name'],
  ['SMTP.Example.COM', 'smtp.example.com', 'name'],
  ['smtp.example.com.', 'smtp.example.com', 'name'],
  ['mail-1.eu-west.example.co.uk', 'mail-1.eu-west.example.co.uk', 'name'],
  ['xn--bcher-kva.example', 'xn--bcher-kva.example', 'name'],
  ['123.example.com', '123.example.com', 'name'],
  ['0x7f.example.com', '0x7f.example.com', 'name'],
  [`${long63}.com`, `${long63}.com`, 'name'],
  [name253, name253, 'name'],
  [`${name253}.`, name253, 'name'],
  ['8.8.8.8', '8.8.8.8', 'ipv4'],
  ['2606:4700:4700::1111', '2606:4700:4700::1111', 'ipv6'],
  ['[2606:4700:4700::1111]', '2606:4700:4700::1111', 'ipv6'],
  ['[2A00:1450:4001:81B::200E]', '2a00:1450:4001:81b::200e', 'ipv6'],
  ['::ffff:8.8.8.8', '::ffff:8.8.8.8', 'ipv6'],
];

for (const [input, host, kind] of ACCEPTED) {
  test(`checkHost accepts ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input)}`, () => {
    assert.deepEqual(checkHost(input), { host, kind });
  });
}

const REJECTED: [string, HostRejectReason][] = [
  // syntax
  ['', 'invalid_host'], [' ', 'invalid_host'], ['smtp.example.com ', 'invalid_host'], ['smtp example.com', 'invalid_host'],
  ['smtp_1.example.com', 'invalid_host'], ['user@example.com', 'invalid_host'], ['example.com:25', 'invalid_host'],
  ['example.com/x', 'invalid_host'], ['exa\u0000mple.com', 'invalid_host'], ['bücher.example', 'invalid_host'],
  ['\u212Aelvin.example.com', 'invalid_host'], ['-smtp.example.com', 'invalid_host'], ['smtp-.example.com', 'invalid_host'],
  ['smtp..example.com', 'invalid_host'], ['.example.com', 'invalid_host'], ['example.com..', 'invalid_host'],
  ['.', 'invalid_host'], [`${'a'.repeat(64)}.com`, 'invalid_host'], [`${name253}x`, 'invalid_host'],
  [`${name253}x.`, 'invalid_host'], ['x'.repeat(1000), 'invalid_host'],
  // numeric spellings some resolvers read as IPv4
  ['127.1', 'invalid_host'], ['127.0.1', 'invalid_host'], ['0x7f.0.0.1', 'invalid_host'], ['0x7f000001', 'invalid_host'],
  ['2130706433', 'invalid_host'], ['017700000001', 'invalid_host'], ['0177.0.0.1', 'invalid_host'],
  ['1.2.3.04', 'invalid_host'], ['8.8.8.08', 'invalid_host'], ['256.1.1.1', 'invalid_host'], ['1.2.3.4.5', 'invalid_host'],
  ['8.8.8.8.', 'invalid_host'], ['example.0x1', 'invalid_host'], ['example.123', 'invalid_host'],
  // IPv6 syntax
  ['[::1', 'invalid_host'], ['::1]', 'invalid_host'], ['[8.8.8.8]', 'invalid_host'], ['[example.com]', 'invalid_host'],
  ['fe80::1%eth0', 'invalid_host'], ['[fe80::1%25eth0]', 'invalid_host'], ['[2606:4700:4700::1111%1]', 'invalid_host'],
  ['1::2::3', 'invalid_host'], ['[::1]:25', 'invalid_host'], ['::ffff:127.0.0.01', 'invalid_host'],
  // names that mean "this machine" or "inside"
  ['mailserver', 'single_label'], ['mailserver.', 'single_label'], ['com', 'single_label'],
  ['localhost', 'localhost'], ['LOCALHOST', 'localhost'], ['localhost.', 'localhost'], ['smtp.localhost', 'localhost'],
  ['printer.local', 'private_address'], ['metadata.google.internal', 'private_address'],
  ['box.localdomain', 'private_address'], ['nas.home.arpa', 'private_address'], ['home.arpa', 'private_address'],
  // literal private addresses
  ['127.0.0.1', 'private_address'], ['10.0.0.1', 'private_address'], ['169.254.169.254', 'private_address'],
  ['0.0.0.0', 'private_address'], ['255.255.255.255', 'private_address'], ['::1', 'private_address'],
  ['[::1]', 'private_address'], ['[::]', 'private_address'], ['::ffff:127.0.0.1', 'private_address'],
  ['[::ffff:7f00:1]', 'private_address'], ['[fd00::1]', 'private_address'], ['fe80::1', 'private_address'],
  ['[2002:7f00:1::]', 'private_address'], ['64:ff9b::10.0.0.1', 'private_address'],
];

for (const [input, reason] of REJECTED) {
  test(`checkHost rejects ${JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input)} as ${reason}`, () => {
    expectRejected(() => checkHost(input), reason, JSON.stringify(input));
  });
}

test('allowPrivate admits private, loopback and localhost but keeps the syntax rules', () => {
  const allow = { allowPrivate: true };
  assert.deepEqual(checkHost('localhost', allow), { host: 'localhost', kind: 'name' });
  assert.deepEqual(checkHost('LocalHost.', allow), { host: 'localhost', kind: 'name' });
  assert.deepEqual(checkHost('mail.localhost', allow), { host: 'mail.localhost', kind: 'name' });
  assert.deepEqual(checkHost('127.0.0.1', allow), { host: '127.0.0.1', kind: 'ipv4' });
  assert.deepEqual(checkHost('10.1.2.3', allow), { host: '10.1.2.3', kind: 'ipv4' });
  assert.deepEqual(checkHost('[::1]', allow), { host: '::1', kind: 'ipv6' });
  assert.deepEqual(checkHost('printer.local', allow), { host: 'printer.local', kind: 'name' });
  for (const bad of ['127.1', '2130706433', 'fe80::1%eth0', 'smtp_1.example.com', 'bücher.example', '[127.0.0.1]']) {
    expectRejected(() => checkHost(bad, allow), 'invalid_host', `allowPrivate ${bad}`);
  }
  expectRejected(() => checkHost('mailserver', allow), 'single_label', 'allowPrivate mailserver');
});

test('HostRejected is an Error with a reason and a bounded message', () => {
  try {
    checkHost(`${'a'.repeat(500)}`);
    assert.fail('expected a rejection');
  } catch (e) {
    assert.ok(e instanceof Error && e instanceof HostRejected);
    assert.equal(e.name, 'HostRejected');
    assert.equal(e.reason, 'invalid_host');
    assert.ok(e.message.length < 300, e.message);
  }
});

function fakeResolver(answers: Record<string, string[] | Error>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async lookup(host: string) {
      calls.push(host);
      const a = answers[host];
      if (a === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      if (a instanceof Error) throw a;
      return a;
    },
  };
}

test('resolvePublicHost: all public answers -> first address, resolved by normalised name', async () => {
  const r = fakeResolver({ 'smtp.example.com': ['2606:4700:4700::1111', '8.8.8.8', '1.1.1.1'] });
  assert.deepEqual(await resolvePublicHost('SMTP.example.com.', r), { host: 'smtp.example.com', address: '2606:4700:4700::1111' });
  assert.deepEqual(r.calls, ['smtp.example.com']);
});

test('resolvePublicHost: one private address among public ones -> private_address', async () => {
  for (const bad of ['10.0.0.5', '127.0.0.1', '169.254.169.254', '::1', '::ffff:192.168.1.1', 'fd00::5']) {
    const r = fakeResolver({ 'smtp.example.com': ['8.8.8.8', bad, '1.1.1.1'] });
    await expectRejectedAsync(resolvePublicHost('smtp.example.com', r), 'private_address', bad);
  }
});

test('resolvePublicHost: the rejection message does not reveal the internal address', async () => {
  const r = fakeResolver({ 'smtp.example.com': ['10.20.30.40'] });
  await assert.rejects(resolvePublicHost('smtp.example.com', r), (e: unknown) => {
    assert.ok(e instanceof HostRejected);
    assert.ok(!e.message.includes('10.20.30.40'), e.message);
    return true;
  });
});

test('resolvePublicHost: empty answer, failing resolver, or junk answer -> unresolvable', async () => {
  await expectRejectedAsync(resolvePublicHost('smtp.example.com', fakeResolver({ 'smtp.example.com': [] })), 'unresolvable', 'empty');
  await expectRejectedAsync(resolvePublicHost('smtp.example.com', fakeResolver({})), 'unresolvable', 'ENOTFOUND');
  const boom = fakeResolver({ 'smtp.example.com': new Error('SERVFAIL') });
  await expectRejectedAsync(resolvePublicHost('smtp.example.com', boom), 'unresolvable', 'throws');
  const junk = fakeResolver({ 'smtp.example.com': ['8.8.8.8', 'not-an-ip'] });
  await expectRejectedAsync(resolvePublicHost('smtp.example.com', junk), 'unresolvable', 'junk');
  const junkAllowed = fakeResolver({ 'smtp.example.com': ['not-an-ip'] });
  await expectRejectedAsync(resolvePublicHost('smtp.example.com', junkAllowed, { allowPrivate: true }), 'unresolvable', 'junk+allow');
});

test('resolvePublicHost: literal IPs are returned as-is and never resolved', async () => {
  const r = fakeResolver({});
  assert.deepEqual(await resolvePublicHost('8.8.8.8', r), { host: '8.8.8.8', address: '8.8.8.8' });
  assert.deepEqual(await resolvePublicHost('[2606:4700:4700::1111]', r), {
    host: '2606:4700:4700::1111',
    address: '2606:4700:4700::1111',
  });
  await expectRejectedAsync(resolvePublicHost('127.0.0.1', r), 'private_address', '127.0.0.1');
  assert.deepEqual(await resolvePublicHost('127.0.0.1', r, { allowPrivate: true }), { host: '127.0.0.1', address: '127.0.0.1' });
  assert.deepEqual(r.calls, []);
});

test('resolvePublicHost: save-time rejections happen before any lookup', async () => {
  const r = fakeResolver({ mailserver: ['8.8.8.8'], localhost: ['8.8.8.8'], '127.1': ['8.8.8.8'] });
  await expectRejectedAsync(resolvePublicHost('mailserver', r), 'single_label', 'mailserver');
  await expectRejectedAsync(resolvePublicHost('localhost', r), 'localhost', 'localhost');
  await expectRejectedAsync(resolvePublicHost('127.1', r, { allowPrivate: true }), 'invalid_host', '127.1');
  assert.deepEqual(r.calls, []);
});

test('resolvePublicHost with allowPrivate: private answers pass, failures still fail', async () => {
  const allow = { allowPrivate: true };
  const r = fakeResolver({ localhost: ['::1', '127.0.0.1'], 'mail.internal': ['10.0.0.7'] });
  assert.deepEqual(await resolvePublicHost('localhost', r, allow), { host: 'localhost', address: '::1' });
  assert.deepEqual(await resolvePublicHost('mail.internal', r, allow), { host: 'mail.internal', address: '10.0.0.7' });
  await expectRejectedAsync(resolvePublicHost('nowhere.example.com', r, allow), 'unresolvable', 'allow ENOTFOUND');
  await expectRejectedAsync(resolvePublicHost('x.example.com', fakeResolver({ 'x.example.com': [] }), allow), 'unresolvable', 'allow empty');
});

test('systemResolver: localhost resolves to loopback, which the guard refuses unless allowPrivate', async () => {
  const addresses = await systemResolver.lookup('localhost');
  assert.ok(addresses.length > 0);
  assert.ok(addresses.every((a) => !isPublicAddress(a)), addresses.join(','));
  const { host, address } = await resolvePublicHost('localhost', systemResolver, { allowPrivate: true });
  assert.equal(host, 'localhost');
  assert.ok(addresses.includes(address));
  await expectRejectedAsync(resolvePublicHost('localhost', systemResolver), 'localhost', 'system localhost');
});
