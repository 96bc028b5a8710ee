// The client key of the per-IP limits (the failed-login throttle and the email rate limit): one
// helper, so that both group addresses alike.
import { isIPv4, isIPv6 } from 'node:net';

/**
 * An IPv4 address as is (also when written IPv4-mapped, `::ffff:a.b.c.d`, as a dual-stack socket
 * reports IPv4 clients); an IPv6 address by its /64, the smallest block one subscriber usually gets,
 * so rotating addresses inside it does not help. Any spelling of one address gives one key. Anything
 * else (not an IP address) is its own key.
 */
export function ipKey(ip: string): string {
  const address = ip.replace(/%.*$/, ''); // a zone index names the local interface, not the client
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return ip;
  const g = ipv6Groups(address);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff].join('.');
  return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a trailing dotted quad converted). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string?];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((x) => parseInt(x, 16));
}
