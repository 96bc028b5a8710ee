// SSRF guard for outbound connections to tenant-configured hosts (the project SMTP host).
// Tenants must not be able to point the service at loopback, the private network, cloud
// metadata endpoints or other reserved space. Names are checked when saved, and again at
// send time against every address DNS returns; the caller then connects to the returned
// address (not the name) so a second, rebinding lookup cannot swap in a private address.
import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';

export type HostKind = 'name' | 'ipv4' | 'ipv6';
export type HostRejectReason = 'invalid_host' | 'single_label' | 'localhost' | 'private_address' | 'unresolvable';

export class HostRejected extends Error {
  constructor(
    readonly reason: HostRejectReason,
    message: string,
  ) {
    super(message);
    this.name = 'HostRejected';
  }
}

export interface GuardOptions {
  /** Development/test escape hatch (EMAIL_ALLOW_PRIVATE_HOSTS): private, loopback and localhost pass; syntax rules still apply. */
  allowPrivate?: boolean;
}

/** One-method port for DNS, so tests can substitute answers without mocking the network. */
export interface Resolver {
  /** All addresses, v4 and v6. */
  lookup(host: string): Promise<string[]>;
}

export const systemResolver: Resolver = {
  async lookup(host: string): Promise<string[]> {
    const answers = await lookup(host, { all: true, verbatim: true });
    return answers.map((a) => a.address);
  },
};

const LABEL_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
// A last label that is a number makes inet_aton-style parsers (and the WHATWG URL parser)
// read the whole name as an IPv4 address: 127.1, 0x7f.0.0.1, 2130706433, 0177.0.0.1.
const NUMERIC_LABEL_RE = /^(?:\d+|0x[0-9a-f]*)$/;
// Only resolvable through a local/site resolver, so they can only ever mean an internal host.
const PRIVATE_SUFFIXES = ['local', 'internal', 'localdomain', 'home.arpa'];

// IPv4 special-purpose blocks that are not globally routable unicast (IANA registry + multicast/class E).
const V4_NON_PUBLIC: ReadonlyArray<readonly [number, number]> = (
  [
    ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
    ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
    ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
  ] as const
).map(([base, prefix]) => [parseIPv4(base)!, prefix] as const);

/** Strict dotted quad; null for anything else. Leading zeros are refused because inet_aton reads them as octal. */
function parseIPv4(s: string): number | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  let n = 0;
  for (const part of m.slice(1)) {
    if (part.length > 1 && part.startsWith('0')) return null;
    const v = Number(part);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

/** Eight 16-bit groups, or null. Zone ids are refused: they name an interface, i.e. a link-local target. */
function parseIPv6(s: string): number[] | null {
  if (s.includes('%') || isIP(s) !== 6) return null;
  let head = s;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  const last = s.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseIPv4(last);
    if (v4 === null) return null;
    tail = [Math.floor(v4 / 0x10000), v4 % 0x10000];
    head = s.slice(0, lastColon + 1);
    if (!head.endsWith('::')) head = head.slice(0, -1);
  }
  const halves = head.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): number[] =>
    part === '' ? [] : part.split(':').map((h) => (/^[0-9a-f]{1,4}$/i.test(h) ? parseInt(h, 16) : NaN));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const explicit = left.length + right.length + tail.length;
  if ([...left, ...right].some(Number.isNaN)) return null;
  if (halves.length === 2 ? explicit > 7 : explicit !== 8) return null;
  return [...left, ...new Array<number>(8 - explicit).fill(0), ...right, ...tail];
}

function isPublicV4(n: number): boolean {
  return !V4_NON_PUBLIC.some(([base, prefix]) => {
    const size = 2 ** (32 - prefix);
    return Math.floor(n / size) === Math.floor(base / size);
  });
}

function isPublicV6(g: number[]): boolean {
  const embedded = (hi: number, lo: number) => isPublicV4(hi * 0x10000 + lo);
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  // ::/96 (IPv4-compatible, includes :: and ::1) and ::ffff:0:0/96 (IPv4-mapped) reach the embedded IPv4.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0 || g5 === 0xffff)) return embedded(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b) {
    // 64:ff9b::/96 well-known NAT64 prefix translates to the embedded IPv4; 64:ff9b:1::/48 is local-use NAT64.
    return g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && embedded(g6, g7);
  }
  // Everything outside 2000::/3 (ULA, link-local, site-local, multicast, 100::/64 discard, ...) is not global unicast.
  if ((g0 & 0xe000) !== 0x2000) return false;
  if (g0 === 0x2002) return embedded(g1, g2); // 6to4 relays to the embedded IPv4
  if (g0 === 0x2001 && g1 < 0x0200) return false; // 2001::/23 IETF protocol assignments, incl. Teredo 2001::/32
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return false; // 3fff::/20 documentation (RFC 9637)
  return true;
}

