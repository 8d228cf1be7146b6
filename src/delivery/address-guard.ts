import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook may not reach when private webhooks are not allowed (SPEC section 4):
 * private, loopback, link-local (with cloud metadata), CGNAT, multicast, unspecified and reserved.
 * IPv4-mapped, IPv4-compatible, NAT64, 6to4 (2002::/16) and Teredo (2001::/32) IPv6 ranges are refused whole: they can carry any IPv4 address, and no
 * public webhook needs them. (The mapped range is checked by hand: BlockList applies an
 * ::ffff:0:0/96 rule to every plain IPv4 address too.)
 */
const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // Unspecified (::), loopback (::1) and the deprecated IPv4-compatible addresses (::a.b.c.d, such
  // as ::7f00:1 for 127.0.0.1), which some stacks still route to the IPv4 address they carry.
  ['::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fec0::', 10],
  ['2002::', 16],
  ['2001::', 32],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** The URL parser writes IPv6 in canonical form, where a mapped address always starts [::ffff:. */
function isIpv4Mapped(address: string): boolean {
  return new URL(`http://[${address}]/`).hostname.startsWith('[::ffff:');
}

export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) return isIpv4Mapped(address) || blocked.check(address, 'ipv6');
  return true;
}

type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Shape rules that hold whether or not private webhooks are allowed. */
function checkWebhookUrlShape(text: string): UrlCheck {
  if (text.length > 2048) return { ok: false, reason: 'is longer than 2048 characters' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'is not an absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'must use http or https' };
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials; the webhook secret authenticates deliveries' };
  return { ok: true, url };
}

/** Resolves the host and refuses it when it is, or resolves to, a blocked address. */
export async function checkWebhookUrl(text: string, allowPrivate: boolean): Promise<UrlCheck> {
  const shape = checkWebhookUrlShape(text);
  if (!shape.ok || allowPrivate) return shape;
  const host = shape.url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      return { ok: false, reason: `has a host (${host}) that does not resolve` };
    }
  }
  const bad = addresses.find(isBlockedAddress);
  if (bad !== undefined) return { ok: false, reason: `resolves to ${bad}, a private or reserved address` };
  return shape;
}
