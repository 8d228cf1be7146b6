import { isIPv4, isIPv6 } from 'node:net';

/**
 * The address the login throttle counts a client under. An IPv4 address is itself. An IPv6
 * address counts as its /64 prefix: a home, an office or a rented server is routinely given a
 * whole /64 and can answer from any of its 2^64 addresses, so counting exact addresses would give
 * one client an unlimited number of fresh ones. An IPv4 address written as IPv6 (::ffff:192.0.2.1,
 * as a dual-stack socket reports an IPv4 peer) counts as the IPv4 address, so one client is one
 * bucket whichever way its address reaches us. A zone (fe80::1%eth0) is dropped. Text that is no
 * IP address (only possible from a trusted proxy's X-Forwarded-For) is its own bucket, unchanged.
 */
export function addressBucket(address: string): string {
  const unzoned = address.replace(/%.*$/s, '');
  if (isIPv4(unzoned)) return unzoned;
  if (!isIPv6(unzoned)) return address;
  const groups = ipv6Groups(unzoned);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of an address node:net calls IPv6, with `::` expanded and a trailing dotted IPv4 part as two groups. */
function ipv6Groups(address: string): number[] {
  const parse = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((piece) => {
          if (!piece.includes('.')) return [parseInt(piece, 16)];
          const [a, b, c, d] = piece.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = address.indexOf('::');
  if (gap < 0) return parse(address);
  const head = parse(address.slice(0, gap));
  const tail = parse(address.slice(gap + 2));
  return [...head, ...Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