/** true when the IPv4/IPv6 address (textual, no brackets, no zone id) is globally routable unicast; false for non-addresses. */
export function isPublicAddress(ip: string): boolean {
  const v4 = parseIPv4(ip);
  if (v4 !== null) return isPublicV4(v4);
  const v6 = parseIPv6(ip.toLowerCase());
  return v6 !== null && isPublicV6(v6);
}

function show(host: string): string {
  return JSON.stringify(host.length > 80 ? `${host.slice(0, 80)}…` : host);
}

/**
 * Save-time check: syntax, and literal addresses must be public. Returns the normalised host
 * (lower-case, no trailing dot, IPv6 without brackets) and its kind. Throws HostRejected.
 */
export function checkHost(host: string, opts: GuardOptions = {}): { host: string; kind: HostKind } {
  const invalid = (why: string) => new HostRejected('invalid_host', `host ${show(host)} is not valid: ${why}`);
  // Checked before lower-casing: toLowerCase maps some non-ASCII (U+212A KELVIN SIGN) onto ASCII letters.
  if (typeof host !== 'string' || host.length === 0 || host.length > 300 || !/^[\x21-\x7e]+$/.test(host)) {
    throw invalid('expected a host name or IP address in ASCII (punycode for international names)');
  }
  const lower = host.toLowerCase();
  const bracketed = lower.startsWith('[') && lower.endsWith(']');
  const bare = bracketed ? lower.slice(1, -1) : lower;
  const version = isIP(bare);
  if (bracketed && version !== 6) throw invalid('brackets are only for IPv6 addresses');

  if (version === 4 || version === 6) {
    const kind: HostKind = version === 4 ? 'ipv4' : 'ipv6';
    const parsed = version === 4 ? parseIPv4(bare) : parseIPv6(bare);
    if (parsed === null) throw invalid('malformed IP address (zone ids and leading zeros are not accepted)');
    if (!opts.allowPrivate && !isPublicAddress(bare)) {
      throw new HostRejected('private_address', `host ${show(host)} is a private or reserved address`);
    }
    return { host: bare, kind };
  }

  const name = bare.endsWith('.') ? bare.slice(0, -1) : bare;
  if (name.length === 0 || name.length > 253) throw invalid('a host name is 1 to 253 characters');
  const labels = name.split('.');
  if (!labels.every((l) => LABEL_RE.test(l))) {
    throw invalid('each label is 1 to 63 of a-z, 0-9 and "-", not starting or ending with "-"');
  }
  if (NUMERIC_LABEL_RE.test(labels[labels.length - 1]!)) throw invalid('not a dotted-quad IPv4 address or a host name');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    if (opts.allowPrivate) return { host: name, kind: 'name' };
    throw new HostRejected('localhost', `host ${show(host)} is localhost`);
  }
  if (labels.length === 1) throw new HostRejected('single_label', `host ${show(host)} must be a fully qualified name`);
  if (!opts.allowPrivate && PRIVATE_SUFFIXES.some((s) => name === s || name.endsWith(`.${s}`))) {
    throw new HostRejected('private_address', `host ${show(host)} is in a private-use domain`);
  }
  return { host: name, kind: 'name' };
}

/**
 * Send-time check: checkHost, then resolve (literal IPs are not resolved) and require every
 * address public (unless allowPrivate). Returns the address to connect to (the first one).
 * DNS failure or no address -> HostRejected('unresolvable').
 */
export async function resolvePublicHost(
  host: string,
  resolver: Resolver,
  opts: GuardOptions = {},
): Promise<{ host: string; address: string }> {
  const checked = checkHost(host, opts);
  if (checked.kind !== 'name') return { host: checked.host, address: checked.host };
  const unresolvable = () => new HostRejected('unresolvable', `host ${show(checked.host)} could not be resolved`);
  let addresses: string[];
  try {
    addresses = await resolver.lookup(checked.host);
  } catch {
    throw unresolvable();
  }
  if (!Array.isArray(addresses) || addresses.length === 0) throw unresolvable();
  for (const address of addresses) {
    if (typeof address !== 'string' || isIP(address) === 0) throw unresolvable();
    // Every address, not just the first: a mixed answer is a rebinding/round-robin way to reach inside.
    // The address itself stays out of the message so tenants cannot map the internal network.
    if (!opts.allowPrivate && !isPublicAddress(address)) {
      throw new HostRejected('private_address', `host ${show(checked.host)} resolves to a private or reserved address`);
    }
  }
  return { host: checked.host, address: addresses[0]! };
}
